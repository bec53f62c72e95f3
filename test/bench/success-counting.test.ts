// Throughput counts successful answers only (issue 16, 4c): wrk's report read with its
// non-2xx and socket errors taken out of Requests/sec, the JavaScript client's rps counting
// 2xx only, and a throughput goal reading met=no when more than 0.1 % of requests failed.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';

import { closedLoop } from '../../bench/_load.ts';
import { failureProblem, goal } from '../../bench/_report.ts';
import { parseWrkOutput } from '../../bench/_wrk.ts';

// wrk 4.1.0 (Debian) against a server answering every third request 503.
const wrkWithFailures = `Running 1s test @ http://127.0.0.1:41923/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     5.17ms    7.11ms  65.77ms   87.71%
    Req/Sec     1.30k   506.84     2.13k    80.00%
  Latency Distribution
     50%    2.90ms
     75%    7.62ms
     90%   13.40ms
     99%   34.44ms
  1302 requests in 1.02s, 164.87KB read
  Non-2xx or 3xx responses: 434
Requests/sec:   1278.37
Transfer/sec:    161.88KB
`;

const wrkClean = `Running 5s test @ http://127.0.0.1:8000/v2/models/bench/infer
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     6.88ms    3.02ms  60.31ms   90.12%
    Req/Sec     8.75k   512.33     9.01k    78.00%
  Latency Distribution
     50%    6.88ms
     75%    7.31ms
     90%    9.89ms
     99%   42.50ms
  43495 requests in 5.00s, 9.87MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
Requests/sec:   8699.00
Transfer/sec:      1.97MB
`;

void test("wrk's Requests/sec is cut to the successful share; errors of every kind counted", () => {
  const r = parseWrkOutput(wrkWithFailures);
  assert.equal(r.requests, 1302);
  assert.equal(r.successes, 868);
  assert.equal(r.errors, 434);
  assert.equal(r.rps, (1278.37 * 868) / 1302);
  assert.equal(r.p50Ms, 2.9);
  assert.equal(r.p99Ms, 34.44);

  const clean = parseWrkOutput(wrkClean);
  // read errors never completed; timeouts completed too late to count as answers.
  assert.equal(clean.requests, 43495 + 2);
  assert.equal(clean.successes, 43495 - 3);
  assert.equal(clean.errors, 5);
  assert.equal(clean.rps, (8699 * (43495 - 3)) / 43495);
  assert.equal(clean.p99Ms, 42.5);
});

void test('a run with no report reads NaN, not a made-up rate', () => {
  const r = parseWrkOutput('unable to connect to 127.0.0.1:1 Connection refused\n');
  assert.ok(Number.isNaN(r.rps));
  assert.ok(Number.isNaN(r.p99Ms));
});

void test('more than 0.1 % failed makes a throughput goal read met=no, with the reason first', () => {
  assert.equal(failureProblem([{ label: 'kiln', requests: 10_000, errors: 10 }]), null);
  const problem = failureProblem([
    { label: 'kiln', requests: 10_000, errors: 11 },
    { label: 'flask', requests: 5000, errors: 0 },
  ]);
  assert.equal(problem, 'more than 0.1 % of requests failed: kiln 11 of 10000 (0.11 %)');
  assert.equal(failureProblem([{ label: 'idle', requests: 0, errors: 0 }]), null);

  const lines: string[] = [];
  const log = console.log;
  console.log = (line: string): void => void lines.push(line);
  try {
    assert.equal(goal('status-quo', 'throughput_ratio', 7, '>=', 5, problem), false);
    assert.equal(goal('status-quo', 'throughput_ratio', 7, '>=', 5), true);
  } finally {
    console.log = log;
  }
  assert.deepEqual(lines, [
    `note: status-quo.throughput_ratio reads met=no: ${problem}`,
    'GOAL status-quo.throughput_ratio value=7 target=>=5 met=no',
    'GOAL status-quo.throughput_ratio value=7 target=>=5 met=yes',
  ]);
});

void test("the JavaScript client's rps counts 2xx answers only", async () => {
  let n = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      n++;
      response.statusCode = n % 2 === 0 ? 503 : n % 3 === 0 ? 201 : 200;
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const r = await closedLoop(
      { origin: `http://127.0.0.1:${port}`, path: '/', body: '{}' },
      2,
      300,
    );
    assert.ok(r.requests > 10, `only ${r.requests} requests`);
    const ok = (r.statuses['200'] ?? 0) + (r.statuses['201'] ?? 0);
    assert.equal(r.successes, ok);
    assert.equal(r.errors, r.statuses['503'] ?? 0);
    assert.equal(r.requests, r.successes + r.errors);
    assert.equal(r.latenciesMs.length, r.successes);
    assert.equal(r.rps, r.successes / r.seconds);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
