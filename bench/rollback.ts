// `npm run bench -- rollback [rounds]`: how long `kiln rollback ENDPOINT` takes to change
// what clients get, measured from outside (issue 13: goal <= 1 s, the CLI's own start
// included). A platform in a temp home serves the traffic fixtures' v1 and v3
// (fixtures/traffic/) on one endpoint: v1 deployed, then replaced by v3, so v1 is the warm
// previous version. Each round spawns `kiln rollback` as its own process and times, from the
// spawn, the first gateway answer whose `kiln-model-version` is the other version (two
// probes keep asking the gateway meanwhile); each rollback swaps stable and previous, so the
// next round goes back. Beside it, the same switch by the API call alone (no CLI process),
// and the CLI's bare start (`kiln --version`), so the total splits into its parts.

import { platformStarter } from './_compiled.ts';
import { spawn } from 'node:child_process';
import { Agent, request } from 'undici';
import { goal, percentile, table } from './_report.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { servedBy } from '../test/helpers/model-version.ts';
import { registerSliceModels, sliceBody } from '../test/helpers/slice-models.ts';
import { TrafficApi } from '../test/helpers/traffic-api.ts';

const root = new URL('../', import.meta.url).pathname;
const ENDPOINT = 'rollback';

interface Probe {
  readonly gatewayUrl: string;
  readonly agent: Agent;
}

async function servedVersion(probe: Probe): Promise<number | null> {
  const response = await request(`${probe.gatewayUrl}/v2/models/${ENDPOINT}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: sliceBody(1),
    dispatcher: probe.agent,
  });
  await response.body.arrayBuffer();
  return response.statusCode === 200 ? servedBy(response.headers).version : null;
}

/** Resolves with the ms from `startedAt` to the first answer from another version than `from`. */
async function firstAnswerOther(probe: Probe, from: number, startedAt: number): Promise<number> {
  let done = false;
  let elapsedMs = Number.NaN;
  const deadline = startedAt + 60_000;
  const loop = async (): Promise<void> => {
    while (!done && performance.now() < deadline) {
      const version = await servedVersion(probe);
      if (!done && version !== null && version !== from) {
        done = true;
        elapsedMs = performance.now() - startedAt;
      }
    }
  };
  await Promise.all([loop(), loop()]);
  if (!done) throw new Error(`version ${from} still answers 60 s after the rollback`);
  return elapsedMs;
}

function runCli(args: readonly string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [`${root}bin/kiln.js`, ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`kiln ${args.join(' ')} exited ${code}: ${out}`)),
    );
  });
}

async function waitUntilOnly(probe: Probe, version: number): Promise<void> {
  const deadline = performance.now() + 300_000;
  let run = 0;
  while (run < 10) {
    if (performance.now() > deadline) throw new Error(`version ${version} never took all traffic`);
    run = (await servedVersion(probe)) === version ? run + 1 : 0;
    if (run === 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function run(args: readonly string[] = []): Promise<void> {
  const rounds = Number(args[0] ?? 20);
  const home = await mkdtemp(join(tmpdir(), 'kiln-bench-rollback-'));
  const platform = await (
    await platformStarter()
  )({
    home,
    host: '127.0.0.1',
    port: 0,
    gatewayPort: 0,
    dev: true,
  });
  const probe: Probe = {
    gatewayUrl: platform.gatewayUrl,
    agent: new Agent({ connections: 4, keepAliveTimeout: 60_000 }),
  };
  try {
    const api = new TrafficApi(platform.url);
    await registerSliceModels(platform.url, 'tm');
    await api.deploy(ENDPOINT, 'tm', 1);
    await waitUntilOnly(probe, 1);
    await api.deploy(ENDPOINT, 'tm', 3); // v1 becomes the warm previous version
    await waitUntilOnly(probe, 3);
    const env = { KILN_URL: platform.url, KILN_HOME: home };
    const cliStartMs: number[] = [];
    const cliMs: number[] = [];
    const apiMs: number[] = [];
    const cliSaid: string[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const via of ['cli', 'api'] as const) {
        const from = (await servedVersion(probe)) ?? Number.NaN;
        const startedAt = performance.now();
        const switched = firstAnswerOther(probe, from, startedAt);
        const command =
          via === 'cli'
            ? runCli(['rollback', ENDPOINT, '--reason', `bench round ${round}`], env)
            : api.rollback(ENDPOINT, `bench round ${round} (API)`).then(() => '');
        const [elapsedMs, said] = await Promise.all([switched, command]);
        (via === 'cli' ? cliMs : apiMs).push(elapsedMs);
        if (via === 'cli' && round === 0) cliSaid.push(said.trim());
        await waitUntilOnly(probe, from === 1 ? 3 : 1);
      }
      const startAt = performance.now();
      await runCli(['--version'], env);
      cliStartMs.push(performance.now() - startAt);
    }
    const sorted = (values: number[]): number[] => [...values].sort((a, b) => a - b);
    const row = (name: string, values: number[]): (string | number)[] => {
      const s = sorted(values);
      return [name, String(values.length), percentile(s, 50), s.at(-1) ?? Number.NaN];
    };
    console.log(`kiln rollback said (round 0): ${cliSaid[0] ?? ''}`);
    // The CLI's start is most of the total on a busy machine: say how busy it was.
    console.log(
      `${cpus().length} cores, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} at the end`,
    );
    console.log(
      table(
        ['switch (ms, to the first answer of the other version)', 'n', 'p50', 'max'],
        [
          row('kiln rollback (CLI spawned -> header changed)', cliMs),
          row('POST rollback (API call alone -> header changed)', apiMs),
          row('kiln --version (the CLI start alone)', cliStartMs),
        ],
      ),
    );
    goal('rollback', 'max_seconds', (sorted(cliMs).at(-1) ?? Number.NaN) / 1000, '<=', 1);
  } finally {
    await probe.agent.close();
    await platform.close();
    await rm(home, { recursive: true, force: true });
  }
}
