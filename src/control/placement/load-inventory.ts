// Where the local backend's inventory comes from: `kiln up --inventory FILE`, else
// `<home>/inventory.json`, else this machine as one node (its CPUs and memory, no
// accelerators). A file that exists but is wrong refuses the start (KILN_INVENTORY_INVALID):
// a platform placing replicas by an inventory it half understood is worse than none.

import { readFile } from 'node:fs/promises';
import { cpus, hostname, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { kilnError } from '../../core/errors.ts';
import type { Inventory } from '../../placement/inventory.ts';
import { localInventory, parseInventory } from '../../placement/parse-inventory.ts';

export interface LoadedInventory {
  readonly inventory: Inventory;
  /** The file it was read from; null: this machine, none declared. */
  readonly source: string | null;
}

async function readJson(path: string): Promise<unknown> {
  const text = await readFile(path, 'utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw kilnError('KILN_INVENTORY_INVALID', {
      source: path,
      reason: `not JSON: ${(error as Error).message}`,
    });
  }
}

export async function loadInventory(home: string, file?: string): Promise<LoadedInventory> {
  if (file !== undefined) {
    const path = resolve(file);
    let value: unknown;
    try {
      value = await readJson(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw kilnError('KILN_INVENTORY_INVALID', { source: path, reason: 'no such file' });
      throw error;
    }
    return { inventory: parseInventory(value, path), source: path };
  }
  const inHome = join(home, 'inventory.json');
  try {
    return { inventory: parseInventory(await readJson(inHome), inHome), source: inHome };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return {
    inventory: localInventory({
      name: hostname(),
      cpus: cpus().length,
      memoryBytes: totalmem(),
    }),
    source: null,
  };
}
