import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CliError, renderError, usageError } from '../../src/cli/errors.ts';
import { buildProgram, commandPath } from '../../src/cli/program.ts';
import { resolveHome, resolveUrl } from '../../src/cli/config.ts';
import { resolve } from 'node:path';

async function commanderError(args: string[]): Promise<unknown> {
  try {
    await buildProgram().parseAsync(args, { from: 'user' });
  } catch (error) {
    return error;
  }
  return undefined;
}

void test('an API error renders as one error line and one hint line', () => {
  const error = new CliError('KILN_MODEL_NOT_FOUND', 'model nope does not exist', {
    hint: 'list models with `kiln models list`',
    status: 404,
  });
  assert.deepEqual(renderError(error), {
    text: 'error: model nope does not exist (KILN_MODEL_NOT_FOUND)\nhint: list models with `kiln models list`\n',
    exitCode: 1,
  });
});

void test('usage errors exit 2 and point at the command help', () => {
  assert.deepEqual(renderError(usageError('bad'), 'kiln models show'), {
    text: 'error: bad (KILN_USAGE)\nhint: see `kiln models show --help`\n',
    exitCode: 2,
  });
});

void test("commander's errors become one KILN_USAGE line, with its suggestion as the hint", async () => {
  const unknown = renderError(await commanderError(['models', 'lst']), 'kiln models');
  assert.equal(unknown.exitCode, 2);
  assert.equal(
    unknown.text,
    "error: unknown command 'lst' (KILN_USAGE)\nhint: did you mean list? (see `kiln models --help`)\n",
  );
  const missing = renderError(await commanderError(['models', 'show']), 'kiln models show');
  assert.equal(missing.exitCode, 2);
  assert.match(missing.text, /^error: missing required argument 'ref' \(KILN_USAGE\)\n/);
  const badChoice = renderError(
    await commanderError(['models', 'register', 'x', '--name', 'm', '--format', 'pickle']),
  );
  assert.equal(badChoice.exitCode, 2);
  assert.equal(badChoice.text.split('\n').length, 3); // error line, hint line, final newline
});

void test('unexpected errors say so without a stack trace', () => {
  const rendered = renderError(new TypeError('x is undefined'));
  assert.equal(rendered.exitCode, 1);
  assert.match(rendered.text, /^error: x is undefined \(KILN_INTERNAL\)\nhint: /);
  assert.doesNotMatch(rendered.text, /at .*\.ts:\d+/);
});

void test('the command path follows the subcommands named on the line', () => {
  const program = buildProgram();
  assert.equal(
    commandPath(program, ['--url', 'x', 'models', 'register', 'p', '--json']),
    'kiln models register',
  );
  assert.equal(commandPath(program, ['bogus']), 'kiln');
});

void test('--url beats KILN_URL beats the default; bad URLs are usage errors', () => {
  assert.equal(resolveUrl(undefined, {}), 'http://127.0.0.1:8080');
  assert.equal(resolveUrl(undefined, { KILN_URL: 'http://h:1/' }), 'http://h:1');
  assert.equal(resolveUrl('http://flag:2', { KILN_URL: 'http://h:1' }), 'http://flag:2');
  assert.throws(
    () => resolveUrl('not a url', {}),
    (e: unknown) => e instanceof CliError && e.exitCode === 2,
  );
  assert.throws(
    () => resolveUrl('ftp://x', {}),
    (e: unknown) => e instanceof CliError && e.exitCode === 2,
  );
});

void test('--home beats KILN_HOME beats ./.kiln, always absolute', () => {
  assert.equal(resolveHome(undefined, {}), resolve('.kiln'));
  assert.equal(resolveHome(undefined, { KILN_HOME: '/srv/kiln' }), '/srv/kiln');
  assert.equal(resolveHome('/x', { KILN_HOME: '/srv/kiln' }), '/x');
});
