// The control-plane calls the traffic e2e tests make (deploy, traffic policy, rollback,
// rollouts, history), in one place so every test speaks the API the same way. Each call
// fails the test with the answer's body unless it got the status it expects.

import assert from 'node:assert/strict';
import { call, type JsonResponse } from './platform.ts';

export interface VersionWeight {
  readonly model: string;
  readonly version: number;
  readonly weight: number;
}

export interface RolloutBody {
  readonly id: string;
  readonly endpoint: string;
  readonly state: string;
  readonly stepIndex: number;
  readonly steps: readonly number[];
  readonly reason: string | null;
  readonly lastAnalysis: unknown;
}

/** What the rollout routes answer: the record, its percent now, the live analysis. */
interface RolloutView {
  readonly rollout: RolloutBody;
  readonly percent: number;
  readonly analysis: unknown;
}

export interface TrafficEventBody {
  readonly action: string;
  readonly actor: string;
  readonly reason: string;
  readonly detail: unknown;
}

function expect(response: JsonResponse, statuses: readonly number[], what: string): unknown {
  assert.ok(
    statuses.includes(response.status),
    `${what}: ${response.status} ${JSON.stringify(response.body)}`,
  );
  return response.body;
}

export class TrafficApi {
  constructor(
    readonly url: string,
    readonly headers: Record<string, string> = {},
  ) {}

  /** PUT /api/v1/endpoints/{name}: a deploy (replace) of `model:version`. */
  async deploy(endpoint: string, model: string, version: number, replicas = 1): Promise<unknown> {
    const response = await call(
      this.url,
      'PUT',
      `/api/v1/endpoints/${endpoint}`,
      { model, version, replicas },
      this.headers,
    );
    return expect(response, [200, 201], `deploy ${endpoint} ${model}:${version}`);
  }

  async endpoint(endpoint: string): Promise<{ model: string; version: number; status: unknown }> {
    const response = await call(
      this.url,
      'GET',
      `/api/v1/endpoints/${endpoint}`,
      undefined,
      this.headers,
    );
    return expect(response, [200], `endpoint ${endpoint}`) as {
      model: string;
      version: number;
      status: unknown;
    };
  }

  /** PUT /api/v1/endpoints/{name}/traffic: a manual split (`extra`: salt, keyPath, …). */
  async setPolicy(
    endpoint: string,
    versions: readonly VersionWeight[],
    extra: Record<string, unknown> = {},
  ): Promise<unknown> {
    const response = await call(
      this.url,
      'PUT',
      `/api/v1/endpoints/${endpoint}/traffic`,
      { versions, shadows: [], reason: 'e2e test', ...extra },
      this.headers,
    );
    return expect(response, [200], `traffic set ${endpoint}`);
  }

  async traffic(endpoint: string): Promise<unknown> {
    const response = await call(
      this.url,
      'GET',
      `/api/v1/endpoints/${endpoint}/traffic`,
      undefined,
      this.headers,
    );
    return expect(response, [200], `traffic ${endpoint}`);
  }

  /** POST /api/v1/endpoints/{name}/rollback. */
  async rollback(endpoint: string, reason = 'e2e test'): Promise<unknown> {
    const response = await call(
      this.url,
      'POST',
      `/api/v1/endpoints/${endpoint}/rollback`,
      { reason },
      this.headers,
    );
    return expect(response, [200], `rollback ${endpoint}`);
  }

  /** POST /api/v1/endpoints/{name}/rollout: a canary of `model:version` (routes-rollouts.ts). */
  async startRollout(endpoint: string, body: Record<string, unknown>): Promise<RolloutBody> {
    const response = await call(
      this.url,
      'POST',
      `/api/v1/endpoints/${endpoint}/rollout`,
      body,
      this.headers,
    );
    return (expect(response, [201], `rollout start ${endpoint}`) as RolloutView).rollout;
  }

  async rollout(id: string): Promise<RolloutBody> {
    const response = await call(this.url, 'GET', `/api/v1/rollouts/${id}`, undefined, this.headers);
    return (expect(response, [200], `rollout ${id}`) as RolloutView).rollout;
  }

  /** PUT /api/v1/models/{m}/versions/{v}/golden (golden-set-input.ts). */
  async setGolden(model: string, version: number, golden: unknown): Promise<unknown> {
    const response = await call(
      this.url,
      'PUT',
      `/api/v1/models/${model}/versions/${version}/golden`,
      golden,
      this.headers,
    );
    return expect(response, [200, 201], `golden set ${model}:${version}`);
  }

  /** GET /api/v1/endpoints/{name}/history: newest first. */
  async history(endpoint: string): Promise<readonly TrafficEventBody[]> {
    const response = await call(
      this.url,
      'GET',
      `/api/v1/endpoints/${endpoint}/history`,
      undefined,
      this.headers,
    );
    const body = expect(response, [200], `history ${endpoint}`) as { items: TrafficEventBody[] };
    return body.items;
  }

  /** Polls the rollout until `done` holds; fails naming the last state after `timeoutMs`. */
  async waitForRollout(
    id: string,
    done: (rollout: RolloutBody) => boolean,
    what: string,
    timeoutMs = 180_000,
  ): Promise<RolloutBody> {
    const deadline = Date.now() + timeoutMs;
    let last: RolloutBody | undefined;
    while (Date.now() < deadline) {
      last = await this.rollout(id);
      if (done(last)) return last;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.fail(`timed out waiting for ${what}; rollout now: ${JSON.stringify(last)}`);
  }
}

/** Polls until the gateway says the endpoint is ready (a replica routed); 120 s at most. */
export async function waitForGatewayReady(
  gatewayUrl: string,
  endpoint: string,
  headers: Record<string, string> = {},
): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const response = await fetch(`${gatewayUrl}/v2/models/${endpoint}/ready`, { headers });
    await response.arrayBuffer();
    if (response.status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`${endpoint} never became ready at the gateway`);
}
