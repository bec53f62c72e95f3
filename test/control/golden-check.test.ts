// Golden sets: the comparison rule (|got - want| <= absolute + relative * |want|, element by
// element, by output name), and the runner against a stub v2 server: the first case that
// fails decides, with its case, output and element named; a hung replica fails the set.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compareGoldenOutputs, httpGoldenRunner } from '../../src/control/traffic/golden-check.ts';
import type { GoldenSet } from '../../src/store/traffic-records.ts';

const tolerance = { absolute: 1e-6, relative: 1e-3 };

test('outputs compare by name, element by element, within absolute + relative * |want|', () => {
  const golden = {
    request: { inputs: [] },
    outputs: [
      { name: 'y', data: [100, -2, 0] },
      { name: 'label', data: ['cat'] },
    ],
  };
  const answer = (y: unknown[], label: unknown[] = ['cat']) => ({
    outputs: [
      { name: 'label', datatype: 'BYTES', shape: [1], data: label },
      { name: 'y', datatype: 'FP32', shape: [3], data: y },
    ],
  });
  assert.equal(compareGoldenOutputs(golden, answer([100.09, -2.0019, 1e-7]), tolerance), null);
  assert.equal(
    compareGoldenOutputs(golden, answer([100.2, -2, 0]), tolerance),
    'output y[0]: got 100.2, want 100 (tolerance absolute 0.000001, relative 0.001)',
  );
  assert.equal(
    compareGoldenOutputs(golden, answer([100, -2, 0], ['dog']), tolerance),
    'output label[0]: got "dog", want "cat" (tolerance absolute 0.000001, relative 0.001)',
  );
  assert.equal(
    compareGoldenOutputs(golden, answer([100, -2]), tolerance),
    'output y: 2 elements, 3 expected',
  );
  assert.equal(
    compareGoldenOutputs(golden, { outputs: [{ name: 'label', data: ['cat'] }] }, tolerance),
    'output y is missing',
  );
  assert.equal(
    compareGoldenOutputs(golden, { error: 'x' }, tolerance),
    'the answer has no outputs',
  );
  // Nested data (a client's row-major form) is compared flat.
  assert.equal(compareGoldenOutputs(golden, answer([[100], [-2], [0]]), tolerance), null);
});

async function stubWorker(
  answer: (body: unknown) => { status: number; body: unknown } | null,
  delayMs = 0,
): Promise<{ url: string; paths: string[]; server: Server }> {
  const paths: string[] = [];
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      paths.push(request.url ?? '');
      const reply = answer(JSON.parse(text));
      if (reply === null) return; // hangs
      setTimeout(() => {
        response.writeHead(reply.status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(reply.body));
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, paths, server };
}

const set: GoldenSet = {
  model: 'm',
  version: 2,
  tolerance,
  createdAt: '2026-01-01T00:00:00.000Z',
  cases: [1, 2, 3].map((x) => ({
    request: { inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: [x] }] },
    outputs: [{ name: 'y', data: [x * 2] }],
  })),
};

/** y = 2x, except that x = 3 answers `three`. */
function doubler(three: (x: number) => { status: number; body: unknown } | null) {
  return (body: unknown) => {
    const x = (body as { inputs: { data: number[] }[] }).inputs[0]?.data[0] ?? 0;
    if (x === 3) return three(x);
    return { status: 200, body: { outputs: [{ name: 'y', data: [x * 2] }] } };
  };
}

test('the runner posts each case to the replica and names the first that fails', async () => {
  const good = await stubWorker(
    doubler((x) => ({ status: 200, body: { outputs: [{ name: 'y', data: [x * 2] }] } })),
  );
  const wrong = await stubWorker(
    doubler(() => ({ status: 200, body: { outputs: [{ name: 'y', data: [7] }] } })),
  );
  const failing = await stubWorker(doubler(() => ({ status: 500, body: { error: 'boom' } })));
  const hung = await stubWorker(doubler(() => null));
  try {
    const run = httpGoldenRunner({ timeoutMs: 300 });
    assert.deepEqual(await run(good.url, 'ep', set), { ok: true, cases: 3 });
    assert.deepEqual(good.paths, [
      '/v2/models/ep/infer',
      '/v2/models/ep/infer',
      '/v2/models/ep/infer',
    ]);
    assert.deepEqual(await run(wrong.url, 'ep', set), {
      ok: false,
      caseIndex: 2,
      reason: 'case 2: output y[0]: got 7, want 6 (tolerance absolute 0.000001, relative 0.001)',
    });
    const failed = await run(failing.url, 'ep', set);
    assert.equal(failed.ok, false);
    assert.match(failed.ok ? '' : failed.reason, /^case 2: status 500: \{"error":"boom"\}/);
    const timedOut = await run(hung.url, 'ep', set);
    assert.equal(timedOut.ok, false);
    assert.match(timedOut.ok ? '' : timedOut.reason, /^case 2: no answer/);
    // A replica slower than the whole set's budget fails it before the last case.
    const budget = httpGoldenRunner({ timeoutMs: 5000, totalTimeoutMs: 20 });
    const delayed = await stubWorker(
      doubler((x) => ({ status: 200, body: { outputs: [{ name: 'y', data: [x * 2] }] } })),
      40,
    );
    try {
      const outcome = await budget(delayed.url, 'ep', set);
      assert.equal(outcome.ok, false);
      assert.match(
        outcome.ok ? '' : outcome.reason,
        /^case [12]: not reached, the set took longer than 0\.02 s$/,
      );
    } finally {
      delayed.server.closeAllConnections();
      delayed.server.close();
    }
  } finally {
    for (const stub of [good, wrong, failing, hung]) {
      stub.server.closeAllConnections();
      stub.server.close();
    }
  }
});
