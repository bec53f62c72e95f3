// The local files the CLI reads and writes: --schema JSON, ed25519 keys (PEM). Every
// failure is a KILN_LOCAL_FILE error (exit 1) naming the file and what is wrong with it.

import type { KeyObject } from 'node:crypto';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { parsePrivateKey, parsePublicKey } from '../registry/signing.ts';
import type { Schema } from './api-types.ts';
import { CliError, describeFsError, localFileError } from './errors.ts';

/** Reads and shape-checks a --schema file; the platform checks datatypes and names. */
export async function readSchema(file: string): Promise<Schema> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read schema file ${file}: ${describeFsError(error)}`, error);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw localFileError(
      `schema file ${file} is not valid JSON: ${(error as Error).message}`,
      error,
    );
  }
  const candidate = parsed as { inputs?: unknown; outputs?: unknown } | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    !Array.isArray(candidate.inputs) ||
    !Array.isArray(candidate.outputs)
  ) {
    throw localFileError(`schema file ${file} must hold {"inputs": [...], "outputs": [...]}`);
  }
  return candidate as Schema;
}

export async function readSigningKey(file: string): Promise<KeyObject> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read signing key ${file}: ${describeFsError(error)}`, error);
  }
  const key = parsePrivateKey(pem);
  if (key === null) {
    throw new CliError('KILN_LOCAL_FILE', `${file} is not an ed25519 private key in PEM form`, {
      hint: 'create one with `kiln keys create NAME`',
    });
  }
  return key;
}

/** Writes both files, refusing to replace either: a lost private key cannot be recovered. */
export async function writeKeyFiles(
  dir: string,
  privatePath: string,
  privatePem: string,
  publicPath: string,
  publicPem: string,
): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw localFileError(`cannot create ${dir}: ${describeFsError(error)}`, error);
  }
  // Check both first so a clash on NAME.pub does not leave a fresh orphan NAME.key behind;
  // 'wx' still guards against a race with another writer.
  for (const path of [privatePath, publicPath]) {
    if (await exists(path)) throw alreadyExists(path);
  }
  for (const [path, pem, mode] of [
    [privatePath, privatePem, 0o600],
    [publicPath, publicPem, 0o644],
  ] as const) {
    try {
      await writeFile(path, pem, { flag: 'wx', mode });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'EEXIST') throw alreadyExists(path);
      throw localFileError(`cannot write ${path}: ${describeFsError(error)}`, error);
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

function alreadyExists(path: string): CliError {
  return new CliError('KILN_LOCAL_FILE', `${path} already exists; refusing to overwrite it`, {
    hint: 'choose another NAME or --dir, or remove the old key files first',
  });
}

export async function readPublicKey(file: string): Promise<string> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read ${file}: ${describeFsError(error)}`, error);
  }
  const key = parsePublicKey(pem);
  if (key === null) {
    throw new CliError(
      'KILN_LOCAL_FILE',
      `${file} is not an ed25519 public key in PEM (SPKI) form`,
      {
        hint: 'use the NAME.pub written by `kiln keys create NAME`',
      },
    );
  }
  return pem;
}
