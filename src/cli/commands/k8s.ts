// `kiln k8s render ENDPOINT`: the Kubernetes objects of an endpoint's stable revision as
// multi-document YAML, for teams that apply manifests themselves (GitOps) instead of running
// the control plane's Kubernetes backend. The endpoint and its version are read through the
// API like every other command; the rendering is the backend's own (pure) renderer, so what
// is printed is what the backend would apply (docs/kubernetes.md).

import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { Endpoint } from '../api-types.ts';
import { withClient } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { apiPath } from '../http-client.ts';
import { writeOut } from '../output.ts';
import { isKilnError } from '../../core/errors.ts';
import type { ModelVersion } from '../../registry/types.ts';

interface RenderOptions {
  readonly namespace: string;
  readonly image?: string;
  readonly controlUrl?: string;
}

/** The image `npm run build` + the Dockerfile make of this checkout: kiln:<version>. */
function defaultImage(): string {
  const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
  return `kiln:${(JSON.parse(text) as { version: string }).version}`;
}

export function registerK8sCommands(program: Command): void {
  const k8s = program.command('k8s').description('Kubernetes: render the objects Kiln applies');
  k8s
    .command('render')
    .description("print an endpoint's Kubernetes objects as YAML (for kubectl apply / GitOps)")
    .argument('<endpoint>', 'endpoint name')
    .option('--namespace <ns>', 'namespace of the objects', 'kiln')
    .option('--image <image>', 'the Kiln image the workers run (default: kiln:<version>)')
    .option(
      '--control-url <url>',
      "the control plane's URL as pods reach it (default: http://kiln-control.<ns>.svc:8080)",
    )
    .action(async (name: string, options: RenderOptions, command: Command) => {
      if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(options.namespace))
        throw usageError(`invalid --namespace ${options.namespace}: a DNS-1123 label`);
      const { endpoint, version } = await withClient(command, async (client) => {
        const endpoint = await client.get<Endpoint>(apiPath('endpoints', name));
        const version = await client.get<ModelVersion>(
          apiPath('models', endpoint.model, 'versions', endpoint.version),
        );
        return { endpoint, version };
      });
      if (endpoint.config.pool !== undefined)
        throw usageError(
          `endpoint ${name} is served by worker pool ${endpoint.config.pool}, not by replicas of its own: nothing to render`,
        );
      const cluster = {
        namespace: options.namespace,
        image: options.image ?? defaultImage(),
        controlUrl: options.controlUrl ?? `http://kiln-control.${options.namespace}.svc:8080`,
      };
      // Imported here, not at the top: @kubernetes/client-node (the YAML) takes half a second
      // to load, which no other command should pay.
      const { kubeYaml } = await import('../../control/backends/kubernetes/kube-yaml.ts');
      const { renderRevision } = await import('../../control/backends/kubernetes/render.ts');
      const { revisionRenderInput } =
        await import('../../control/backends/kubernetes/revision-render-input.ts');
      try {
        writeOut(kubeYaml(renderRevision(revisionRenderInput(endpoint, version, cluster))));
      } catch (error) {
        if (!isKilnError(error)) throw error;
        throw new CliError(error.code, error.message, { hint: error.hint, status: error.status });
      }
    });
}
