// What a person reads: the side-by-side table and the SVG plot (well-formed XML, one panel per
// policy, names escaped), and the model file's checks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FixedReplicas } from '../../src/simulator/fixed-replicas.ts';
import { simulate } from '../../src/simulator/simulate.ts';
import { parseSimulationModel } from '../../src/simulator/simulation-model.ts';
import { renderSimulationSvg } from '../../src/simulator/simulation-plot.ts';
import { formatSimulationTable } from '../../src/simulator/simulation-table.ts';
import { serviceTimeSampler } from '../../src/simulator/service-time.ts';
import { createRandom } from '../../src/core/random.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { modelOf, ToyReactive, traceOf } from './helpers.ts';

const report = simulate({
  trace: traceOf([
    [0, 10],
    [600, 40],
    [1200, 5],
    [1800, 5],
  ]),
  model: modelOf({ kind: 'exponential', meanMs: 80 }, { slots: 2, startupMs: 3000 }),
  sloMs: 250,
  policies: [
    { name: 'fixed <3> & "co"', createRunner: () => new FixedReplicas(3), initialReplicas: 3 },
    { name: 'toy', createRunner: () => new ToyReactive(1.5, { minReplicas: 1 }) },
  ],
});

/** Checks tags nest and close, attributes are quoted, and text holds no raw `<` or `&`. */
function assertWellFormedXml(xml: string): { elements: Map<string, number> } {
  const elements = new Map<string, number>();
  const stack: string[] = [];
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let index = 0;
  let match: RegExpExecArray | null;
  while (index < xml.length && (match = token.exec(xml)) !== null) {
    index = token.lastIndex;
    const [, closing, name, , selfClosing, text] = match;
    if (text !== undefined) {
      assert.ok(!/&(?!(amp|lt|gt|quot|apos);)/.test(text), `raw & in text: ${text}`);
      continue;
    }
    if (name === undefined) continue;
    if (closing === '/') {
      assert.equal(stack.pop(), name, `</${name}> closes another element`);
    } else {
      elements.set(name, (elements.get(name) ?? 0) + 1);
      if (selfClosing !== '/') stack.push(name);
    }
  }
  assert.equal(index, xml.length, `not XML from offset ${index}: ${xml.slice(index, index + 60)}`);
  assert.deepEqual(stack, [], 'unclosed elements');
  return { elements };
}

test('the SVG is well-formed: one svg root, one panel per policy, demand, capacity and replicas each, names escaped', () => {
  const svg = renderSimulationSvg(report);
  assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
  const { elements } = assertWellFormedXml(svg.trim());
  assert.equal(elements.get('svg'), 1);
  assert.equal(elements.get('g'), 2);
  assert.equal(elements.get('polyline'), 4); // demand and replicas per panel
  assert.equal(elements.get('polygon'), 2); // capacity per panel
  assert.ok(svg.includes('fixed &lt;3&gt; &amp; &quot;co&quot;'));
  // The legend has a row of its own between the title and the plot (beside the title, a
  // long title ran under it).
  const titleY = [...svg.matchAll(/<text x="\d+" y="(\d+)" font-size="13"/g)].map((m) =>
    Number(m[1]),
  );
  const legendY = [...svg.matchAll(/<text x="\d+" y="(\d+)">demand rps</g)].map((m) =>
    Number(m[1]),
  );
  const plotY = [
    ...svg.matchAll(/<rect x="\d+" y="(\d+)" width="\d+" height="\d+" fill="none"/g),
  ].map((m) => Number(m[1]));
  assert.equal(legendY.length, 2);
  for (let i = 0; i < 2; i++) {
    assert.ok(legendY[i]! >= titleY[i]! + 13, `legend ${legendY[i]} under title ${titleY[i]}`);
    assert.ok(legendY[i]! < plotY[i]!, `legend ${legendY[i]} above the plot ${plotY[i]}`);
  }
  // Every coordinate is a finite number.
  for (const points of svg.matchAll(/points="([^"]*)"/g)) {
    for (const pair of (points[1] ?? '').split(' ')) {
      assert.match(pair, /^-?\d+(\.\d)?,-?\d+(\.\d)?$/);
    }
  }
});

test('the table has a summary line, a header and one aligned row per policy', () => {
  const text = formatSimulationTable(report);
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.length, 5);
  assert.match(lines[0] ?? '', /^trace 1800 s, \d+ requests, SLO 250 ms, 2 slot\(s\) per replica/);
  assert.match(
    lines[1] ?? '',
    /^POLICY\s+INSTANCE\s+SLO MET\s+FAILED\s+P50 MS\s+P95 MS\s+P99 MS\s+REPLICA-S/,
  );
  assert.match(lines[2] ?? '', /^fixed <3> & "co"\s+small\s+\d+\.\d{3}%\s+0\s/);
  assert.match(lines[3] ?? '', /^toy\s+small\s+\d+\.\d{3}%/);
  // Right-aligned numeric columns end at the same place as their header.
  const headerEnd = (lines[1] ?? '').indexOf('REPLICA-S') + 'REPLICA-S'.length;
  assert.match((lines[2] ?? '').slice(headerEnd - 5, headerEnd), /^ *5400$/);
});

test('model files: a valid one parses; each bad field is named', () => {
  const good = parseSimulationModel({
    concurrencyPerReplica: 4,
    serviceTimeMs: {
      kind: 'quantiles',
      points: [
        { q: 0, ms: 5 },
        { q: 0.5, ms: 10 },
        { q: 1, ms: 40 },
      ],
    },
    instanceTypes: { cpu: { startupMs: 2000, usdPerHour: 0.1 } },
  });
  assert.ok(good.ok);
  assert.equal(good.model.defaultInstanceType, 'cpu');
  const reason = (input: unknown): string => {
    const check = parseSimulationModel(input);
    assert.equal(check.ok, false);
    return check.ok ? '' : check.reason;
  };
  const base = {
    concurrencyPerReplica: 1,
    serviceTimeMs: { kind: 'constant', ms: 10 },
    instanceTypes: { a: { startupMs: 0, usdPerHour: 1 }, b: { startupMs: 0, usdPerHour: 2 } },
    defaultInstanceType: 'a',
  };
  assert.equal(reason([]), 'a model must be a JSON object');
  assert.equal(
    reason({ ...base, concurrencyPerReplica: 0 }),
    'concurrencyPerReplica must be an integer >= 1, got 0',
  );
  assert.equal(
    reason({ ...base, serviceTimeMs: { kind: 'gamma' } }),
    'serviceTimeMs: unknown kind "gamma" (one of: exponential, constant, samples, quantiles, sketch)',
  );
  assert.equal(
    reason({ ...base, serviceTimeMs: { kind: 'exponential', meanMs: -1 } }),
    'serviceTimeMs: exponential meanMs must be > 0, got -1',
  );
  assert.equal(
    reason({ ...base, instanceTypes: { a: { startupMs: -5, usdPerHour: 1 } } }),
    'instanceTypes.a.startupMs must be >= 0, got -5',
  );
  assert.equal(
    reason({ ...base, defaultInstanceType: undefined }),
    'defaultInstanceType must name one of the instanceTypes (a, b), got (missing)',
  );
  assert.equal(
    reason({ ...base, replicas: 3 }),
    'unknown field replicas (known: concurrencyPerReplica, serviceTimeMs, instanceTypes, defaultInstanceType)',
  );
});

test('service times drawn from a latency sketch keep its mean and quantiles (within 3 %)', () => {
  const source = new HistogramSketch();
  const random = createRandom(5);
  const values: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const value = 20 + -30 * Math.log(1 - random.next()); // shifted exponential, ms
    values.push(value);
    source.add(value);
  }
  const check = serviceTimeSampler({ kind: 'sketch', sketch: source.snapshot() });
  assert.ok(check.ok);
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  assert.ok(Math.abs(check.sampler.meanMs - mean) / mean < 0.03);
  const drawn = new HistogramSketch();
  const draws = createRandom(9);
  for (let i = 0; i < 20_000; i++) drawn.add(check.sampler.draw(draws));
  for (const q of [0.5, 0.9, 0.99]) {
    const want = source.quantile(q) ?? 0;
    const got = drawn.quantile(q) ?? 0;
    assert.ok(Math.abs(got - want) / want < 0.03, `q${q}: ${got} vs ${want}`);
  }
  assert.equal(
    serviceTimeSampler({ kind: 'sketch', sketch: new HistogramSketch().snapshot() }).ok,
    false,
  );
});
