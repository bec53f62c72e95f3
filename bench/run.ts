// `npm run bench -- <name> [args…]`: runs bench/<name>.ts. Each benchmark runs its peers side
// by side in one run, prints a readable table (ratios, p50/p95/p99), and ends with one line
// per goal: `GOAL <bench>.<metric> value=<number> target=<op><number> met=<yes|no>`.

import { readdirSync } from 'node:fs';

const here = new URL('./', import.meta.url);
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .sort();

const [name, ...args] = process.argv.slice(2);
if (name === undefined || !available.includes(name)) {
  console.error(`usage: npm run bench -- <name>   (one of: ${available.join(', ') || 'none yet'})`);
  process.exit(2);
}
const module = (await import(new URL(`./${name}.ts`, here).href)) as {
  run: (args: readonly string[]) => Promise<void>;
};
await module.run(args);
