// Policy files → simulated policies (Kiln's Autoscaler or the HPA-like baseline), and the two
// compared on a spike: the same requests, Kiln's panic mode reacting within seconds where the
// HPA's 15 s sync and rate limits leave the spike queued.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Autoscaler } from '../../src/autoscale/autoscaler.ts';
import { HpaBaseline } from '../../src/autoscale/hpa-baseline.ts';
import { policyFromFile } from '../../src/simulator/policy-file.ts';
import { simulate } from '../../src/simulator/simulate.ts';
import { modelOf, traceOf } from './helpers.ts';

const kilnFile = {
  name: 'kiln',
  kind: 'kiln',
  policy: { minReplicas: 1, maxReplicas: 60, signal: 'concurrency', target: 0.7 },
};
const hpaFile = {
  name: 'hpa',
  kind: 'hpa',
  policy: { minReplicas: 1, maxReplicas: 60, signal: 'cpu', target: 0.7 },
};

test('a kiln policy file runs the Autoscaler with the controller wake settings', () => {
  const check = policyFromFile({
    ...kilnFile,
    instanceType: 'small',
    policy: { ...kilnFile.policy, minReplicas: 0, scaleToZero: { idleMs: 60_000 } },
  });
  assert.ok(check.ok);
  assert.ok(check.policy.createRunner() instanceof Autoscaler);
  assert.equal(check.policy.instanceType, 'small');
  assert.equal(check.policy.initialReplicas, 1);
  assert.equal(check.policy.wakeReplicas, 1);
  assert.equal(check.policy.wakeHoldMs, 60_000);
  assert.equal(check.policy.createForecaster, undefined);
});

test('an hpa policy file runs the HpaBaseline', () => {
  const check = policyFromFile({ ...hpaFile, initialReplicas: 3 });
  assert.ok(check.ok);
  assert.ok(check.policy.createRunner() instanceof HpaBaseline);
  assert.equal(check.policy.initialReplicas, 3);
});

test('bad policy files are refused with the reason', () => {
  const reason = (input: unknown): string => {
    const check = policyFromFile(input);
    assert.equal(check.ok, false);
    return check.ok ? '' : check.reason;
  };
  assert.equal(reason(null), 'a policy file must be a JSON object {name, kind, policy}');
  assert.equal(reason({ ...kilnFile, name: '' }), 'name must be a non-empty string');
  assert.equal(reason({ ...kilnFile, kind: 'vpa' }), `kind must be 'kiln' or 'hpa', got "vpa"`);
  assert.equal(
    reason({ ...kilnFile, extra: 1 }),
    'unknown field extra (known: name, kind, policy, instanceType, initialReplicas)',
  );
  assert.match(
    reason({ ...kilnFile, policy: { ...kilnFile.policy, minReplicas: 5, maxReplicas: 2 } }),
    /^policy kiln: .*minReplicas \(5\) > maxReplicas \(2\)/,
  );
  assert.match(
    reason({ ...hpaFile, policy: { ...hpaFile.policy, minReplicas: 0 } }),
    /^policy hpa: /,
  );
  assert.equal(
    reason({ ...kilnFile, initialReplicas: -1 }),
    'initialReplicas must be an integer >= 0, got -1',
  );
});

test('on a 10× spike Kiln (panic mode) keeps more requests within the SLO than the HPA baseline', () => {
  const spike = traceOf([
    [0, 10],
    [300, 100],
    [900, 10],
    [1200, 10],
  ]);
  const policies = [kilnFile, hpaFile].map((file) => {
    const check = policyFromFile(file);
    assert.ok(check.ok);
    return check.policy;
  });
  const report = simulate({
    trace: spike,
    model: modelOf({ kind: 'exponential', meanMs: 100 }, { startupMs: 2000 }),
    sloMs: 500,
    policies,
  });
  const [kiln, hpa] = report.policies;
  assert.ok(kiln !== undefined && hpa !== undefined);
  assert.equal(kiln.requests, hpa.requests);
  assert.ok(kiln.panicSeconds > 0, 'Kiln panicked on the spike');
  assert.equal(hpa.panicSeconds, 0);
  assert.ok(
    kiln.sloAttainment > hpa.sloAttainment,
    `kiln ${kiln.sloAttainment} vs hpa ${hpa.sloAttainment}`,
  );
  assert.ok(kiln.p99Ms !== null && hpa.p99Ms !== null && kiln.p99Ms < hpa.p99Ms);
  // Both scale back down after the spike.
  assert.ok((kiln.timeline.replicas.at(-1) ?? 99) < kiln.maxReplicas);
  assert.ok((hpa.timeline.replicas.at(-1) ?? 99) < hpa.maxReplicas);
});

test('a predictive Kiln policy raises replicas before the learned daily peak, by the start-up time', () => {
  // Two days: 1 rps, and 30 rps from 12:00 to 13:00. Replicas take 5 minutes to start.
  const rows: [number, number][] = [];
  for (const day of [0, 1]) {
    rows.push([day * 86_400, 1], [day * 86_400 + 12 * 3600, 30], [day * 86_400 + 13 * 3600, 1]);
  }
  rows.push([2 * 86_400, 0]);
  const base = { minReplicas: 1, maxReplicas: 40, signal: 'concurrency', target: 0.7 };
  const policies = [
    { name: 'predictive', kind: 'kiln', policy: { ...base, predictive: { bucketMs: 600_000 } } },
    { name: 'reactive', kind: 'kiln', policy: base },
  ].map((file) => {
    const check = policyFromFile(file);
    assert.ok(check.ok, check.ok ? '' : check.reason);
    return check.policy;
  });
  assert.ok(policies[0]?.createForecaster !== undefined);
  const report = simulate({
    trace: traceOf(rows),
    model: modelOf({ kind: 'exponential', meanMs: 100 }, { startupMs: 300_000 }),
    sloMs: 500,
    timelinePoints: 2 * 1440, // one point a minute
    policies,
  });
  const [predictive, reactive] = report.policies;
  assert.ok(predictive !== undefined && reactive !== undefined);
  const minute = (day: number, hour: number, min: number): number => day * 1440 + hour * 60 + min;
  // Day 1 has no history: both react only, at the peak.
  assert.equal(predictive.timeline.replicas[minute(0, 11, 57)], 1);
  // Day 2: the predictive policy asks for the peak's replicas 5 minutes ahead (the window
  // [now, now + 5 min] reaches the 12:00 bucket from 11:55) and they are ready at 12:00.
  assert.equal(predictive.timeline.replicas[minute(1, 11, 50)], 1);
  const ahead = predictive.timeline.replicas[minute(1, 11, 56)] ?? 0;
  assert.ok(ahead >= 4, `predictive wants ${ahead} at 11:56`);
  assert.ok((predictive.timeline.readyReplicas[minute(1, 12, 1)] ?? 0) >= 4);
  assert.equal(reactive.timeline.replicas[minute(1, 11, 56)], 1);
  assert.ok(predictive.sloAttainment > reactive.sloAttainment);
});
