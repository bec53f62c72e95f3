// Trace parsing: the two spellings give the same trace, and every malformed trace is refused
// with a reason naming its line (CSV) or entry (JSON).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseTrace,
  traceExpectedRequests,
  traceRateAt,
  type TraceCheck,
} from '../../src/simulator/trace.ts';

function reasonOf(check: TraceCheck): { reason: string; line: number | null } {
  assert.equal(check.ok, false, 'expected the trace to be refused');
  if (check.ok) throw new Error('unreachable');
  return { reason: check.reason, line: check.line };
}

test('a CSV trace with a header, comments and blank lines parses; rates hold until the next row', () => {
  const check = parseTrace('# a test trace\nt_seconds,rps\n\n0,10\n60, 20\r\n120,5\n');
  assert.ok(check.ok);
  assert.deepEqual(check.trace.points, [
    { tSeconds: 0, rps: 10 },
    { tSeconds: 60, rps: 20 },
    { tSeconds: 120, rps: 5 },
  ]);
  assert.equal(check.trace.startSeconds, 0);
  assert.equal(check.trace.endSeconds, 120); // the last row marks the end
  assert.equal(traceRateAt(check.trace, 59.9), 10);
  assert.equal(traceRateAt(check.trace, 60), 20);
  assert.equal(traceRateAt(check.trace, 119.9), 20);
  assert.equal(traceRateAt(check.trace, 120), 0);
  assert.equal(traceExpectedRequests(check.trace), 600 + 1200);
});

test('a JSON trace parses to the same points as its CSV twin', () => {
  const json = parseTrace('[{"t": 0, "rps": 10}, {"t": 60, "rps": 20}, {"t": 120, "rps": 5}]');
  const csv = parseTrace('0,10\n60,20\n120,5\n');
  assert.ok(json.ok && csv.ok);
  assert.deepEqual(json.trace, csv.trace);
});

test('a one-row trace is refused: the last row marks the end', () => {
  assert.deepEqual(reasonOf(parseTrace('5,3\n')), {
    reason: 'a trace needs at least 2 rows: the last one marks where it ends',
    line: null,
  });
});

test('CSV errors name the line: non-numeric, negative rate, time not increasing, field count', () => {
  assert.deepEqual(reasonOf(parseTrace('t_seconds,rps\n0,10\n60,lots\n')), {
    reason: 'line 3: rate "lots" is not a number',
    line: 3,
  });
  assert.deepEqual(reasonOf(parseTrace('0,10\nsoon,5\n')), {
    reason: 'line 2: time "soon" is not a number',
    line: 2,
  });
  assert.deepEqual(reasonOf(parseTrace('0,10\n60,-1\n')), {
    reason: 'line 2: rate -1 is negative',
    line: 2,
  });
  assert.deepEqual(reasonOf(parseTrace('0,10\n60,5\n\n60,7\n')), {
    reason: 'line 4: time 60 does not increase (previous 60)',
    line: 4,
  });
  assert.deepEqual(reasonOf(parseTrace('0,10\n30,5\n20,7\n')), {
    reason: 'line 3: time 20 does not increase (previous 30)',
    line: 3,
  });
  assert.deepEqual(reasonOf(parseTrace('0,10,3\n1,1\n')), {
    reason: 'line 1: expected 2 fields t_seconds,rps, got 3: "0,10,3"',
    line: 1,
  });
  assert.deepEqual(reasonOf(parseTrace('-5,10\n1,1\n')), {
    reason: 'line 1: time -5 is negative',
    line: 1,
  });
  // A header is only a header on the first line: a later word row is an error.
  assert.equal(reasonOf(parseTrace('0,10\nt,rps\n')).line, 2);
  assert.equal(
    reasonOf(parseTrace('0,Infinity\n1,1\n')).reason,
    'line 1: rate "Infinity" is not a number',
  );
});

test('an empty trace (nothing, only a header, only comments) is refused', () => {
  for (const text of ['', '\n\n', 't_seconds,rps\n', '# nothing here\n', '[]']) {
    assert.equal(reasonOf(parseTrace(text)).reason, 'the trace has no rows', JSON.stringify(text));
  }
});

test('JSON errors name the entry', () => {
  assert.equal(
    reasonOf(parseTrace('[{"t": 0, "rps": 1}, {"t": 1}]')).reason,
    'entry 1: rate (missing) is not a number',
  );
  assert.equal(
    reasonOf(parseTrace('[{"t": 0, "rps": -2}, {"t": 1, "rps": 0}]')).reason,
    'entry 0: rate -2 is negative',
  );
  assert.equal(
    reasonOf(parseTrace('[{"t": 5, "rps": 1}, {"t": 5, "rps": 1}]')).reason,
    'entry 1: time 5 does not increase (previous 5)',
  );
  assert.equal(reasonOf(parseTrace('[3]')).reason, 'entry 0: expected {"t": seconds, "rps": rate}');
  assert.equal(
    reasonOf(parseTrace('{"t": 0}')).reason,
    'JSON trace must be an array of {"t": seconds, "rps": rate}',
  );
  assert.match(reasonOf(parseTrace('[{"t": 0,')).reason, /^not valid JSON: /);
});

test('a trace too long or too heavy to simulate is refused, not run for hours', () => {
  assert.match(
    reasonOf(parseTrace('0,5\n1e12,5\n')).reason,
    /^the trace lasts 1000000000000 s, more than 7948800 s \(92 days\)/,
  );
  assert.match(
    reasonOf(parseTrace('[{"t": 0, "rps": 1e9}, {"t": 10, "rps": 1}]')).reason,
    /^the trace asks for about 1\.00e\+10 requests, more than 2e\+8/,
  );
  // The limits leave room: a quarter at 20 rps.
  assert.ok(parseTrace(`0,20\n${92 * 86_400},0\n`).ok);
});
