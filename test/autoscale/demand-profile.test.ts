// The demand profile and the predictive scaler: a profile learned from two weeks of minute
// rows with a daily peak raises replicas exactly the start-up time before the peak (reactive
// alone reacts only once the peak has begun); per-weekday history with a fallback to the same
// time of day; quiet minutes count as zero demand; the quantile keeps one odd day from ruling.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  resolveAutoscalePolicy,
  type AutoscalePolicy,
} from '../../src/autoscale/autoscale-policy.ts';
import { Autoscaler } from '../../src/autoscale/autoscaler.ts';
import { createDemandForecaster } from '../../src/autoscale/demand-forecaster.ts';
import {
  DemandProfile,
  forecastFor,
  type DemandPoint,
} from '../../src/autoscale/demand-profile.ts';
import { runStream } from './scale-stream.ts';

const minuteMs = 60_000;
const hourMs = 3_600_000;
const dayMs = 86_400_000;
/** Monday 2026-11-02 00:00 UTC: day 0 of the synthetic history. */
const monday = Date.UTC(2026, 10, 2);

function policy(input: Record<string, unknown>): AutoscalePolicy {
  const check = resolveAutoscalePolicy(input);
  if (!check.ok) assert.fail(check.reason);
  return check.policy;
}

/** One row per minute of [fromMs, toMs) whose qps is given (none where it is 0, as gateways). */
function rows(fromMs: number, toMs: number, qpsAt: (atMs: number) => number): DemandPoint[] {
  const out: DemandPoint[] = [];
  for (let at = fromMs; at < toMs; at += minuteMs) {
    const qps = qpsAt(at);
    if (qps > 0) {
      out.push({
        minuteStart: new Date(at).toISOString(),
        arrivals: qps * 60,
        concurrencySeconds: qps * 0.05 * 60,
      });
    }
  }
  return out;
}

/** 5 qps all day, 50 qps from 09:00 to 10:00 UTC. */
function dailyPeak(atMs: number): number {
  const hour = (atMs % dayMs) / hourMs;
  return hour >= 9 && hour < 10 ? 50 : 5;
}

test('the predictive scaler raises replicas the start-up time before a learned daily peak', () => {
  const learnedAt = monday + 14 * dayMs;
  const history = rows(monday, learnedAt, dailyPeak);
  const profile = DemandProfile.learn(history, {
    signal: 'qps',
    bucketMs: 600_000,
    historyDays: 14,
    nowMs: learnedAt,
  });
  assert.equal(profile.predict(learnedAt + 9 * hourMs + 5 * minuteMs), 50);
  assert.equal(profile.predict(learnedAt + 8 * hourMs + 55 * minuteMs), 5);

  const startupSeconds = 300;
  const run = (predictive: boolean) => {
    const p = policy({
      minReplicas: 1,
      maxReplicas: 10,
      signal: 'qps',
      target: 10,
      ...(predictive ? { predictive: { startupMs: startupSeconds * 1000 } } : {}),
    });
    // The third Monday, 08:30 to 09:30, with the same daily shape as the history.
    return runStream(new Autoscaler(p), (t) => ({ qps: dailyPeak(t * 1000) }), {
      seconds: 3600,
      startSecond: (learnedAt + 8.5 * hourMs) / 1000,
      initialReplicas: 1,
      startupSeconds,
      forecast: (t) => forecastFor(p, profile, t * 1000, 30_000),
    });
  };
  const peakSecond = (learnedAt + 9 * hourMs) / 1000;
  const ahead = run(true);
  // ceil(50 / 10) = 5 replicas asked at 08:55:00 exactly (the 09:00 bucket enters [now,
  // now + 300 s]) and ready at 09:00:00 when the peak starts.
  assert.deepEqual(ahead.events[0], { t: peakSecond - startupSeconds, from: 1, to: 5 });
  assert.equal(ahead.at(peakSecond - startupSeconds - 1), 1);
  const readyAtPeak = ahead.steps.find((step) => step.t === peakSecond)!.sample.readyReplicas;
  assert.equal(readyAtPeak, 5);
  assert.match(
    ahead.steps.find((step) => step.t === peakSecond - 300)!.decision.reason,
    /predictive 5/,
  );

  const reactive = run(false);
  // Reactive alone: nothing before the peak; its replicas are ready only 5 min into it.
  assert.equal(reactive.at(peakSecond - 1), 1);
  assert.ok(reactive.events[0]!.t >= peakSecond);
  assert.equal(reactive.steps.find((step) => step.t === peakSecond)!.sample.readyReplicas, 1);
});

test('weekday history first, else the same time of day; quiet minutes count as zero', () => {
  // One week: weekdays busy (20 qps) 12:00–13:00, weekends quiet all day (no rows at all).
  const weekday = (atMs: number): number => {
    const day = Math.floor((atMs - monday) / dayMs) % 7;
    const hour = (atMs % dayMs) / hourMs;
    return day < 5 && hour >= 12 && hour < 13 ? 20 : 0;
  };
  const learnedAt = monday + 7 * dayMs;
  const profile = DemandProfile.learn(rows(monday, learnedAt, weekday), {
    signal: 'qps',
    bucketMs: hourMs,
    historyDays: 14,
    nowMs: learnedAt,
  });
  const noon = 12 * hourMs;
  assert.equal(profile.predict(learnedAt + noon), 20); // the next Monday
  assert.equal(profile.predict(learnedAt + 5 * dayMs + noon), 0); // Saturday: observed quiet
  assert.equal(profile.predict(learnedAt + 3 * hourMs), 0);

  // Three days of history (Mon–Wed): a Friday has no weekday history → same time of day.
  const short = DemandProfile.learn(rows(monday, monday + 3 * dayMs, weekday), {
    signal: 'qps',
    bucketMs: hourMs,
    historyDays: 14,
    nowMs: monday + 3 * dayMs,
  });
  assert.equal(short.predict(monday + 4 * dayMs + noon), 20);
  // Before the first row nothing was observed: no prediction at all.
  const late = DemandProfile.learn(rows(monday + noon, monday + dayMs, weekday), {
    signal: 'qps',
    bucketMs: hourMs,
    historyDays: 14,
    nowMs: monday + dayMs,
  });
  assert.equal(late.predict(monday + 7 * dayMs + 3 * hourMs), null);
});

test('a bucket is estimated by a high quantile: one odd day does not rule it', () => {
  // 20 days at 10:00 with 10 qps, one day at 200.
  const learnedAt = monday + 21 * dayMs;
  const odd = monday + 6 * dayMs;
  const profile = DemandProfile.learn(
    rows(monday, learnedAt, (at) => (at >= odd && at < odd + dayMs ? 200 : 10)),
    { signal: 'qps', bucketMs: hourMs, historyDays: 21, nowMs: learnedAt },
  );
  // Time of day over 21 days (quantile 0.9 of twenty 10s and one 200) = 10; the odd day's own
  // weekday has 3 observations [10, 10, 200] → 0.9 quantile 162.
  assert.equal(profile.predict(learnedAt + 2 * dayMs + 10 * hourMs), 10);
  assert.equal(profile.predict(learnedAt + 6 * dayMs + 10 * hourMs), 162);
});

test('concurrency profiles, history bounds, and when there is no forecast', () => {
  const learnedAt = monday + 7 * dayMs;
  const history = rows(monday - 30 * dayMs, learnedAt, dailyPeak);
  const profile = DemandProfile.learn(history, {
    signal: 'concurrency',
    bucketMs: 600_000,
    historyDays: 7,
    nowMs: learnedAt,
  });
  // concurrencySeconds = qps × 0.05 × 60 → mean concurrency qps × 0.05.
  assert.equal(profile.predict(learnedAt + 9 * hourMs), 2.5);
  const p = policy({ minReplicas: 1, maxReplicas: 5, predictive: true });
  assert.deepEqual(forecastFor(p, profile, learnedAt + 8 * hourMs + 59 * minuteMs, 120_000), {
    signalAhead: 2.5,
  });
  assert.deepEqual(forecastFor(p, profile, learnedAt + 8 * hourMs, 120_000), {
    signalAhead: 0.25,
  });
  const reactiveOnly = policy({ minReplicas: 1, maxReplicas: 5 });
  assert.equal(forecastFor(reactiveOnly, profile, learnedAt, 1000), undefined);
  const empty = DemandProfile.learn([], {
    signal: 'concurrency',
    bucketMs: 600_000,
    historyDays: 7,
    nowMs: learnedAt,
  });
  assert.equal(forecastFor(p, empty, learnedAt, 1000), undefined);
});

test('the controller-facing forecaster forecasts from the rows it is given, relearning on a fresh read', () => {
  const learnedAt = monday + 7 * dayMs;
  const history = rows(monday, learnedAt, dailyPeak);
  const forecaster = createDemandForecaster();
  const p = policy({ minReplicas: 1, maxReplicas: 9, signal: 'qps', target: 10, predictive: true });
  const before = learnedAt + 8 * hourMs + 59 * minuteMs;
  assert.deepEqual(forecaster(p, history, before, 120_000), { signalAhead: 50 });
  // The same array later in the day (the profile learned first is reused; its estimates are
  // of past days, so they still hold).
  assert.deepEqual(forecaster(p, history, before + 2 * hourMs, 120_000), { signalAhead: 5 });
  // A fresh read where the peak moved to 80 qps: learned again.
  const busier = rows(monday, learnedAt, (at) => dailyPeak(at) * (dailyPeak(at) > 5 ? 1.6 : 1));
  assert.deepEqual(forecaster(p, busier, before, 120_000), { signalAhead: 80 });
  const cpu = policy({ minReplicas: 1, maxReplicas: 9, signal: 'cpu' });
  assert.equal(forecaster(cpu, history, before, 120_000), undefined);
});
