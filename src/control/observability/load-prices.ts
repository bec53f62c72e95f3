// Where the cost price table comes from: `kiln up --prices FILE`, else `<home>/prices.json`,
// else the documented defaults (observability/cost/price-table.ts). A file that exists but is
// wrong refuses the start (KILN_PRICES_INVALID naming the entry): a chargeback priced by a
// table half understood is worse than none.

import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { kilnError } from '../../core/errors.ts';
import {
  defaultPriceTable,
  parsePriceTable,
  type PriceTable,
} from '../../observability/cost/price-table.ts';

export interface LoadedPrices {
  readonly prices: PriceTable;
  /** The file it was read from; null: the defaults. */
  readonly source: string | null;
}

async function readPrices(path: string): Promise<PriceTable> {
  const text = await readFile(path, 'utf8');
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    throw kilnError('KILN_PRICES_INVALID', {
      source: path,
      reason: `not JSON: ${(error as Error).message}`,
    });
  }
  return parsePriceTable(value, path);
}

export async function loadPrices(home: string, file?: string): Promise<LoadedPrices> {
  if (file !== undefined) {
    const path = resolve(file);
    try {
      return { prices: await readPrices(path), source: path };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw kilnError('KILN_PRICES_INVALID', { source: path, reason: 'no such file' });
      throw error;
    }
  }
  const inHome = join(home, 'prices.json');
  try {
    return { prices: await readPrices(inHome), source: inHome };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return { prices: defaultPriceTable, source: null };
}
