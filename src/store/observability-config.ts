// Per-endpoint observability settings (issue 15): tracing, drift and skew, the prediction log,
// outcomes (model quality) and SLOs. Stored in EndpointConfig.observability; control-plane and
// gateway settings, not part of the worker revision (changing them restarts no replica).
// Each part is owned by one area; the control plane checks the whole object at deploy and on
// `PUT /api/v1/endpoints/{e}/observability` (KILN_OBSERVABILITY_INVALID naming the field).

/** OpenTelemetry head sampling for this endpoint's requests (src/observability/tracing/). */
export interface TracingConfig {
  /** Share of new traces sampled, 0..1 (a caller's sampled `traceparent` is always followed). */
  readonly sampleRate: number;
}

/** Drift and training-serving skew (src/observability/drift/). */
export interface DriftConfig {
  /** Collect input/output sketches on the workers (default true once `drift` is set). */
  readonly enabled: boolean;
  /** The slice's name in reports (`country`); null: overall only. */
  readonly sliceKey: string | null;
  /** Where the slice value is in the JSON body (caller-key.ts syntax); the `kiln-slice` header wins. */
  readonly slicePath: string | null;
  /** Length of one drift window (sketches are merged per window), ms. */
  readonly windowMs: number;
  /** Share of requests sketched, (0, 1] (the gateway draws per request); default 1. */
  readonly sampleRate: number;
  /**
   * Most requests one gateway marks per second for this endpoint (a token bucket, burst one
   * second's worth), default 200: sketching costs the worker microseconds a request, and
   * PSI/KS need hundreds of rows a window, not every request. null: no limit.
   */
  readonly maxRequestsPerSecond: number | null;
}

/** Sampled request/response log to rotating local JSONL files (src/observability/prediction-log/). */
export interface PredictionLogConfig {
  /** Share of requests logged, 0..1. */
  readonly sampleRate: number;
  /** Fields dropped or hashed before a record is written (the field must exist in the schema). */
  readonly redact: readonly RedactionRule[];
  /** A file rotates at this size; at most maxFiles are kept per endpoint. */
  readonly maxFileBytes: number;
  readonly maxFiles: number;
}

export interface RedactionRule {
  /** An input (or feature) name of the request, or `outputs.NAME`. */
  readonly field: string;
  readonly action: 'drop' | 'hash';
}

/** True outcomes reported later and joined to predictions (src/observability/quality/). */
export interface QualityConfig {
  readonly task: 'classification' | 'regression';
  /** The output holding the prediction (score/probability or value); null: the first. */
  readonly output: string | null;
  /** Classification: a score >= threshold predicts the positive class. */
  readonly threshold: number;
  /** Predictions wait for their outcome this long, then are dropped from the join, ms. */
  readonly joinWindowMs: number;
  /** Slice for quality reports (same syntax as DriftConfig); null: overall only. */
  readonly sliceKey: string | null;
  readonly slicePath: string | null;
}

/** Service-level objectives evaluated by the control plane (src/observability/slo/). */
export interface SloConfig {
  /** Share of requests answered without a server error, e.g. 0.999. */
  readonly availability: number | null;
  /** p99 latency objective: `latencyTarget` of requests within `latencyMs`. */
  readonly latencyMs: number | null;
  readonly latencyTarget: number | null;
  /** Highest PSI any feature or output may reach before an alert. */
  readonly driftPsiCeiling: number | null;
  /** Webhooks alerts are POSTed to (retried with backoff). */
  readonly webhooks: readonly string[];
}

export interface ObservabilityConfig {
  readonly tracing?: TracingConfig;
  readonly drift?: DriftConfig;
  readonly predictionLog?: PredictionLogConfig;
  readonly quality?: QualityConfig;
  readonly slo?: SloConfig;
}
