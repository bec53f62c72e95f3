// A real Prometheus (Debian's `prometheus`, started here on loopback in a temp folder)
// scrapes the gateway, both workers of a 50/50 split and the control plane (with a reader
// token, outside --dev), and PromQL answers the per-version counts of the traffic this test
// sent: the gateway's and the workers' `kiln_*_requests_total{endpoint,version,code}` sum to
// what the answers' `kiln-model-version` headers say. Skipped, saying so, when no
// `prometheus` binary is installed (.ci/run installs it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after } from 'node:test';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const prometheusBinary = spawnSync('prometheus', ['--version']).status === 0 ? 'prometheus' : null;
const ENDPOINT = 'scraped';
const MODEL = 'scraped-model';
const REQUESTS = 60;

/** A free loopback port (Prometheus takes an address, not port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

interface Sample {
  readonly metric: Record<string, string>;
  readonly value: readonly [number, string];
}

async function query(url: string, promql: string): Promise<readonly Sample[]> {
  const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await response.json()) as {
    status: string;
    data?: { result: Sample[] };
    error?: string;
  };
  assert.equal(body.status, 'success', `${promql}: ${body.error ?? response.status}`);
  return body.data?.result ?? [];
}

/** `sum by (version)` as a map version → value. */
function byVersion(samples: readonly Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sample of samples) out[sample.metric.version ?? ''] = Number(sample.value[1]);
  return out;
}

/** Polls `check` until it returns a value, or fails after `timeoutMs` naming `what` and the last one. */
async function eventually<T>(
  what: string,
  check: () => Promise<{ done: boolean; value: T }>,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    const { done, value } = await check();
    last = value;
    if (done) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
}

test(
  'Prometheus scrapes the gateway, the workers and the control plane: PromQL gives the per-version counts sent',
  { skip: prometheusBinary === null ? 'no prometheus binary (apt-get install prometheus)' : false },
  async () => {
    const platform = await testPlatform({ gateway: true, dev: false });
    const admin = platform.admin;
    const fixture = await readArtifact(
      new URL('../../fixtures/registry/xgb-binary.json', import.meta.url).pathname,
    );
    const first = fixture[0];
    assert.ok(first !== undefined);
    // Two versions of the same model; the second's artifact differs by a trailing newline.
    const second = Buffer.concat([first.data, Buffer.from('\n')]);
    await call(platform.url, 'POST', '/api/v1/models', { name: MODEL }, admin);
    for (const file of [
      first,
      {
        path: first.path,
        size: second.length,
        sha256: createHash('sha256').update(second).digest('hex'),
        data: second,
      },
    ]) {
      const created = await register(platform.url, MODEL, 'xgboost', [file], {}, admin);
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    const deployed = await call(
      platform.url,
      'PUT',
      `/api/v1/endpoints/${ENDPOINT}`,
      { model: MODEL, version: 1, replicas: 1 },
      admin,
    );
    assert.ok([200, 201].includes(deployed.status), JSON.stringify(deployed.body));
    const split = await call(
      platform.url,
      'PUT',
      `/api/v1/endpoints/${ENDPOINT}/traffic`,
      {
        versions: [
          { model: MODEL, version: 1, weight: 50 },
          { model: MODEL, version: 2, weight: 50 },
        ],
        shadows: [],
        reason: 'prometheus test',
      },
      admin,
    );
    assert.equal(split.status, 200, JSON.stringify(split.body));

    const key = await call(
      platform.url,
      'POST',
      '/api/v1/api-keys',
      { name: 'scraper-app', endpoint: ENDPOINT },
      admin,
    );
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const apiKey = { authorization: `Bearer ${(key.body as { key: string }).key}` };
    const reader = await call(
      platform.url,
      'POST',
      '/api/v1/tokens',
      { name: 'prometheus', role: 'reader' },
      admin,
    );
    assert.equal(reader.status, 201, JSON.stringify(reader.body));
    const readerToken = (reader.body as { token: string }).token;

    // Both versions' replicas ready and routed (the gateway answers with either).
    const replicas = await eventually('a ready replica of each version', async () => {
      const endpoint = await call(
        platform.url,
        'GET',
        `/api/v1/endpoints/${ENDPOINT}`,
        undefined,
        admin,
      );
      const status = (
        endpoint.body as {
          status: { replicas: { version: number; state: string; url: string | null }[] };
        }
      ).status;
      const ready = status.replicas.filter((r) => r.state === 'ready' && r.url !== null);
      const versions = new Set(ready.map((r) => r.version));
      return { done: versions.has(1) && versions.has(2), value: ready };
    });

    const body = JSON.stringify({
      inputs: [{ name: 'input', shape: [1, 5], datatype: 'FP32', data: [0, 1, 2, 3, 4] }],
    });
    const sent: Record<string, number> = {};
    let answered = 0;
    // Past warm-up: the gateway routes to both once its snapshot carries the split.
    await eventually('answers from both versions through the gateway', async () => {
      const response = await fetch(`${platform.gatewayUrl}/v2/models/${ENDPOINT}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...apiKey },
        body,
      });
      await response.arrayBuffer();
      assert.equal(response.status, 200);
      const version = response.headers.get('kiln-model-version') ?? '?';
      sent[version] = (sent[version] ?? 0) + 1;
      answered += 1;
      return { done: (sent['1'] ?? 0) > 0 && (sent['2'] ?? 0) > 0, value: sent };
    });
    while (answered < REQUESTS) {
      const response = await fetch(`${platform.gatewayUrl}/v2/models/${ENDPOINT}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...apiKey },
        body,
      });
      await response.arrayBuffer();
      assert.equal(response.status, 200);
      const version = response.headers.get('kiln-model-version') ?? '?';
      sent[version] = (sent[version] ?? 0) + 1;
      answered += 1;
    }
    assert.deepEqual(Object.keys(sent).sort(), ['1', '2']);

    const dir = await tempDir('kiln-prometheus-');
    const port = await freePort();
    const hostPort = (url: string): string => new URL(url).host;
    await writeFile(join(dir, 'control.token'), readerToken);
    const config = [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      '  - job_name: gateway',
      '    static_configs:',
      `      - targets: ['${hostPort(platform.gatewayUrl)}']`,
      '  - job_name: workers',
      '    static_configs:',
      `      - targets: [${replicas.map((r) => `'${hostPort(r.url ?? '')}'`).join(', ')}]`,
      '  - job_name: control',
      '    authorization:',
      `      credentials_file: ${join(dir, 'control.token')}`,
      '    static_configs:',
      `      - targets: ['${hostPort(platform.url)}']`,
      '',
    ].join('\n');
    await writeFile(join(dir, 'prometheus.yml'), config);
    const prometheus: ChildProcess = spawn(
      prometheusBinary ?? 'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    prometheus.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      log = (log + chunk).slice(-4000);
    });
    const exited = new Promise<void>((resolve) => prometheus.once('exit', () => resolve()));
    after(async () => {
      if (prometheus.exitCode === null) prometheus.kill('SIGTERM');
      await exited;
    });
    const url = `http://127.0.0.1:${port}`;

    // Every target up (the first scrape lands a few seconds after start).
    await eventually(`every target up (prometheus log: ${log})`, async () => {
      try {
        const up = await query(url, 'up');
        const byJob = up.map((s) => `${s.metric.job}=${s.value[1]}`).sort();
        return {
          done: up.length === 2 + replicas.length && up.every((s) => s.value[1] === '1'),
          value: byJob,
        };
      } catch {
        return { done: false, value: ['not answering yet'] };
      }
    });

    const gateway = await eventually('the gateway counts per version', async () => {
      const counts = byVersion(
        await query(
          url,
          `sum by (version) (kiln_gateway_requests_total{job="gateway",endpoint="${ENDPOINT}",code="200"})`,
        ),
      );
      return { done: counts['1'] === sent['1'] && counts['2'] === sent['2'], value: counts };
    });
    assert.deepEqual(gateway, { '1': sent['1'], '2': sent['2'] });

    const workers = await eventually('the workers count per version', async () => {
      const counts = byVersion(
        await query(
          url,
          `sum by (version) (kiln_worker_requests_total{job="workers",endpoint="${ENDPOINT}",code="200"})`,
        ),
      );
      return { done: counts['1'] === sent['1'] && counts['2'] === sent['2'], value: counts };
    });
    assert.deepEqual(workers, { '1': sent['1'], '2': sent['2'] });

    // The control plane answered the reader token's scrape (outside --dev a scrape without
    // one is refused: its `up` would be 0).
    const control = await query(url, 'up{job="control"}');
    assert.equal(control[0]?.value[1], '1');
    const refused = await fetch(`${platform.url}/metrics`);
    await refused.arrayBuffer();
    assert.equal(refused.status, 401);
  },
);
