// The load report an hf-llm worker gives routers: the JSON body of `GET /kiln/v1/load` and
// the `kiln-load` header of every OpenAI answer (docs/llm-routing.md lists the fields). The
// worker writes it (worker/llm/llm-service.ts) and the gateway reads it
// (gateway/llm-replica-load.ts): declared once so the two sides cannot drift apart. The
// import is type-only, so the gateway loads no engine code.

import type { EngineLoad } from '../../llm/serving/engine-api.ts';

/** The engine's load as it reports it, plus what the worker's HTTP layer holds. */
export interface LlmLoadReport extends EngineLoad {
  /** Requests the worker's HTTP layer holds, queued or streaming. */
  readonly inflight: number;
}
