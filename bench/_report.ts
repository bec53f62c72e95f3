// Shared pieces for benchmarks: percentiles, tables, GOAL lines.

export function percentile(sortedAscending: readonly number[], p: number): number {
  if (sortedAscending.length === 0) return Number.NaN;
  const index = Math.min(
    sortedAscending.length - 1,
    Math.max(0, Math.ceil((p / 100) * sortedAscending.length) - 1),
  );
  return sortedAscending[index] ?? Number.NaN;
}

export function table(
  headers: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const cells = [
    headers,
    ...rows.map((r) => r.map((c) => (typeof c === 'number' ? formatNumber(c) : c))),
  ];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) =>
          i === 0 ? String(c).padEnd(widths[i] ?? 0) : String(c).padStart(widths[i] ?? 0),
        )
        .join('  '),
    )
    .join('\n');
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(3);
}

/**
 * Prints the one machine-readable line per goal that every benchmark ends with. With a
 * `problem` (the measurement does not stand for what the goal asks: too many failed requests,
 * a rate not held), a note saying so comes first and the goal reads met=no whatever its value.
 */
export function goal(
  bench: string,
  metric: string,
  value: number,
  op: '>=' | '<=',
  target: number,
  problem: string | null = null,
): boolean {
  const met = problem === null && (op === '>=' ? value >= target : value <= target);
  const shown = Number.isFinite(value) ? Number(value.toPrecision(4)) : value;
  if (problem !== null) console.log(`note: ${bench}.${metric} reads met=no: ${problem}`);
  console.log(
    `GOAL ${bench}.${metric} value=${shown} target=${op}${target} met=${met ? 'yes' : 'no'}`,
  );
  return met;
}

/** A throughput goal is not met when more than this fraction of its requests failed. */
export const maxFailedFraction = 0.001;

export interface RequestCounts {
  readonly label: string;
  /** Requests answered or failed. */
  readonly requests: number;
  /** Non-2xx answers and transport errors. */
  readonly errors: number;
}

/**
 * Why a throughput goal measured over these runs does not count (more than 0.1 % of some
 * run's requests failed: the server answered quickly by not answering), or null.
 */
export function failureProblem(runs: readonly RequestCounts[]): string | null {
  const bad = runs.filter((r) => r.requests > 0 && r.errors / r.requests > maxFailedFraction);
  if (bad.length === 0) return null;
  const shown = bad
    .map(
      (r) =>
        `${r.label} ${r.errors} of ${r.requests} (${((100 * r.errors) / r.requests).toFixed(2)} %)`,
    )
    .join(', ');
  return `more than ${maxFailedFraction * 100} % of requests failed: ${shown}`;
}
