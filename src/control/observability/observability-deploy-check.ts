// At deploy (issue 15, D), when the version's schema is known (declared): a prediction-log
// redaction rule must name a field the version has — an input, a feature (the model's feature
// names), or `outputs.NAME` — and the quality settings' `output` one of its outputs. A rule naming nothing would silently redact nothing — a typo in `ssn`
// would log every social security number — so it is refused, naming the rule. Without a
// schema the gateway counts the rules that match nothing
// (kiln_gateway_prediction_log_unmatched_redactions_total) and logs each once.

import { kilnError } from '../../core/errors.ts';
import {
  redactableFields,
  rulesNamingNothing,
} from '../../observability/prediction-log/redact-record.ts';
import type { ModelVersion } from '../../registry/types.ts';
import type { ObservabilityConfig } from '../../store/observability-config.ts';

export function checkObservabilityFields(
  endpoint: string,
  observability: ObservabilityConfig | undefined,
  version: Pick<ModelVersion, 'schema' | 'formatInfo'>,
): void {
  const schema = version.schema;
  if (schema === null) return;
  const output = observability?.quality?.output ?? null;
  if (output !== null && !schema.outputs.some((o) => o.name === output)) {
    throw kilnError('KILN_OBSERVABILITY_INVALID', {
      endpoint,
      reason: `quality: output ${output} is not an output of the version (its outputs: ${schema.outputs.map((o) => o.name).join(', ')})`,
    });
  }
  const rules = observability?.predictionLog?.redact ?? [];
  if (rules.length === 0) return;
  const names = (version.formatInfo as { featureNames?: unknown }).featureNames;
  const features = Array.isArray(names)
    ? names.filter((n): n is string => typeof n === 'string')
    : [];
  const fields = redactableFields(
    schema.inputs.map((i) => i.name),
    schema.outputs.map((o) => o.name),
    features,
  );
  const nothing = rulesNamingNothing(rules, fields);
  if (nothing.length === 0) return;
  const known = [...fields].slice(0, 20).join(', ');
  throw kilnError('KILN_OBSERVABILITY_INVALID', {
    endpoint,
    reason: `predictionLog: redact names ${nothing.join(', ')}, which the version does not have (its fields: ${known}; parameters.NAME for request parameters)`,
  });
}
