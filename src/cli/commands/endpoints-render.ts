// Human renderings of endpoints and API keys (pure: data in, text out).

import { resolveLlmServingConfig } from '../../llm/serving/llm-serving-config.ts';
import type { ApiKey, CreatedApiKey, Endpoint, EndpointStatus, LlmSettings } from '../api-types.ts';
import { humanSize, inlineMap, renderKeyValues, renderTable, shortTime } from '../output.ts';

export function endpointsTable(endpoints: readonly Endpoint[]): string {
  return renderTable(
    ['name', 'model', { header: 'version', align: 'right' }, 'replicas', 'ready', 'url'],
    endpoints.map((e) => [
      e.name,
      e.model,
      e.version,
      `${e.status.readyReplicas}/${e.replicas}`,
      readyText(e),
      e.url,
    ]),
  );
}

/**
 * An autoscaled endpoint at zero replicas serves (its next request wakes it, held
 * meanwhile): `zero`, not a `no` that reads as broken (Knative calls it Ready too).
 */
function readyText(e: Endpoint): string {
  if (e.status.ready) return 'yes';
  return e.replicas === 0 && e.config.autoscale?.minReplicas === 0 ? 'zero' : 'no';
}

/** The endpoint's fields, then its replicas (if any) as a table. */
export function endpointDetails(endpoint: Endpoint): string {
  const { status } = endpoint;
  const llm = endpoint.format === 'hf-llm';
  let text = renderKeyValues([
    ['name', endpoint.name],
    ['team', endpoint.team],
    ['model', endpoint.model],
    ['version', endpoint.version],
    ['ref', endpoint.ref],
    ...(endpoint.format === null ? [] : [['format', endpoint.format] as const]),
    ['replicas', `${endpoint.replicas} (${status.readyReplicas} ready)`],
    ['config', inlineMap(configWithoutBatching(endpoint.config))],
    llm
      ? ['llm', llmText(endpoint.config.llm)]
      : ['batching', batchingText(endpoint.config.batching)],
    ['max concurrency', maxConcurrencyText(status)],
    ['url', llm ? `${endpoint.url} (OpenAI API, model "${endpoint.name}")` : endpoint.url],
    ['ready', readyText(endpoint)],
    ['reason', status.reason],
    ['created', shortTime(endpoint.createdAt)],
    ['updated', shortTime(endpoint.updatedAt)],
  ]);
  if (status.replicas.length > 0) {
    // The node column only where placement named one (issue 14).
    const placed = status.replicas.some((r) => r.node !== undefined && r.node !== null);
    text +=
      '\nReplicas\n' +
      renderTable(
        [
          'id',
          { header: 'version', align: 'right' },
          'state',
          ...(placed ? ['node'] : []),
          { header: 'pid', align: 'right' },
          { header: 'restarts', align: 'right' },
          'reason',
        ],
        status.replicas.map((r) => [
          r.id,
          r.version,
          r.evicted === true ? `${r.state} (evicted)` : r.state,
          ...(placed ? [r.node ?? null] : []),
          r.pid,
          r.restarts,
          r.reason,
        ]),
      );
  }
  // Several versions run only with traffic management (policy, shadows, staged, warm).
  const versions = status.versions ?? [];
  if (versions.length > 1) {
    text +=
      '\nVersions\n' +
      renderTable(
        ['version', 'roles', { header: 'traffic', align: 'right' }, 'ready', 'warm until'],
        versions.map((v) => [
          `${v.model}:${v.version}`,
          v.roles.length === 0 ? 'leaving' : v.roles.join(', '),
          v.weight === null
            ? v.sampleRate === null
              ? '-'
              : `copies ${v.sampleRate}`
            : `${v.weight}%`,
          `${v.readyReplicas}/${v.replicas}`,
          shortTime(v.warmUntil),
        ]),
      );
  }
  return text;
}

function configWithoutBatching(config: Endpoint['config']): object {
  const { batching: _shownApart, llm: _shownApartToo, ...rest } = config;
  return rest;
}

/**
 * An hf-llm endpoint's settings with the defaults filled in, as its workers run them:
 * `KV 64.0 MiB/thread in blocks of 16, 64 seqs × 512 tokens/step, 256 waiting, prefix
 * caching on, 1 thread, n ≤ 8, streams: pause past 64.0 KiB unread, end after 30000 ms
 * paused, paused ≤ 1024 blocks`.
 */
export function llmText(given: LlmSettings | undefined): string {
  const llm = resolveLlmServingConfig(given);
  const threads = `${llm.threads} ${llm.threads === 1 ? 'thread' : 'threads'}`;
  return (
    `KV ${humanSize(llm.kvCacheBytes)}/thread in blocks of ${llm.blockSize}, ` +
    `${llm.maxNumSeqs} seqs × ${llm.maxNumBatchedTokens} tokens/step, ` +
    `${llm.maxWaiting} waiting, prefix caching ${llm.prefixCaching ? 'on' : 'off'}, ${threads}, ` +
    `n ≤ ${llm.maxN}, streams: pause past ${humanSize(llm.streamBufferBytes)} unread, ` +
    `end after ${llm.slowReaderTimeoutMs} ms paused, paused ≤ ${llm.maxPausedBlocks} blocks`
  );
}

/** `max 32 rows, wait ≤ 2000 µs, preferred 8/16, queue 256`, `off`, or the runtime's default. */
export function batchingText(batching: Endpoint['config']['batching']): string {
  if (batching === undefined) return 'runtime default (onnx on, trees off)';
  if (batching === null) return 'off';
  const preferred = batching.preferredBatchSizes ?? [];
  return (
    `max ${batching.maxBatchSize} rows, wait ≤ ${batching.maxDelayMicros} µs` +
    (preferred.length > 0 ? `, preferred ${preferred.join('/')}` : '') +
    `, queue ${batching.maxQueue}` +
    (batching.adaptive === false ? ', fixed (not adaptive)' : '')
  );
}

/**
 * The gateway's bound on requests in flight: `8 (configured)`, `256 (derived from the ready
 * replicas)`, or null (not routed).
 */
export function maxConcurrencyText(status: EndpointStatus): string | null {
  if (status.maxConcurrency === null) return null;
  const source =
    status.maxConcurrencySource === 'configured' ? 'configured' : 'derived from the ready replicas';
  return `${status.maxConcurrency} (${source})`;
}

/** `endpoint fraud → fraud-xgb v3 (2 replicas)` and `url: …`. */
export function deploySummary(endpoint: Endpoint): string {
  const replicas = `${endpoint.replicas} ${endpoint.replicas === 1 ? 'replica' : 'replicas'}`;
  return (
    `endpoint ${endpoint.name} → ${endpoint.model} v${endpoint.version} (${replicas})\n` +
    renderKeyValues([['url', endpoint.url]])
  );
}

/** `ready (2/2 replicas)` or `not ready (0/2 replicas): <reason>`. */
export function readinessText(endpoint: Endpoint): string {
  const counts = `(${endpoint.status.readyReplicas}/${endpoint.replicas} replicas)`;
  if (endpoint.status.ready) return `ready ${counts}\n`;
  const reason = notReadyReason(endpoint.status);
  return `not ready ${counts}${reason === undefined ? '' : `: ${reason}`}\n`;
}

/** Why an endpoint is not ready: its own reason, else the first replica that gave one. */
export function notReadyReason(status: EndpointStatus): string | undefined {
  if (status.reason !== null && status.reason !== '') return status.reason;
  const replica =
    status.replicas.find((r) => r.state === 'failed' && r.reason !== null) ??
    status.replicas.find((r) => r.reason !== null);
  if (replica?.reason !== undefined && replica.reason !== null) {
    return `replica ${replica.id} ${replica.state}: ${replica.reason}`;
  }
  return undefined;
}

export function apiKeysTable(keys: readonly ApiKey[]): string {
  return renderTable(
    ['id', 'name', 'team', 'endpoint', 'prefix', 'created'],
    keys.map((k) => [k.id, k.name, k.team, k.endpoint, k.prefix, shortTime(k.createdAt)]),
  );
}

/** The new key, shown this once, with a line saying so. */
export function createdApiKeyText(key: CreatedApiKey): string {
  return (
    `created API key ${key.id} (${key.name}, ${scopeText(key)})\n` +
    `key: ${key.key}\n` +
    'this key is shown only now and cannot be retrieved later: store it somewhere safe\n'
  );
}

export function scopeText(key: ApiKey): string {
  if (key.endpoint !== null) return `endpoint ${key.endpoint}`;
  if (key.team !== null) return `team ${key.team}`;
  return 'no scope';
}
