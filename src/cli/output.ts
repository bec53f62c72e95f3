// Everything the CLI prints on stdout: `--json` (the API's result, 2-space pretty JSON and
// nothing else) or human text: aligned tables with upper-case headers and `key: value`
// blocks. Pure string builders, so tests can assert on exact text.

export type Align = 'left' | 'right';

export interface Column {
  readonly header: string;
  readonly align?: Align;
}

export type Cell = string | number | null | undefined;

/** Renders rows under upper-cased headers, columns separated by two spaces, no trailing spaces. */
export function renderTable(
  columns: ReadonlyArray<string | Column>,
  rows: ReadonlyArray<readonly Cell[]>,
): string {
  const specs = columns.map((c) => (typeof c === 'string' ? { header: c } : c));
  const cells = [
    specs.map((c) => c.header.toUpperCase()),
    ...rows.map((row) => specs.map((_, i) => cellText(row[i]))),
  ];
  const widths = specs.map((_, i) => Math.max(...cells.map((row) => displayWidth(row[i] ?? ''))));
  const lines = cells.map((row) =>
    row
      .map((text, i) => {
        const pad = ' '.repeat((widths[i] ?? 0) - displayWidth(text));
        return specs[i]?.align === 'right' ? pad + text : text + pad;
      })
      .join('  ')
      .trimEnd(),
  );
  return `${lines.join('\n')}\n`;
}

/** `key: value` lines with the values aligned; undefined values are skipped, null shows as -. */
export function renderKeyValues(entries: ReadonlyArray<readonly [string, Cell]>): string {
  const shown = entries.filter(([, value]) => value !== undefined);
  const width = Math.max(0, ...shown.map(([key]) => key.length + 1));
  return (
    shown
      .map(([key, value]) => `${`${key}:`.padEnd(width)} ${cellText(value)}`.trimEnd())
      .join('\n') + '\n'
  );
}

export function cellText(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value);
}

/** Code points, so `→` and `…` count as one column. */
function displayWidth(text: string): number {
  return [...text].length;
}

const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** 0 B, 999 B, 1.00 KiB, 12.3 MiB, 512 MiB: three significant digits from 1 KiB up. */
export function humanSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return `${bytes} B`;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${bytes} B`;
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

/** ISO 8601 → `2025-01-31 14:05:09` (UTC, as the API sends it); anything else unchanged. */
export function shortTime(iso: string | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '-';
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(iso);
  return match === null ? iso : `${match[1]} ${match[2]}`;
}

/** `{b: 2, a: 1}` → `a=1, b=2` (keys sorted); empty → `-`. */
export function inlineMap(map: object | null | undefined): string {
  const entries = Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return '-';
  return entries.map(([k, v]) => `${k}=${scalarText(v)}`).join(', ');
}

function scalarText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '-';
}

export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export function writeOut(text: string): void {
  process.stdout.write(text);
}

export function printJson(value: unknown): void {
  writeOut(jsonText(value));
}

export interface JsonOption {
  readonly json?: boolean;
}

/** `--json` → the API's value as JSON; otherwise the human rendering (built only then). */
export function emit(options: JsonOption, value: unknown, human: () => string): void {
  if (options.json === true) printJson(value);
  else writeOut(human());
}
