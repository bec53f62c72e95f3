// The one error registry. Every error Kiln reports to a user has a stable code, an HTTP
// status, a message template and a retryable flag. docs/errors.md lists the same codes; a
// test keeps the two in step.
//
// Templates use {name} placeholders filled from the params object. Expected outcomes inside
// the platform are values; a KilnError is what crosses the API boundary.

export interface ErrorSpec {
  readonly status: number;
  readonly retryable: boolean;
  readonly template: string;
  readonly hint?: string;
}

export const errorRegistry = {
  // --- requests ---
  KILN_INVALID_JSON: {
    status: 400,
    retryable: false,
    template: 'request body is not valid JSON: {reason}',
  },
  KILN_VALIDATION_FAILED: {
    status: 400,
    retryable: false,
    template: 'invalid request: {reason}',
  },
  KILN_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    retryable: false,
    template: 'unsupported content type {contentType}; expected {expected}',
  },
  KILN_ROUTE_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'no such route: {method} {url}',
  },
  KILN_PAYLOAD_TOO_LARGE: {
    status: 413,
    retryable: false,
    template: 'payload of {size} bytes exceeds the limit of {limit} bytes',
    hint: 'raise the limit with `kiln up --max-upload-bytes N` (or KILN_MAX_UPLOAD_BYTES)',
  },
  // --- names ---
  KILN_INVALID_NAME: {
    status: 400,
    retryable: false,
    template: 'invalid {kind} name {name}: {reason}',
  },
  // --- models and versions ---
  KILN_MODEL_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'model {model} does not exist',
    hint: 'list models with `kiln models list`',
  },
  KILN_MODEL_EXISTS: {
    status: 409,
    retryable: false,
    template: 'model {model} already exists',
  },
  KILN_VERSION_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'model {model} has no version {version}',
    hint: 'list versions with `kiln models versions MODEL`',
  },
  KILN_ALIAS_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'model {model} has no alias {alias}',
  },
  KILN_VERSION_DELETED: {
    status: 409,
    retryable: false,
    template: 'version {version} of model {model} is deleted',
  },
  KILN_VERSION_IN_USE: {
    status: 409,
    retryable: false,
    template: 'version {version} of model {model} is in use by {users}',
    hint: 'move or delete those aliases first',
  },
  KILN_STORE_BUSY: {
    status: 503,
    retryable: true,
    template: 'the store is busy: {reason}',
  },
  KILN_STORE_UNAVAILABLE: {
    status: 503,
    retryable: true,
    template: 'the store cannot be reached: {reason}',
    hint: 'check the store URL (--store / KILN_STORE_URL), that the server runs and that the role may connect',
  },
  KILN_STORE_SCHEMA_NEWER: {
    status: 500,
    retryable: false,
    template: 'the store schema is at version {current} but this Kiln knows only up to {latest}',
    hint: 'upgrade Kiln: an older release must not write to a newer schema',
  },
  KILN_LEADER_FENCED: {
    status: 409,
    retryable: false,
    template:
      'this control plane lost the leader lease (held epoch {epoch}, now {current}); its write was refused',
  },
  KILN_KUBERNETES_UNAVAILABLE: {
    status: 503,
    retryable: true,
    template: 'the Kubernetes backend cannot start: {reason}',
    hint: 'check the kubeconfig (KUBECONFIG, ~/.kube/config or the pod service account), that the namespace exists (--kube-namespace) and the rights its user has there',
  },
  // --- artifacts ---
  KILN_INVALID_PATH: {
    status: 400,
    retryable: false,
    template: 'invalid artifact path {path}: {reason}',
  },
  KILN_INVALID_DIGEST: {
    status: 400,
    retryable: false,
    template: 'invalid sha256 digest {digest}: expected 64 lowercase hex characters',
  },
  KILN_DIGEST_MISMATCH: {
    status: 400,
    retryable: false,
    template: 'uploaded bytes hash to {actual}, not the declared {expected}',
    hint: 'the upload was altered or truncated in transit; upload it again',
  },
  KILN_UPLOAD_INCOMPLETE: {
    status: 400,
    retryable: true,
    template: 'upload ended after {received} of {expected} bytes',
  },
  KILN_BLOB_MISSING: {
    status: 400,
    retryable: false,
    template: 'the manifest refers to {count} blob(s) that were never uploaded: {paths}',
    hint: 'upload each file with PUT /api/v1/blobs/{sha256} before creating the version',
  },
  KILN_SIZE_MISMATCH: {
    status: 400,
    retryable: false,
    template: 'file {path} is declared as {declared} bytes but its blob holds {actual}',
  },
  KILN_INVALID_ARTIFACT: {
    status: 422,
    retryable: false,
    template: 'artifact is not a valid {format} model: {reason}',
  },
  KILN_UNSAFE_ARTIFACT: {
    status: 422,
    retryable: false,
    template: '{path} is a {kind}: loading it executes arbitrary code, so Kiln refuses it',
    hint: 'export the model to ONNX (torch.onnx.export, skl2onnx) or save weights as safetensors',
  },
  KILN_ARTIFACT_CORRUPT: {
    status: 500,
    retryable: false,
    template: 'artifact file {path} is corrupt on disk: expected sha256 {expected}, found {actual}',
    hint: 'register the model again from its source; the stored copy cannot be trusted',
  },
  KILN_ARTIFACT_QUARANTINED: {
    status: 500,
    retryable: false,
    template:
      'artifact file {path} is corrupt on disk: its blob (sha256 {digest}) failed verification and was quarantined',
    hint: 'upload the file again (`kiln models register` uploads what the store lacks)',
  },
  KILN_ARTIFACT_MISSING: {
    status: 500,
    retryable: false,
    template: 'artifact file {path} (sha256 {digest}) is missing from the artifact store',
  },
  KILN_ARTIFACTS_UNAVAILABLE: {
    status: 503,
    retryable: true,
    template: 'the artifact store {store} cannot be used: {reason}',
    hint: 'check --artifacts / KILN_ARTIFACTS_URL, the endpoint, the bucket, and that the AWS credentials in the environment may read and write it',
  },
  // --- signing ---
  KILN_SIGNATURE_REQUIRED: {
    status: 403,
    retryable: false,
    template: 'policy for team {team} requires a signed manifest and version is unsigned',
    hint: 'sign with `kiln models register ... --sign-key KEYFILE`',
  },
  KILN_SIGNATURE_INVALID: {
    status: 403,
    retryable: false,
    template: 'signature rejected: {reason}',
  },
  KILN_KEY_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'no trusted key {key}',
  },
  KILN_KEY_EXISTS: {
    status: 409,
    retryable: false,
    template: 'a trusted key with id {key} already exists',
  },
  KILN_INVALID_KEY: {
    status: 400,
    retryable: false,
    template: 'invalid public key: {reason}',
  },
  // --- serving: endpoints (control plane) ---
  KILN_ENDPOINT_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'endpoint {endpoint} does not exist',
    hint: 'list endpoints with `kiln endpoints list`',
  },
  KILN_FORMAT_NOT_SERVABLE: {
    status: 422,
    retryable: false,
    template: 'format {format} cannot be served by Kiln workers yet',
  },
  KILN_MODEL_NOT_SERVABLE: {
    status: 422,
    retryable: false,
    template: '{model} cannot be served: {reason}',
  },
  KILN_SCHEMA_MISMATCH: {
    status: 422,
    retryable: false,
    template: 'the declared schema does not match the model: {reason}',
  },
  KILN_API_KEY_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'no API key {key}',
  },
  // --- control-plane access (bearer tokens) ---
  KILN_TOKEN_MISSING: {
    status: 401,
    retryable: false,
    template: 'this call needs a control-plane token',
    hint: 'send `Authorization: Bearer <token>`; the CLI uses --token, $KILN_TOKEN or, on the platform machine, <home>/admin.token',
  },
  KILN_TOKEN_INVALID: {
    status: 401,
    retryable: false,
    template: 'the control-plane token is {reason}',
    hint: 'an admin can create a new one with `kiln tokens create`',
  },
  KILN_PERMISSION_DENIED: {
    status: 403,
    retryable: false,
    template: '{who} may not {action}',
  },
  KILN_TOKEN_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'no live token {token}',
    hint: 'list tokens with `kiln tokens list`',
  },
  // --- serving: data plane (gateway and workers) ---
  KILN_INVALID_INFER_REQUEST: {
    status: 400,
    retryable: false,
    template: '{reason}',
  },
  KILN_INVALID_TENSOR: {
    status: 400,
    retryable: false,
    template: '{reason}',
  },
  KILN_INPUT_MISMATCH: {
    status: 400,
    retryable: false,
    template: '{reason}',
  },
  KILN_BATCH_TOO_LARGE: {
    status: 400,
    retryable: false,
    template: '{reason}',
  },
  KILN_UNSUPPORTED_EXTENSION: {
    status: 400,
    retryable: false,
    template: '{reason}',
  },
  KILN_VERSION_NOT_SERVED: {
    status: 404,
    retryable: false,
    template: 'endpoint {endpoint} serves version {served}, not version {version}',
  },
  KILN_UNAUTHENTICATED: {
    status: 401,
    retryable: false,
    template: 'missing or unknown API key',
    hint: 'send `Authorization: Bearer <key>`; create one with `kiln keys api create`',
  },
  KILN_FORBIDDEN: {
    status: 403,
    retryable: false,
    template: 'this API key may not call endpoint {endpoint}',
  },
  KILN_NO_READY_REPLICA: {
    status: 503,
    retryable: true,
    template: 'endpoint {endpoint} has no ready replica: {reason}',
  },
  KILN_REPLICA_UNAVAILABLE: {
    status: 503,
    retryable: true,
    template: 'the replica serving endpoint {endpoint} failed during the request: {reason}',
  },
  KILN_UPSTREAM_TIMEOUT: {
    status: 504,
    retryable: true,
    template: 'the replica serving endpoint {endpoint} did not answer within {timeoutMs} ms',
  },
  KILN_ENDPOINT_BUSY: {
    status: 429,
    retryable: true,
    template: 'endpoint {endpoint} already has {limit} requests in flight',
  },
  KILN_RATE_LIMITED: {
    status: 429,
    retryable: true,
    template: 'team {team} is over its rate limit of {requestsPerSecond} requests/s',
  },
  KILN_TEAM_LIMIT_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'team {team} has no rate limit',
  },
  KILN_MODEL_NOT_READY: {
    status: 503,
    retryable: true,
    template: 'model {model} is not ready: {reason}',
  },
  KILN_MODEL_LOAD_FAILED: {
    status: 503,
    retryable: false,
    template: 'the model could not be loaded: {reason}',
  },
  KILN_INFERENCE_FAILED: {
    status: 500,
    retryable: false,
    template: 'inference failed: {reason}',
  },
  KILN_QUEUE_FULL: {
    status: 429,
    retryable: true,
    template: 'model {model} has {queued} requests waiting, its limit: retry later',
  },
  KILN_DEADLINE_EXCEEDED: {
    status: 504,
    retryable: true,
    template: 'the request waited past its deadline of {timeoutMs} ms and was not run',
    hint: 'raise the deadline with the `kiln-timeout-ms` header or the endpoint timeoutMs',
  },
  // --- autoscaling, scale-to-zero, placement, pools, simulator (issue 14) ---
  KILN_AUTOSCALE_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid autoscaling policy for endpoint {endpoint}: {reason}',
    hint: 'see docs/autoscaling.md for the fields and their ranges',
  },
  KILN_SCALE_CONFLICT: {
    status: 409,
    retryable: true,
    template: 'the replica count of endpoint {endpoint} changed meanwhile: {reason}',
  },
  KILN_COLD_START_TIMEOUT: {
    status: 503,
    retryable: true,
    template:
      'endpoint {endpoint} had no ready replica within {timeoutMs} ms of waking it from zero',
    hint: 'see why with `kiln endpoints show ENDPOINT`; a longer wait: scaleToZero.timeoutMs',
  },
  KILN_ACTIVATOR_FULL: {
    status: 503,
    retryable: true,
    template:
      'endpoint {endpoint} is starting from zero replicas and already holds {held} requests',
  },
  KILN_UNSCHEDULABLE: {
    status: 409,
    retryable: false,
    template: 'endpoint {endpoint} is unschedulable: {reason}',
    hint: 'see the nodes and what they hold with `kiln placement show`',
  },
  KILN_INVENTORY_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid node inventory {source}: {reason}',
  },
  KILN_NODE_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'node {node} is not in the inventory',
  },
  KILN_POOL_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'worker pool {pool} does not exist',
    hint: 'create it with `kiln pools create NAME --workers N --memory-budget SIZE`',
  },
  KILN_POOL_IN_USE: {
    status: 409,
    retryable: false,
    template: 'worker pool {pool} serves endpoints: {endpoints}',
    hint: 'delete or redeploy those endpoints first',
  },
  KILN_TRACE_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid trace {source}: {reason}',
    hint: 'a trace is CSV `t_seconds,rps` rows (header optional) or JSON [{"t": s, "rps": n}]',
  },
  KILN_SIMULATION_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid simulation: {reason}',
    hint: 'see docs/simulator.md for the model and policy file formats',
  },
  // --- observability (issue 15: tracing, drift, outcomes, prediction log, cost, SLOs) ---
  KILN_OBSERVABILITY_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid observability settings for endpoint {endpoint}: {reason}',
    hint: 'see docs/observability.md for every field and its range',
  },
  KILN_OBSERVABILITY_CONFLICT: {
    status: 409,
    retryable: true,
    template: 'the observability settings of endpoint {endpoint} were not changed: {reason}',
  },
  KILN_PROFILE_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid reference profile {source}: {reason}',
    hint: 'a profile is what `kiln models profile` writes (docs/profiles.md)',
  },
  KILN_PROFILE_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'model {model} version {version} has no reference profile',
    hint: 'register one with `kiln models register --profile FILE` or `kiln models profile`',
  },
  KILN_OUTCOME_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid outcomes for endpoint {endpoint}: {reason}',
  },
  KILN_PRICES_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid price table {source}: {reason}',
  },
  KILN_SLO_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid SLO for endpoint {endpoint}: {reason}',
  },
  KILN_SLO_NOT_SET: {
    status: 404,
    retryable: false,
    template: 'endpoint {endpoint} has no SLO',
    hint: 'set one in config.observability.slo (deploy, or `kiln observe set`; docs/slo.md)',
  },
  KILN_DRIFT_NOT_CONFIGURED: {
    status: 409,
    retryable: false,
    template:
      'endpoint {endpoint} collects no drift sketches: turn them on with observability.drift ({"drift": {}} in PUT /api/v1/endpoints/{endpoint}/observability, `kiln observe set`, or the deploy config)',
    hint: 'see docs/drift.md',
  },
  KILN_DRIFT_SLICE_UNKNOWN: {
    status: 400,
    retryable: false,
    template: 'endpoint {endpoint} has no drift slice key {slice}: {configured}',
  },
  KILN_DRIFT_QUERY_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid drift query for endpoint {endpoint}: {reason}',
  },
  // --- traffic management (policies, rollouts, experiments, golden sets) ---
  KILN_TRAFFIC_POLICY_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid traffic policy for endpoint {endpoint}: {reason}',
  },
  KILN_TRAFFIC_CONFLICT: {
    status: 409,
    retryable: true,
    template: 'the traffic of endpoint {endpoint} changed meanwhile: {reason}',
    hint: 'read it again (`kiln traffic show ENDPOINT`) and retry',
  },
  KILN_ROLLOUT_IN_PROGRESS: {
    status: 409,
    retryable: false,
    template: 'endpoint {endpoint} already has rollout {rollout} in progress ({state})',
    hint: 'see it with `kiln rollout status ENDPOINT`; finish it with promote or abort first',
  },
  KILN_NO_ACTIVE_ROLLOUT: {
    status: 409,
    retryable: false,
    template: 'endpoint {endpoint} has no rollout in progress to {action}',
    hint: 'start one with `kiln rollout start ENDPOINT --to MODEL:VERSION`',
  },
  KILN_ROLLOUT_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'rollout {rollout} does not exist',
  },
  KILN_EXPERIMENT_IN_PROGRESS: {
    status: 409,
    retryable: false,
    template: 'endpoint {endpoint} runs experiment {experiment}: {reason}',
    hint: 'stop it first with `kiln experiments stop ID`',
  },
  KILN_EXPERIMENT_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: 'experiment {experiment} does not exist',
    hint: 'list experiments with `kiln experiments list`',
  },
  KILN_EXPERIMENT_STOPPED: {
    status: 409,
    retryable: false,
    template: 'experiment {experiment} is stopped: {reason}',
  },
  KILN_NOTHING_TO_ROLL_BACK: {
    status: 409,
    retryable: false,
    template: 'endpoint {endpoint} has nothing to roll back to: {reason}',
  },
  KILN_GOLDEN_SET_INVALID: {
    status: 400,
    retryable: false,
    template: 'invalid golden set for {model} v{version}: {reason}',
  },
  KILN_GOLDEN_SET_FAILED: {
    status: 422,
    retryable: false,
    template: '{model} v{version} did not reproduce its golden set: {reason}',
  },
  KILN_GOLDEN_SET_NOT_FOUND: {
    status: 404,
    retryable: false,
    template: '{model} v{version} has no golden set',
    hint: 'register one with `kiln models golden set MODEL:VERSION FILE`',
  },
  // --- everything else ---
  KILN_INTERNAL: {
    status: 500,
    retryable: true,
    template: 'internal error: {reason}',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorRegistry;
export type ErrorParams = Readonly<Record<string, string | number | boolean>>;

function render(template: string, params: ErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => {
    const value = params[key];
    return value === undefined ? whole : String(value);
  });
}

export class KilnError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly details: unknown;
  readonly hint: string | undefined;

  constructor(
    code: ErrorCode,
    params: ErrorParams = {},
    details?: unknown,
    options?: ErrorOptions,
  ) {
    const spec: ErrorSpec = errorRegistry[code];
    super(render(spec.template, params), options);
    this.name = 'KilnError';
    this.code = code;
    this.status = spec.status;
    this.retryable = spec.retryable;
    this.details = details;
    this.hint = spec.hint;
  }

  /** The API's rendering: `{"error": {"code", "message", "details"?, "hint"?}}`. */
  toJSON(): { error: { code: ErrorCode; message: string; details?: unknown; hint?: string } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details === undefined ? {} : { details: this.details }),
        ...(this.hint === undefined ? {} : { hint: this.hint }),
      },
    };
  }
}

export function kilnError(code: ErrorCode, params: ErrorParams = {}, details?: unknown): KilnError {
  return new KilnError(code, params, details);
}

export function isKilnError(value: unknown): value is KilnError {
  return value instanceof KilnError;
}
