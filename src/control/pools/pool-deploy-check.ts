// What a deploy onto a worker pool (`kiln deploy --pool NAME`, config.pool) must satisfy,
// checked before anything is stored: the pool exists and belongs to the endpoint's team, and
// the model is one a pool worker can hold among others — not an hf-llm model (its engine and
// KV cache are sized for a process of their own), no dynamic batching (pool models run
// request by request), no autoscaling or replica count (the pool's workers are the capacity).

import { kilnError } from '../../core/errors.ts';
import type { ModelFormat } from '../../registry/formats/artifact-file.ts';
import type { EndpointConfig } from '../../store/serving-records.ts';
import type { Store } from '../../store/store.ts';

export async function checkPoolDeploy(
  store: Store,
  deploy: {
    readonly config: EndpointConfig;
    readonly format: ModelFormat;
    readonly team: string;
    readonly replicas: number | undefined;
  },
): Promise<void> {
  const name = deploy.config.pool;
  if (name === undefined) return;
  const pool = await store.getPool(name);
  if (pool === null) throw kilnError('KILN_POOL_NOT_FOUND', { pool: name });
  const refuse = (reason: string): never => {
    throw kilnError('KILN_VALIDATION_FAILED', { reason });
  };
  if (pool.team !== deploy.team)
    refuse(
      `pool ${name} belongs to team ${pool.team}, the endpoint to team ${deploy.team}: use a pool of team ${deploy.team} (kiln pools create NAME … --team ${deploy.team})`,
    );
  if (deploy.format === 'hf-llm')
    refuse(
      `an hf-llm model cannot run on a pool (its engine and KV cache need a worker of their own): deploy it without --pool`,
    );
  if (deploy.config.llm !== undefined) refuse('llm settings do not apply on a pool');
  if (deploy.config.batching != null)
    refuse(
      `pool ${name} runs each model's requests one by one: drop the batching settings, or deploy without --pool`,
    );
  if (deploy.config.autoscale !== undefined)
    refuse(`an endpoint on pool ${name} is served by the pool's workers: it has no autoscaling`);
  if (deploy.replicas !== undefined && deploy.replicas !== 1)
    refuse(
      `an endpoint on pool ${name} is served by the pool's workers (${pool.workers}): give no replica count`,
    );
}
