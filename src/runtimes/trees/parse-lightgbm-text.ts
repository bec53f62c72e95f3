// LightGBM's text model format split into its sections, without interpreting them:
//
//   tree                           header: key=value lines (and bare flags such as
//   version=v3                             `average_output`) up to the first blank line
//   num_class=1 ...
//
//   Tree=0                         one section per tree: key=value lines up to a blank line
//   num_leaves=3 ...
//
//   end of trees                   then feature importances and `parameters:` with one
//   parameters:                    `[name: value]` line per training parameter
//   [boosting: gbdt] ...
//   end of parameters

export interface LightgbmText {
  readonly header: ReadonlyMap<string, string>;
  readonly trees: readonly ReadonlyMap<string, string>[];
  /** Training parameters from the `parameters:` section (empty when absent). */
  readonly parameters: ReadonlyMap<string, string>;
}

export function parseLightgbmText(source: string): LightgbmText | string {
  const lines = source.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  if (lines[0]?.trim() !== 'tree') {
    return "not a LightGBM text model: the first line must be 'tree'";
  }
  const header = new Map<string, string>();
  let i = 1;
  for (; i < lines.length && (lines[i] ?? '').trim() !== ''; i += 1) {
    const line = lines[i] ?? '';
    const eq = line.indexOf('=');
    if (eq > 0) header.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
    else header.set(line.trim(), '');
  }
  const trees: Map<string, string>[] = [];
  let current: Map<string, string> | null = null;
  let ended = false;
  for (; i < lines.length; i += 1) {
    const line = (lines[i] ?? '').trim();
    if (line === 'end of trees') {
      ended = true;
      i += 1;
      break;
    }
    if (line.startsWith('Tree=')) {
      current = new Map();
      trees.push(current);
      continue;
    }
    if (line === '') {
      current = null;
      continue;
    }
    const eq = line.indexOf('=');
    if (current !== null && eq > 0) current.set(line.slice(0, eq), line.slice(eq + 1));
  }
  if (!ended) return "the 'end of trees' line is missing; the file looks truncated";
  const parameters = new Map<string, string>();
  for (; i < lines.length; i += 1) {
    const match = /^\[([^:\]]+): ?(.*)\]$/.exec((lines[i] ?? '').trim());
    if (match !== null) parameters.set(match[1] ?? '', match[2] ?? '');
  }
  return { header, trees, parameters };
}

/** Space-separated numbers; LightGBM spells non-finite values inf, -inf and nan. */
export function parseNumberList(text: string | undefined): number[] | null {
  if (text === undefined) return null;
  const trimmed = text.trim();
  if (trimmed === '') return [];
  const out: number[] = [];
  for (const token of trimmed.split(/\s+/)) {
    const value = parseLightgbmNumber(token);
    if (value === null) return null;
    out.push(value);
  }
  return out;
}

function parseLightgbmNumber(token: string): number | null {
  switch (token.toLowerCase()) {
    case 'inf':
    case '+inf':
    case 'infinity':
      return Number.POSITIVE_INFINITY;
    case '-inf':
    case '-infinity':
      return Number.NEGATIVE_INFINITY;
    case 'nan':
    case '-nan':
      return Number.NaN;
    default: {
      if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(token)) return null;
      return Number(token);
    }
  }
}
