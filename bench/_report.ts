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

/** Prints the one machine-readable line per goal that every benchmark ends with. */
export function goal(
  bench: string,
  metric: string,
  value: number,
  op: '>=' | '<=',
  target: number,
): boolean {
  const met = op === '>=' ? value >= target : value <= target;
  const shown = Number.isFinite(value) ? Number(value.toPrecision(4)) : value;
  console.log(
    `GOAL ${bench}.${metric} value=${shown} target=${op}${target} met=${met ? 'yes' : 'no'}`,
  );
  return met;
}
