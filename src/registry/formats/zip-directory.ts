// Lists the entry names of a ZIP archive by reading only its end: the end-of-central-
// directory record (EOCD), the zip64 records when the archive needs them, and the central
// directory. No entry data is read.
//
//   [local headers + data ...][central directory: PK\1\2 ...][zip64 EOCD][locator][EOCD+comment]
//                             ^cdOffset                      PK\6\6      PK\6\7   PK\5\6
//
// Offsets in the records are from the archive start; when bytes were prepended to the
// archive, the directory is found instead just before the EOCD (cdOffset = eocd - cdSize).

import type { ArtifactFile } from './artifact-file.ts';

export type ZipDirectory =
  | { readonly ok: true; readonly entries: readonly string[]; readonly zip64: boolean }
  | { readonly ok: false; readonly reason: string };

const eocdBytes = 22;
const maxCommentBytes = 0xffff;
const zip64LocatorBytes = 20;
const zip64EocdBytes = 56;
const centralHeaderBytes = 46;
/** Directories larger than this are refused rather than read (about a million entries). */
const maxDirectoryBytes = 64 << 20;

export async function readZipDirectory(file: ArtifactFile): Promise<ZipDirectory> {
  const tailLength = Math.min(file.size, eocdBytes + maxCommentBytes + zip64LocatorBytes);
  const tailStart = file.size - tailLength;
  const tail = await file.read(tailStart, tailLength);
  const eocd = findEocd(tail);
  if (eocd < 0) return { ok: false, reason: 'no end-of-central-directory record' };
  let entries = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  let cdEnd = tailStart + eocd;
  let zip64 = false;

  if (entries === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const locator = eocd - zip64LocatorBytes;
    if (locator < 0 || tail.readUInt32LE(locator) !== 0x07064b50) {
      return {
        ok: false,
        reason: 'zip64 archive without a zip64 end-of-central-directory locator',
      };
    }
    const recordOffset = Number(tail.readBigUInt64LE(locator + 8));
    const recordAt = Math.min(recordOffset, tailStart + locator - zip64EocdBytes);
    if (!Number.isSafeInteger(recordAt) || recordAt < 0) {
      return { ok: false, reason: 'zip64 end-of-central-directory record is out of range' };
    }
    const record = await file.read(recordAt, zip64EocdBytes);
    if (record.length < zip64EocdBytes || record.readUInt32LE(0) !== 0x06064b50) {
      return { ok: false, reason: 'zip64 end-of-central-directory record not found' };
    }
    entries = Number(record.readBigUInt64LE(32));
    cdSize = Number(record.readBigUInt64LE(40));
    cdOffset = Number(record.readBigUInt64LE(48));
    cdEnd = recordAt;
    zip64 = true;
  }
  if (!Number.isSafeInteger(cdSize) || cdSize > maxDirectoryBytes || cdSize > cdEnd) {
    return {
      ok: false,
      reason: `central directory of ${cdSize} bytes is too large or out of range`,
    };
  }
  // Trust the recorded offset when a directory header is there; else assume prepended bytes.
  const recorded = Number.isSafeInteger(cdOffset) && cdOffset + cdSize <= cdEnd;
  let directory = recorded ? await file.read(cdOffset, cdSize) : Buffer.alloc(0);
  if (
    directory.length < Math.min(cdSize, 4) ||
    (cdSize >= 4 && directory.readUInt32LE(0) !== 0x02014b50)
  ) {
    directory = await file.read(cdEnd - cdSize, cdSize);
  }
  if (directory.length < cdSize)
    return { ok: false, reason: 'central directory runs past the end of the file' };
  return parseDirectory(directory, entries, zip64);
}

/** The EOCD nearest the end whose comment length reaches exactly to the end, else the last. */
function findEocd(tail: Buffer): number {
  let fallback = -1;
  for (let at = tail.length - eocdBytes; at >= 0; at -= 1) {
    if (tail[at] !== 0x50 || tail.readUInt32LE(at) !== 0x06054b50) continue;
    if (at + eocdBytes + tail.readUInt16LE(at + 20) === tail.length) return at;
    if (fallback < 0) fallback = at;
  }
  return fallback;
}

function parseDirectory(directory: Buffer, declared: number, zip64: boolean): ZipDirectory {
  const names: string[] = [];
  let at = 0;
  while (at + centralHeaderBytes <= directory.length && names.length < declared) {
    if (directory.readUInt32LE(at) !== 0x02014b50) {
      return { ok: false, reason: `bad central directory header at entry ${names.length}` };
    }
    const nameLength = directory.readUInt16LE(at + 28);
    const extraLength = directory.readUInt16LE(at + 30);
    const commentLength = directory.readUInt16LE(at + 32);
    const next = at + centralHeaderBytes + nameLength + extraLength + commentLength;
    if (next > directory.length)
      return { ok: false, reason: 'central directory entry runs past its end' };
    names.push(
      directory.toString('utf8', at + centralHeaderBytes, at + centralHeaderBytes + nameLength),
    );
    at = next;
  }
  if (names.length < declared) {
    return { ok: false, reason: `central directory lists ${names.length} of ${declared} entries` };
  }
  return { ok: true, entries: names, zip64 };
}
