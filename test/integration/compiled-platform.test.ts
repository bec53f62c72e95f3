// The production path runs compiled JavaScript: with dist/ built (`npm run build`, here only
// if it is not fresh), `kiln up --dev` through bin/kiln.js runs dist/, and so do the gateway
// and worker processes it starts and the LLM engine threads in them (module-entry.ts). It
// serves the demo endpoints with the training libraries' reference outputs (XGBoost's
// probabilities, PyTorch's greedy tokens), and no process of the platform has tsx on its
// command line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root, startPlatformProcess } from '../cli/cli-harness.ts';

interface Expected {
  xgboost: { inputs: Array<Array<number | null>>; probabilities: number[] };
}
interface Reference {
  prompts: { name: string; ids: number[]; greedyIds: number[]; greedyText: string }[];
}

/** Polls `check` until it holds; workers load models, so allow minutes on a slow machine. */
async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** Command lines (argv joined by spaces) of the live processes, by pid. */
function commandLines(): Map<number, { argv: string; parent: number }> {
  const out = new Map<number, { argv: string; parent: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      // Field 4 of stat is the parent pid; the command name before it may hold spaces.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.set(Number(name), { argv, parent });
    } catch {
      // gone since readdir
    }
  }
  return out;
}

/** The platform's processes: `kiln up` and every descendant, and whatever names its home. */
function platformProcesses(upPid: number, home: string): Map<number, string> {
  const all = commandLines();
  const found = new Map<number, string>();
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, { argv, parent }] of all) {
      if (found.has(pid)) continue;
      if (pid === upPid || found.has(parent) || argv.includes(home)) {
        found.set(pid, argv);
        grew = true;
      }
    }
  }
  return found;
}

void test('a built kiln up --dev runs compiled processes and serves reference outputs', async () => {
  await promisify(execFile)(process.execPath, ['scripts/build.js', '--if-stale', '--no-check'], {
    cwd: root,
    timeout: 600_000,
  });
  const home = await mkdtemp(join(tmpdir(), 'kiln-compiled-'));
  // bin/kiln.js as a user runs it: no KILN_FROM_SOURCE (which the test runner sets).
  const env = { ...process.env };
  delete env['KILN_FROM_SOURCE'];
  const platform = await startPlatformProcess(home, { gateway: true, args: ['--dev'], env });
  const gatewayUrl = platform.gatewayUrl ?? '';
  let processes = new Map<number, string>();
  try {
    const expected = JSON.parse(
      await readFile(join(root, 'fixtures/registry/expected.json'), 'utf8'),
    ) as Expected;
    const rows = expected.xgboost.inputs
      .map((values, row) => ({ values, row }))
      .filter(({ values }) => values.every((v) => v !== null))
      .slice(0, 4);
    assert.equal(rows.length, 4);
    let probabilities: number[] = [];
    await waitFor(async () => {
      const response = await fetch(`${gatewayUrl}/v2/models/fraud-xgb/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          inputs: [
            { name: 'input', datatype: 'FP32', shape: [4, 5], data: rows.flatMap((r) => r.values) },
          ],
        }),
      }).catch(() => null);
      if (response?.status !== 200) return false;
      const body = (await response.json()) as { outputs: { data: number[] }[] };
      probabilities = body.outputs[0]?.data ?? [];
      return true;
    }, 'fraud-xgb to serve');
    assert.equal(probabilities.length, 4);
    rows.forEach(({ row }, i) => {
      const want = expected.xgboost.probabilities[row] ?? Number.NaN;
      assert.ok(Math.abs((probabilities[i] ?? Number.NaN) - want) < 1e-6, `row ${row}`);
    });

    // The LLM worker decodes on engine threads: PyTorch's greedy tokens for the prompt's ids.
    const reference = JSON.parse(
      await readFile(join(root, 'fixtures/llm/tiny-llama/reference.json'), 'utf8'),
    ) as Reference;
    const prompt = reference.prompts.find((p) => p.name === 'license-sentence');
    assert.ok(prompt !== undefined);
    let text: string | null = null;
    await waitFor(async () => {
      const response = await fetch(`${gatewayUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'tiny-llm',
          prompt: prompt.ids,
          max_tokens: prompt.greedyIds.length,
          temperature: 0,
        }),
      }).catch(() => null);
      if (response?.status !== 200) return false;
      text = ((await response.json()) as { choices: { text: string }[] }).choices[0]?.text ?? '';
      return true;
    }, 'tiny-llm to serve');
    assert.equal(text, prompt.greedyText);

    processes = platformProcesses(platform.pid, home);
    const lines = [...processes.values()].map((argv) => argv.replaceAll(home, '<home>'));
    const listing = lines.join('\n');
    assert.ok(
      lines.some((argv) => argv.includes(join(root, 'dist/gateway/main.js'))),
      `a compiled gateway:\n${listing}`,
    );
    assert.ok(
      lines.some((argv) => argv.includes(join(root, 'dist/worker/main.js'))),
      `compiled workers:\n${listing}`,
    );
    for (const argv of lines) {
      assert.doesNotMatch(argv, /tsx|\.ts\b/, `a process of the platform runs sources: ${argv}`);
    }
  } finally {
    assert.equal(await platform.stop(), 0, 'kiln up should stop cleanly on SIGTERM');
    // ...and so does everything it started.
    const running = (pid: number, argv: string): boolean => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim() === argv;
      } catch {
        return false;
      }
    };
    await waitFor(
      () => Promise.resolve([...processes].every(([pid, argv]) => !running(pid, argv))),
      'the platform processes to exit',
    );
    await rm(home, { recursive: true, force: true });
  }
});
