// The versions a traffic policy names, checked against the registry as a deploy checks its
// one version: each exists and is not deleted (404), is trusted under the signing policy,
// has a format Kiln serves (422), and speaks the endpoint's protocol — an hf-llm version
// answers the OpenAI API, every other format v2, and one endpoint's callers speak one.

import { kilnError } from '../../core/errors.ts';
import type { Registry } from '../../registry/registry.ts';
import { servableFormats } from '../../runtimes/load-runtime.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import { versionKey, type TrafficPolicy } from '../../store/traffic-records.ts';

export async function checkPolicyVersions(
  registry: Registry,
  endpoint: EndpointRecord,
  policy: TrafficPolicy,
): Promise<void> {
  const stable = await registry.store.getVersion(endpoint.model, endpoint.version, {
    includeDeleted: true,
  });
  const llm = stable?.format === 'hf-llm';
  const problems: string[] = [];
  for (const ref of [...policy.versions, ...policy.shadows]) {
    const { version } = await registry.trustedVersion(ref.model, ref.version);
    if (!servableFormats.includes(version.format)) {
      throw kilnError('KILN_FORMAT_NOT_SERVABLE', { format: version.format });
    }
    if ((version.format === 'hf-llm') !== llm) {
      problems.push(
        `${versionKey(ref)} is ${version.format}, endpoint ${endpoint.name} serves ` +
          `${stable?.format ?? 'another format'}: one speaks the OpenAI API, the other v2`,
      );
    }
  }
  if (problems.length > 0) {
    throw kilnError('KILN_TRAFFIC_POLICY_INVALID', {
      endpoint: endpoint.name,
      reason: problems.join('; '),
    });
  }
}
