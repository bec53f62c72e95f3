// An endpoint's observability settings changed in place (`GET/PUT/DELETE
// /api/v1/endpoints/{e}/observability`, `kiln observe show|set|clear`): the settings are
// checked as a deploy checks them (resolveObservabilityConfig, KILN_OBSERVABILITY_INVALID
// naming the field) and written into EndpointConfig.observability, nothing else of the
// endpoint changed. They are not part of the worker revision (serving-defaults.ts), so no
// replica restarts; the reconciler pass that follows publishes the routing snapshot the
// gateways read them from (trace sampling, slice extraction, prediction log).

import { KilnError, kilnError } from '../../core/errors.ts';
import type { ObservabilityConfig } from '../../store/observability-config.ts';
import type { Store } from '../../store/store.ts';
import { rewriteEndpointConfig } from '../autoscale/endpoint-config-write.ts';
import { deployObservability } from '../endpoints.ts';

export const observabilityParts = ['tracing', 'drift', 'predictionLog', 'quality', 'slo'] as const;
export type ObservabilityPart = (typeof observabilityParts)[number];

/** What the routes answer: the settings in force, `{}` when none is set. */
export interface EndpointObservabilityView {
  readonly endpoint: string;
  readonly observability: ObservabilityConfig;
}

export class EndpointObservability {
  constructor(
    private readonly store: Store,
    /** A reconcile pass: publishes the routing snapshot; resolves when it has run. */
    private readonly republish: () => Promise<void>,
  ) {}

  async get(name: string): Promise<EndpointObservabilityView> {
    const endpoint = await this.store.getEndpoint(name);
    if (endpoint === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
    return { endpoint: name, observability: endpoint.config.observability ?? {} };
  }

  /** Replaces the settings whole with `input` (each part checked and completed). */
  async set(name: string, input: unknown): Promise<EndpointObservabilityView> {
    const observability = deployObservability(name, input) ?? {};
    await this.write(name, (config) => ({ ...config, observability }));
    return this.get(name);
  }

  /** Takes one part off (`part`), or every part. */
  async clear(name: string, part?: ObservabilityPart): Promise<EndpointObservabilityView> {
    await this.write(name, ({ observability, ...config }) => {
      if (part === undefined || observability === undefined) return config;
      const { [part]: _dropped, ...rest } = observability;
      return Object.keys(rest).length === 0 ? config : { ...config, observability: rest };
    });
    return this.get(name);
  }

  private async write(
    name: string,
    change: Parameters<typeof rewriteEndpointConfig>[2],
  ): Promise<void> {
    try {
      await rewriteEndpointConfig(this.store, name, change);
    } catch (error) {
      // The write helper speaks of replica counts (autoscaling's); say what happened here.
      if (error instanceof KilnError && error.code === 'KILN_SCALE_CONFLICT') {
        throw kilnError('KILN_OBSERVABILITY_CONFLICT', {
          endpoint: name,
          reason: 'the endpoint was redeployed meanwhile; try again',
        });
      }
      throw error;
    }
    await this.republish();
  }
}
