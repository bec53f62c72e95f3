// Opaque page tokens: base64url JSON of the cursor. Callers must treat them as opaque; a
// token that does not decode is a 400, not a crash.

import { kilnError } from '../core/errors.ts';

export function encodePageToken(cursor: Readonly<Record<string, string | number>>): string {
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

export function decodePageToken(token: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // fall through
  }
  throw kilnError('KILN_VALIDATION_FAILED', {
    reason: `pageToken ${token} is not a valid page token`,
  });
}

export function cursorString(cursor: Record<string, unknown>, key: string): string {
  const value = cursor[key];
  if (typeof value !== 'string') {
    throw kilnError('KILN_VALIDATION_FAILED', { reason: 'pageToken is not a valid page token' });
  }
  return value;
}

export function cursorNumber(cursor: Record<string, unknown>, key: string): number {
  const value = cursor[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw kilnError('KILN_VALIDATION_FAILED', { reason: 'pageToken is not a valid page token' });
  }
  return value;
}

/**
 * Turns `limit + 1` fetched rows into a page: the extra row only tells that there is more,
 * and the cursor of the last row kept becomes the next page token.
 */
export function pageOf<Row, Item>(
  rows: readonly Row[],
  limit: number,
  toItem: (row: Row) => Item,
  cursorOf: (row: Row) => Readonly<Record<string, string | number>>,
): { items: Item[]; nextPageToken: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page.map(toItem),
    nextPageToken:
      rows.length > limit && last !== undefined ? encodePageToken(cursorOf(last)) : null,
  };
}
