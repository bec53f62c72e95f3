// Placeholder for store methods still being ported to PostgreSQL (issue 17 work in progress).
// Removed once every method is implemented.

import { kilnError } from '../../core/errors.ts';

export function notImplemented<F extends (...args: never[]) => unknown>(method: string): F {
  const reject = (): Promise<never> =>
    Promise.reject(
      kilnError('KILN_INTERNAL', { reason: `PostgreSQL store: ${method} is not implemented yet` }),
    );
  return reject as unknown as F;
}
