import assert from 'node:assert/strict';

/**
 * Resolves once `check` holds, polling every few milliseconds; fails the test naming `what`
 * after ~10 s. For waiting on state a test can observe, never as a timing assertion.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  everyMs = 5,
): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  assert.fail(`timed out waiting for ${what}`);
}
