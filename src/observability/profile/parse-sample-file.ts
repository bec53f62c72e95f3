// Reads a data sample for `kiln models profile --data FILE`: CSV (RFC 4180: a header row of
// column names, quoted fields with "" for a quote, CRLF or LF) or JSONL (one JSON object per
// line). Pure: text in, rows out, the first problem named with its line.

import type { Resolved } from '../resolved.ts';

export type SampleFormat = 'csv' | 'jsonl';

export type SampleRow = Readonly<Record<string, unknown>>;

/** csv or jsonl by the file's extension (.csv, .jsonl/.ndjson/.json); null when neither. */
export function sampleFormatOf(path: string): SampleFormat | null {
  const lower = path.toLowerCase();
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson') || lower.endsWith('.json')) {
    return 'jsonl';
  }
  return null;
}

export function parseSampleFile(text: string, format: SampleFormat): Resolved<SampleRow[]> {
  return format === 'csv' ? parseCsv(text) : parseJsonl(text);
}

function parseJsonl(text: string): Resolved<SampleRow[]> {
  const rows: SampleRow[] = [];
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      return { ok: false, reason: `line ${i + 1} is not JSON: ${(error as Error).message}` };
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { ok: false, reason: `line ${i + 1} must be a JSON object of column: value` };
    }
    rows.push(value as SampleRow);
  }
  if (rows.length === 0) return { ok: false, reason: 'the sample has no rows' };
  return { ok: true, value: rows };
}

function parseCsv(text: string): Resolved<SampleRow[]> {
  const records = csvRecords(text.startsWith('\uFEFF') ? text.slice(1) : text);
  if (!records.ok) return records;
  const [header, ...body] = records.value;
  if (header === undefined || (header.length === 1 && header[0] === '')) {
    return { ok: false, reason: 'the CSV has no header row' };
  }
  const seen = new Set<string>();
  for (const [i, name] of header.entries()) {
    if (name === '') return { ok: false, reason: `header column ${i + 1} has no name` };
    if (seen.has(name)) return { ok: false, reason: `header names column ${name} twice` };
    seen.add(name);
  }
  const rows: SampleRow[] = [];
  for (const [i, fields] of body.entries()) {
    if (fields.length === 1 && fields[0] === '') continue; // a blank line
    if (fields.length !== header.length) {
      return {
        ok: false,
        reason: `line ${i + 2} has ${fields.length} fields; the header has ${header.length}`,
      };
    }
    rows.push(Object.fromEntries(header.map((name, column) => [name, fields[column]])));
  }
  if (rows.length === 0) return { ok: false, reason: 'the sample has no rows' };
  return { ok: true, value: rows };
}

function csvRecords(text: string): Resolved<string[][]> {
  const records: string[][] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quoted) {
      if (char === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else {
        if (char === '\n') line++;
        field += char;
      }
      continue;
    }
    if (char === '"') {
      if (field !== '')
        return { ok: false, reason: `line ${line}: a quote inside an unquoted field` };
      quoted = true;
    } else if (char === ',') {
      fields.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[i + 1] === '\n') i++;
      fields.push(field);
      records.push(fields);
      fields = [];
      field = '';
      line++;
    } else field += char;
  }
  if (quoted) return { ok: false, reason: `line ${line}: a quoted field is not closed` };
  if (field !== '' || fields.length > 0) {
    fields.push(field);
    records.push(fields);
  }
  return { ok: true, value: records };
}
