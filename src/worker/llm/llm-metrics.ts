// The LLM series of a worker's /metrics (its WorkerMetrics registry). Two kinds:
//  - measured here, per request: time to first token, inter-token latency, requests by finish
//    reason, queue-full sheds, slow-reader aborts, client cancels;
//  - read from the engine at scrape time (`refresh`): its cumulative token, prefix-cache and
//    preemption counters, and the running / waiting / paused / KV-block gauges.
// Tokens/s is rate(kiln_llm_*_tokens_total); the prefix-cache hit rate is
// kiln_llm_prefix_cache_hit_tokens_total ÷ kiln_llm_prefix_cache_queried_tokens_total.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { EngineStats, LlmEngine } from '../../llm/serving/engine-api.ts';

const latencyBuckets = [
  0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
];

export class LlmMetrics {
  readonly ttft: Histogram;
  readonly itl: Histogram;
  readonly finished: Counter<'finish_reason'>;
  readonly queueFull: Counter;
  readonly slowReaderAborts: Counter;
  readonly clientCancels: Counter;
  readonly pausedStreams: Gauge;
  readonly #engineCounters: readonly (readonly [Counter, (s: EngineStats) => number])[];
  readonly #engineGauges: readonly (readonly [Gauge, (s: EngineStats) => number])[];

  constructor(registry: Registry) {
    const registers = [registry];
    this.ttft = new Histogram({
      name: 'kiln_llm_time_to_first_token_seconds',
      help: 'Time from a request arriving to its first output token, per choice, in seconds',
      buckets: latencyBuckets,
      registers,
    });
    this.itl = new Histogram({
      name: 'kiln_llm_inter_token_latency_seconds',
      help: 'Time between successive output tokens of a choice, in seconds',
      buckets: latencyBuckets,
      registers,
    });
    this.finished = new Counter({
      name: 'kiln_llm_requests_finished_total',
      help: 'Choices (engine requests) finished, by OpenAI finish reason (stop, length) or error',
      labelNames: ['finish_reason'],
      registers,
    });
    this.queueFull = new Counter({
      name: 'kiln_llm_queue_full_total',
      help: 'OpenAI requests refused with 429 because the engine queue was full',
      registers,
    });
    this.slowReaderAborts = new Counter({
      name: 'kiln_llm_slow_reader_aborts_total',
      help: 'Streams ended because their client read nothing for slowReaderTimeoutMs while paused',
      registers,
    });
    this.clientCancels = new Counter({
      name: 'kiln_llm_client_cancels_total',
      help: 'OpenAI requests cancelled because the client went away before the answer was done',
      registers,
    });
    this.pausedStreams = new Gauge({
      name: 'kiln_llm_paused_streams',
      help: 'Streams whose sequences are paused now because their client reads slowly',
      registers,
    });
    const counter = (name: string, help: string): Counter => new Counter({ name, help, registers });
    const gauge = (name: string, help: string): Gauge => new Gauge({ name, help, registers });
    this.#engineCounters = [
      [
        counter(
          'kiln_llm_prompt_tokens_total',
          'Prompt tokens computed or taken from the prefix cache',
        ),
        (s) => s.promptTokensTotal,
      ],
      [
        counter('kiln_llm_generation_tokens_total', 'Output tokens generated'),
        (s) => s.generationTokensTotal,
      ],
      [
        counter(
          'kiln_llm_prefix_cache_queried_tokens_total',
          'Prompt tokens looked up in the prefix cache',
        ),
        (s) => s.prefixQueriedTokensTotal,
      ],
      [
        counter(
          'kiln_llm_prefix_cache_hit_tokens_total',
          'Prompt tokens found in the prefix cache',
        ),
        (s) => s.prefixHitTokensTotal,
      ],
      [
        counter(
          'kiln_llm_preemptions_total',
          'Sequences preempted (blocks freed, recomputed later)',
        ),
        (s) => s.preemptionsTotal,
      ],
      [counter('kiln_llm_engine_steps_total', 'Engine steps run'), (s) => s.stepsTotal],
      [
        counter(
          'kiln_llm_paused_evictions_total',
          'Paused sequences preempted or ended past the paused-block budget',
        ),
        (s) => s.pausedEvictionsTotal,
      ],
    ];
    this.#engineGauges = [
      [gauge('kiln_llm_running_sequences', 'Sequences in the running batch'), (s) => s.running],
      [gauge('kiln_llm_waiting_sequences', 'Sequences waiting to be admitted'), (s) => s.waiting],
      [gauge('kiln_llm_paused_sequences', 'Sequences paused by backpressure'), (s) => s.paused],
      [gauge('kiln_llm_kv_blocks_used', 'KV cache blocks in use'), (s) => s.kvBlocksUsed],
      [gauge('kiln_llm_kv_blocks_total', 'KV cache blocks in all'), (s) => s.kvBlocksTotal],
    ];
  }

  /** Copies the engine's counters and gauges into the registry; call before a scrape. */
  async refresh(engine: LlmEngine): Promise<void> {
    const stats = await engine.stats();
    for (const [metric, read] of this.#engineCounters) {
      // The engine keeps the totals: mirror them (a counter only ever goes up here too).
      metric.reset();
      metric.inc(read(stats));
    }
    for (const [metric, read] of this.#engineGauges) metric.set(read(stats));
  }
}
