// A request-rate trace for the simulator (issue 14): when, how many requests per second.
// Two spellings of the same thing:
//
//   CSV   `t_seconds,rps` rows, a header line optional, `#` comments and blank lines skipped
//   JSON  [{"t": 0, "rps": 12.5}, {"t": 60, "rps": 14}, ...]
//
// The rate is piecewise constant: a row's rate holds from its time until the next row's, and
// the last row marks where the trace ends (its rate is not used: end a trace of minute rows
// with one more row). Times must strictly increase; rates are >= 0; at least 2 rows.
// Bad input is a value naming the line (CSV) or the entry (JSON), never an exception, so
// the CLI and the bench can render it as KILN_TRACE_INVALID.

export interface TracePoint {
  readonly tSeconds: number;
  readonly rps: number;
}

export interface Trace {
  /** Ascending by tSeconds (strictly), at least one. */
  readonly points: readonly TracePoint[];
  /** The first point's time: the simulation starts here. */
  readonly startSeconds: number;
  /** The last point's time: the simulation ends here (> startSeconds). */
  readonly endSeconds: number;
}

export type TraceCheck =
  | { readonly ok: true; readonly trace: Trace }
  | {
      readonly ok: false;
      readonly reason: string;
      /** 1-based line of the CSV text, or null for JSON (the reason names the entry). */
      readonly line: number | null;
    };

/** Most rows a trace may hold: a week of seconds is 604 800, so this leaves room. */
export const maxTracePoints = 2_000_000;
/**
 * Longest trace: a quarter (the simulator keeps a few numbers per second of it, and a
 * predictive policy's history is at most a year of which a quarter shows the weekly shape).
 */
export const maxTraceSeconds = 92 * 86_400;
/**
 * Most requests a trace may ask for (rate × time): each is simulated one by one, about a
 * second of CPU per million per policy here; the bundled week is 11 million. Beyond, a typo
 * (`1e9` rps, a time in ms) would run for hours or exhaust memory instead of being refused.
 */
export const maxTraceRequests = 200_000_000;

const numberPattern = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;
const headerPattern = /^\s*[a-z_][a-z0-9_]*\s*,\s*[a-z_][a-z0-9_]*\s*$/i;

/** Parses a trace's text (CSV or JSON, told apart by the first non-blank character). */
export function parseTrace(text: string): TraceCheck {
  const first = text.trimStart()[0];
  return first === '[' || first === '{' ? parseJsonTrace(text) : parseCsvTrace(text);
}

function parseCsvTrace(text: string): TraceCheck {
  const points: TracePoint[] = [];
  const lines = text.split(/\r?\n/);
  let sawData = false;
  for (let index = 0; index < lines.length; index++) {
    const line = index + 1;
    const raw = (lines[index] ?? '').trim();
    if (raw === '' || raw.startsWith('#')) continue;
    if (!sawData && points.length === 0 && headerPattern.test(raw)) {
      sawData = true; // a header only counts before the first row
      continue;
    }
    sawData = true;
    const fields = raw.split(',').map((f) => f.trim());
    if (fields.length !== 2) {
      return fail(
        `line ${line}: expected 2 fields t_seconds,rps, got ${fields.length}: "${raw}"`,
        line,
      );
    }
    const [tText = '', rpsText = ''] = fields;
    const checked = checkPoint(tText, rpsText, points, `line ${line}`);
    if (typeof checked === 'string') return fail(checked, line);
    points.push(checked);
    if (points.length > maxTracePoints) {
      return fail(`line ${line}: more than ${maxTracePoints} rows`, line);
    }
  }
  return finish(points);
}

function parseJsonTrace(text: string): TraceCheck {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return fail(`not valid JSON: ${(error as Error).message}`, null);
  }
  if (!Array.isArray(parsed)) {
    return fail('JSON trace must be an array of {"t": seconds, "rps": rate}', null);
  }
  if (parsed.length > maxTracePoints) return fail(`more than ${maxTracePoints} entries`, null);
  const points: TracePoint[] = [];
  for (let index = 0; index < parsed.length; index++) {
    const entry: unknown = parsed[index];
    const where = `entry ${index}`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      return fail(`${where}: expected {"t": seconds, "rps": rate}`, null);
    }
    const { t, rps } = entry as { t?: unknown; rps?: unknown };
    const checked = checkPoint(t, rps, points, where);
    if (typeof checked === 'string') return fail(checked, null);
    points.push(checked);
  }
  return finish(points);
}

/** A point, or the reason it is not one (prefixed with where it is). */
function checkPoint(
  tValue: unknown,
  rpsValue: unknown,
  before: readonly TracePoint[],
  where: string,
): TracePoint | string {
  const t = toNumber(tValue);
  if (t === undefined) return `${where}: time ${show(tValue)} is not a number`;
  const rps = toNumber(rpsValue);
  if (rps === undefined) return `${where}: rate ${show(rpsValue)} is not a number`;
  if (t < 0) return `${where}: time ${t} is negative`;
  if (rps < 0) return `${where}: rate ${rps} is negative`;
  const previous = before[before.length - 1];
  if (previous !== undefined && !(t > previous.tSeconds)) {
    return `${where}: time ${t} does not increase (previous ${previous.tSeconds})`;
  }
  return { tSeconds: t, rps };
}

function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || !numberPattern.test(value.trim())) return undefined;
  const number = Number(value.trim());
  return Number.isFinite(number) ? number : undefined;
}

function show(value: unknown): string {
  return typeof value === 'string'
    ? `"${value}"`
    : value === undefined
      ? '(missing)'
      : JSON.stringify(value);
}

function finish(points: readonly TracePoint[]): TraceCheck {
  const first = points[0];
  const last = points[points.length - 1];
  if (first === undefined || last === undefined) return fail('the trace has no rows', null);
  if (points.length < 2) {
    return fail('a trace needs at least 2 rows: the last one marks where it ends', null);
  }
  const trace = { points, startSeconds: first.tSeconds, endSeconds: last.tSeconds };
  const seconds = trace.endSeconds - trace.startSeconds;
  if (seconds > maxTraceSeconds) {
    return fail(
      `the trace lasts ${Math.round(seconds)} s, more than ${maxTraceSeconds} s (92 days); times are in seconds`,
      null,
    );
  }
  const requests = traceExpectedRequests(trace);
  if (requests > maxTraceRequests) {
    return fail(
      `the trace asks for about ${requests.toExponential(2)} requests, more than ${maxTraceRequests.toExponential(0)}; rates are requests per second`,
      null,
    );
  }
  return { ok: true, trace };
}

function fail(reason: string, line: number | null): TraceCheck {
  return { ok: false, reason, line };
}

/** The rate at time t (seconds); 0 outside the trace. */
export function traceRateAt(trace: Trace, tSeconds: number): number {
  const points = trace.points;
  if (tSeconds < trace.startSeconds || tSeconds >= trace.endSeconds) return 0;
  let low = 0;
  let high = points.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if ((points[middle]?.tSeconds ?? Infinity) <= tSeconds) low = middle;
    else high = middle - 1;
  }
  return points[low]?.rps ?? 0;
}

/** Expected requests over the whole trace (sum of rate × duration). */
export function traceExpectedRequests(trace: Trace): number {
  let total = 0;
  trace.points.forEach((point, index) => {
    const end = trace.points[index + 1]?.tSeconds ?? trace.endSeconds;
    total += point.rps * (end - point.tSeconds);
  });
  return total;
}
