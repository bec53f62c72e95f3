// `npm run bench -- traffic-split [calls]`: the per-request cost of the traffic split's pick,
// keyed (sticky hash) and unkeyed (random draw), and the sticky hash against two peers it was
// chosen over — sha256 truncated (node:crypto) and a 64-bit FNV-1a in 16-bit limbs — on the
// same keys. Prints ns per call; no goal line: the figure is for the docs.

import { createHash } from 'node:crypto';
import { table } from './_report.ts';
import { createRandom } from '../src/core/random.ts';
import { BUCKETS, murmur3, stickySeed } from '../src/traffic/sticky-bucket.ts';
import { compileTrafficSplit } from '../src/traffic/traffic-split.ts';

function sha256Bucket(prefix: string, key: string): number {
  return createHash('sha256').update(prefix).update(key).digest().readUInt32BE(0) % BUCKETS;
}

/** FNV-1a 64 over UTF-16 code units' low bytes (ASCII keys here), then mod BUCKETS. */
function fnv64Bucket(prefix: string, key: string): number {
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  const text = prefix + key;
  for (let i = 0; i < text.length; i++) {
    h0 ^= text.charCodeAt(i) & 0xff;
    // × 0x100000001b3: limbs p0 = 0x1b3, p2 = 0x100.
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3;
    const t2 = h2 * 0x1b3 + h0 * 0x100;
    const t3 = h3 * 0x1b3 + h1 * 0x100;
    h0 = t0 & 0xffff;
    const c1 = t1 + (t0 >>> 16);
    h1 = c1 & 0xffff;
    const c2 = t2 + Math.floor(c1 / 0x10000);
    h2 = c2 & 0xffff;
    h3 = (t3 + Math.floor(c2 / 0x10000)) & 0xffff;
  }
  return (((((h3 * 0x10000 + h2) % BUCKETS) * 0x10000 + h1) % BUCKETS) * 0x10000 + h0) % BUCKETS;
}

function nsPerCall(calls: number, body: (i: number) => number): number {
  let sink = 0;
  for (let i = 0; i < Math.min(calls, 50_000); i++) sink += body(i); // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) sink += body(i);
  const ns = Number(process.hrtime.bigint() - start) / calls;
  if (sink === -1) console.log(sink); // keep the loop's result alive
  return ns;
}

export async function run(args: readonly string[] = []): Promise<void> {
  const calls = Number(args[0] ?? 2_000_000);
  const keys = Array.from({ length: 4096 }, (_, i) => `user-${(i * 7919) % 100_000}@example.com`);
  const mask = keys.length - 1;
  const random = createRandom(1);
  const compiled = compileTrafficSplit(
    {
      endpoint: 'fraud',
      salt: 'rollout-42',
      versions: [
        { model: 'fraud', version: 3, weight: 75 },
        { model: 'fraud', version: 4, weight: 25 },
      ],
    },
    random.next,
  );
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.problems));
  const split = compiled.split;
  const seed = stickySeed('fraud', 'rollout-42');
  const prefix = 'fraud\u0000rollout-42\u0000';
  const rows: [string, number][] = [
    [
      'pick(key)   murmur3 sticky',
      nsPerCall(calls, (i) => split.pick(keys[i & mask] ?? '').version),
    ],
    ['pick(null)  random draw', nsPerCall(calls, () => split.pick(null).version)],
    ['murmur3_32 + mod', nsPerCall(calls, (i) => murmur3(keys[i & mask] ?? '', seed) % BUCKETS)],
    ['fnv1a-64 (limbs) + mod', nsPerCall(calls, (i) => fnv64Bucket(prefix, keys[i & mask] ?? ''))],
    [
      'sha256 truncated + mod',
      nsPerCall(Math.min(calls, 300_000), (i) => sha256Bucket(prefix, keys[i & mask] ?? '')),
    ],
  ];
  await Promise.resolve();
  console.log(
    `traffic split: ns per call, ${calls} calls, keys like '${keys[1] ?? ''}' (${(keys[1] ?? '').length} chars)`,
  );
  console.log(
    table(
      ['operation', 'ns/call'],
      rows.map(([n, v]) => [n, Number(v.toFixed(1))]),
    ),
  );
}
