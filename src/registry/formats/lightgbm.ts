// LightGBM artifacts: one text model saved by `Booster.save_model`. The layout:
//
//   tree                          <- first line, always
//   version=v3
//   num_class=1
//   max_feature_idx=29            <- number of features - 1
//   objective=binary sigmoid:1    <- absent for custom objectives
//   feature_names=a b c ...
//   tree_sizes=1137 1254 ...      <- byte size of each "Tree=i" section, blank lines included
//   <blank line>
//   Tree=0 ... Tree=1 ...         <- sections back to back, numbered from 0
//   end of trees
//   feature_importances: / parameters: / pandas_categorical: ...
//
// The header is read and parsed; the rest is scanned in chunks for the lines that start a
// tree and the `end of trees` line, so a multi-gigabyte model costs no more memory than its
// list of tree offsets. When tree_sizes is present, each tree must start exactly where the
// sizes say (which catches truncated and hand-edited files).

import type { ArtifactFile, FormatCheck } from './artifact-file.ts';

const headerReadBytes = 1 << 20;
const maxHeaderBytes = 64 << 20;
const scanChunkBytes = 4 << 20;
/** Bytes read past each chunk so a match that starts inside it can be read whole. */
const scanOverlapBytes = 64;
const maxFeatureNamesInInfo = 100;
const maxFeatureNameCharsInInfo = 4096;

const treeNeedle = Buffer.from('\nTree=');
const endNeedle = Buffer.from('\nend of trees');

export interface LightgbmOptions {
  /** Bytes scanned per read after the header (default 4 MiB); small in tests of chunk edges. */
  readonly scanChunkBytes?: number;
}

export async function validateLightgbm(
  files: readonly ArtifactFile[],
  options: LightgbmOptions = {},
): Promise<FormatCheck> {
  const file = await pickModelFile(files);
  if (typeof file === 'string') return { ok: false, reason: file };
  const header = await readHeader(file);
  if (typeof header === 'string')
    return { ok: false, reason: `${file.path}: ${header}`, path: file.path };
  const result = checkHeader(header.fields);
  if (typeof result === 'string') {
    return { ok: false, reason: `${file.path}: not a LightGBM model: ${result}`, path: file.path };
  }
  const chunkBytes = options.scanChunkBytes ?? scanChunkBytes;
  const trees = await scanTrees(file, header.end, header.fields.get('tree_sizes'), chunkBytes);
  if (typeof trees === 'string') {
    return { ok: false, reason: `${file.path}: ${trees}`, path: file.path };
  }
  return { ok: true, info: { ...result, numTrees: trees } };
}

/** The single file, or among several the single one whose first line is `tree`. */
async function pickModelFile(files: readonly ArtifactFile[]): Promise<ArtifactFile | string> {
  const only = files[0];
  if (files.length === 1 && only !== undefined) return only;
  const models: ArtifactFile[] = [];
  for (const file of files) {
    const head = (await file.read(0, 6)).toString('latin1');
    if (head.startsWith('tree\n') || head.startsWith('tree\r\n')) models.push(file);
  }
  const model = models[0];
  if (model !== undefined && models.length === 1) return model;
  const found = models.length === 0 ? 'none' : models.map((f) => f.path).join(', ');
  return `a LightGBM artifact needs exactly one text model file (its first line is 'tree'); found ${found} among ${files.length} files`;
}

interface Header {
  readonly fields: ReadonlyMap<string, string>;
  /** Offset of the newline that ends the blank line after the header. */
  readonly end: number;
}

async function readHeader(file: ArtifactFile): Promise<Header | string> {
  let length = Math.min(file.size, headerReadBytes);
  for (;;) {
    const bytes = await file.read(0, length);
    const blank = bytes.indexOf('\n\n');
    const blankCrlf = bytes.indexOf('\n\r\n');
    const end =
      blank >= 0 && (blankCrlf < 0 || blank < blankCrlf)
        ? blank + 1
        : blankCrlf >= 0
          ? blankCrlf + 2
          : -1;
    if (end >= 0 || bytes.length < length || length >= file.size) {
      const text = bytes.toString('utf8', 0, end >= 0 ? end : bytes.length);
      const lines = text.split('\n').map((line) => line.replace(/\r$/, ''));
      if (lines[0] !== 'tree') {
        return "not a LightGBM text model: the first line must be 'tree'";
      }
      if (end < 0)
        return 'not a LightGBM model: the header is not followed by a blank line (truncated?)';
      const fields = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const eq = line.indexOf('=');
        if (eq > 0) fields.set(line.slice(0, eq), line.slice(eq + 1));
      }
      return { fields, end };
    }
    if (length >= maxHeaderBytes) return `the header is longer than ${maxHeaderBytes >> 20} MiB`;
    length = Math.min(file.size, length * 4, maxHeaderBytes);
  }
}

function checkHeader(fields: ReadonlyMap<string, string>): Record<string, unknown> | string {
  const version = fields.get('version');
  if (version === undefined || version === '') return 'the version= line is missing';
  const numClass = integer(fields.get('num_class'));
  if (numClass === null || numClass < 1)
    return 'the num_class= line is missing or not a positive integer';
  const maxFeatureIdx = integer(fields.get('max_feature_idx'));
  if (maxFeatureIdx === null || maxFeatureIdx < 0) {
    return 'the max_feature_idx= line is missing or not a non-negative integer';
  }
  const numFeatures = maxFeatureIdx + 1;
  const info: Record<string, unknown> = {
    version,
    numClass,
    numFeatures,
    // LightGBM writes no objective= line for a custom objective; null says so.
    objective: fields.get('objective') ?? null,
  };
  const namesText = fields.get('feature_names');
  if (namesText !== undefined) {
    const names = namesText.split(' ').filter((name) => name !== '');
    if (names.length !== numFeatures) {
      return `feature_names lists ${names.length} names but max_feature_idx=${maxFeatureIdx} means ${numFeatures} features`;
    }
    if (names.length <= maxFeatureNamesInInfo && namesText.length <= maxFeatureNameCharsInInfo) {
      info['featureNames'] = names;
    }
  }
  return info;
}

/** Counts the Tree=i sections after the header; checks numbering, tree_sizes and the end. */
async function scanTrees(
  file: ArtifactFile,
  start: number,
  sizesText: string | undefined,
  chunkBytes: number,
): Promise<number | string> {
  const treeStarts: number[] = [];
  let endOfTrees = -1;
  for (let base = start; base < file.size && endOfTrees < 0; base += chunkBytes) {
    const chunk = await file.read(base, Math.min(chunkBytes + scanOverlapBytes, file.size - base));
    const owned = Math.min(chunkBytes, chunk.length);
    const endAt = chunk.indexOf(endNeedle);
    const ownedEnd = endAt >= 0 && endAt < owned ? endAt : owned;
    for (
      let at = chunk.indexOf(treeNeedle);
      at >= 0 && at < ownedEnd;
      at = chunk.indexOf(treeNeedle, at + 1)
    ) {
      const lineEnd = chunk.indexOf('\n', at + 1);
      const number = chunk
        .toString('latin1', at + treeNeedle.length, lineEnd < 0 ? chunk.length : lineEnd)
        .trim();
      if (number !== String(treeStarts.length)) {
        return `not a LightGBM model: found 'Tree=${number.slice(0, 20)}' where Tree=${treeStarts.length} was expected`;
      }
      treeStarts.push(base + at + 1);
    }
    if (endAt >= 0 && endAt < owned) endOfTrees = base + endAt + 1;
  }
  if (endOfTrees < 0) return "the 'end of trees' line is missing; the file looks truncated";
  if (sizesText === undefined) return treeStarts.length;

  const sizes = sizesText
    .split(' ')
    .filter((size) => size !== '')
    .map(Number);
  if (sizes.some((size) => !Number.isSafeInteger(size) || size <= 0)) {
    return 'not a LightGBM model: tree_sizes must list positive integers';
  }
  if (sizes.length !== treeStarts.length) {
    return `tree_sizes lists ${sizes.length} trees but the file has ${treeStarts.length} Tree= sections`;
  }
  let expected = treeStarts[0] ?? endOfTrees;
  for (let i = 0; i <= sizes.length; i += 1) {
    const actual = i < sizes.length ? (treeStarts[i] ?? -1) : endOfTrees;
    if (actual !== expected) {
      const what = i < sizes.length ? `Tree=${i}` : "'end of trees'";
      return `tree_sizes puts ${what} at byte ${expected} but it is at byte ${actual}; the trees were edited or damaged`;
    }
    expected += sizes[i] ?? 0;
  }
  return treeStarts.length;
}

function integer(text: string | undefined): number | null {
  if (text === undefined || !/^-?\d+$/.test(text.trim())) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}
