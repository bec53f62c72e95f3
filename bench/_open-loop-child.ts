// The open-loop generator's process (started by openLoopInChild in bench/_open-loop.ts): reads
// its config as JSON on stdin, runs the timetable against the target with an undici pool of
// many connections, and writes the summary as JSON on stdout.

import { setTimeout as sleep } from 'node:timers/promises';

import { Pool } from 'undici';

import { runOpenLoop, summarize, type OpenLoopChildConfig } from './_open-loop.ts';

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk as string;
const config = JSON.parse(input) as OpenLoopChildConfig;

const pool = new Pool(config.origin, { connections: config.connections, pipelining: 1 });
const headers = { 'content-type': 'application/json' };
// pool.dispatch with a bare handler rather than pool.request: no response stream per
// request, about a third less client CPU per request, which on a 2-core machine is CPU the
// servers under test keep.
const send = (i: number): Promise<number> =>
  new Promise((resolve, reject) => {
    let status = 0;
    pool.dispatch(
      {
        method: 'POST',
        path: config.path,
        body: config.bodies[i % config.bodies.length] ?? '',
        headers,
      },
      {
        // The handler shape undici's Pool checks for (it rejects one without onConnect).
        onConnect: () => undefined,
        onHeaders: (statusCode) => {
          status = statusCode;
          return true;
        },
        onData: () => true,
        onComplete: () => resolve(status),
        onError: (error) => reject(error),
      },
    );
  });
// Open the connections before the clock starts, so the first second does not measure
// connection set-up (each a request the server answers, counted nowhere).
await Promise.all(
  Array.from({ length: Math.min(config.connections, 64) }, (_, i) => send(i).catch(() => 0)),
);

const result = await runOpenLoop({
  ratePerS: config.ratePerS,
  durationMs: config.durationMs,
  send,
  clock: { now: () => performance.now(), sleep: (ms) => sleep(ms) },
});
process.stdout.write(JSON.stringify(summarize(result, config.connections)));
await pool.destroy();
