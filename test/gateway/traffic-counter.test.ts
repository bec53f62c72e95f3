// The gateway's traffic counting pieces, pure: the counter's windows and slice cap, the
// output column of an answer, the shadow comparison, and the snapshot check of a policy.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { answerOutputs, compareOutputs, outputColumn } from '../../src/gateway/answer-outputs.ts';
import { checkRoutingSnapshot } from '../../src/gateway/snapshot-check.ts';
import { TrafficCounter } from '../../src/gateway/traffic-counter.ts';
import { maxSliceValues, otherSlice } from '../../src/protocol/traffic/traffic-report.ts';
import { RunningMoments } from '../../src/traffic/running-moments.ts';
import { fakeWorker, snapshot } from './gateway-harness.ts';
import { policyEndpoint, shadowOf, variant } from './traffic-harness.ts';

test('a window holds what was recorded, take empties it, and an empty window is no report', () => {
  let now = Date.parse('2026-12-01T10:00:00Z');
  const counter = new TrafficCounter(() => now);
  assert.equal(counter.take('gw'), null);
  const v3 = counter.endpoint('fraud').version('m', 3);
  v3.record(200, 12, 'de', [0.5, 1.5]);
  v3.record(503, 30, null, null);
  v3.record(400, 2, 'de', null);
  now += 1000;
  const report = counter.take('gw')!;
  assert.equal(report.gateway, 'gw');
  assert.equal(report.windowStart, '2026-12-01T10:00:00.000Z');
  assert.equal(report.windowEnd, '2026-12-01T10:00:01.000Z');
  const version = report.endpoints[0]!.versions[0]!;
  assert.equal(version.overall.requests, 3);
  assert.equal(version.overall.errors, 1, 'only >= 500 is an error');
  assert.equal(version.slices.de!.requests, 2);
  assert.equal(version.slices.de!.errors, 0);
  assert.deepEqual(Object.keys(version.slices), ['de']);
  assert.equal(counter.take('gw'), null, 'taken: the next window is empty');
});

test('past maxSliceValues distinct values a version counts the rest under the other slice', () => {
  const counter = new TrafficCounter();
  const v = counter.endpoint('fraud').version('m', 1);
  for (let i = 0; i < maxSliceValues + 10; i++) v.record(200, 1, `s${i}`, null);
  v.record(200, 1, 's0', null);
  const slices = counter.take('gw')!.endpoints[0]!.versions[0]!.slices;
  assert.equal(Object.keys(slices).length, maxSliceValues + 1);
  assert.equal(slices[otherSlice]!.requests, 10);
  assert.equal(slices.s0!.requests, 2, 'a known value keeps its own slice');
});

test('the counted output is column 0 of the first numeric output; non-v2 bodies count nothing', () => {
  const body = Buffer.from(
    JSON.stringify({
      outputs: [
        { name: 'label', datatype: 'BYTES', shape: [2], data: ['a', 'b'] },
        {
          name: 'p',
          datatype: 'FP64',
          shape: [2, 2],
          data: [
            [0.1, 0.9],
            [0.7, 0.3],
          ],
        },
      ],
    }),
  );
  const outputs = answerOutputs(body)!;
  assert.deepEqual(outputColumn(outputs, 256), [0.1, 0.7]);
  assert.deepEqual(outputColumn(outputs, 1), [0.1]);
  assert.equal(answerOutputs(Buffer.from('{"error":"x"}')), null);
  assert.equal(answerOutputs(Buffer.from('not json')), null);
  const scalar = answerOutputs(
    Buffer.from('{"outputs":[{"name":"y","datatype":"INT64","shape":[3],"data":[4,5,6]}]}'),
  )!;
  assert.deepEqual(outputColumn(scalar, 256), [4, 5, 6]);
});

test('a shadow agrees within 1e-6 + 1e-4 relative, on the same names and shapes; |diff| is kept', () => {
  const out = (data: number[], name = 'y', shape = [data.length]) => [
    { name, datatype: 'FP32', shape, data },
  ];
  const diffs = new RunningMoments();
  assert.equal(compareOutputs(out([1, 100]), out([1 + 5e-7, 100.009]), diffs), true);
  assert.equal(compareOutputs(out([1, 100]), out([1, 100.02]), diffs), false);
  assert.equal(compareOutputs(out([1]), out([1], 'z'), diffs), false, 'another name');
  assert.equal(compareOutputs(out([1, 2]), out([1, 2], 'y', [2, 1]), diffs), false, 'shape');
  assert.equal(diffs.count, 4);
  assert.ok(Math.abs((diffs.snapshot().max ?? 0) - 0.02) < 1e-9);
});

test('the snapshot check takes a valid policy and refuses a bad split or a version without replicas', async () => {
  const worker = await fakeWorker();
  const good = policyEndpoint([variant(worker, 3, 90), variant(worker, 4, 10)], {
    shadows: [shadowOf(worker, 5, 0.5)],
  });
  assert.equal(checkRoutingSnapshot(snapshot(1, [good])).ok, true);
  const badWeights = policyEndpoint([variant(worker, 3, 90), variant(worker, 4, 20)]);
  const refused = checkRoutingSnapshot(snapshot(1, [badWeights]));
  assert.equal(refused.ok, false);
  assert.match(refused.ok ? '' : refused.reason, /sum to 100/);
  const noReplicas = {
    ...good,
    traffic: {
      ...good.traffic!,
      variants: [{ ...good.traffic!.variants[0]!, replicas: undefined }],
    },
  };
  assert.equal(checkRoutingSnapshot(snapshot(1, [noReplicas as never])).ok, false);
});
