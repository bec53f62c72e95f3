// Which file a process or thread of ours starts, and with which loader. Built (`npm run
// build`: dist/, what `npm start` and a built `kiln up` run), a module's siblings are .js
// files that node runs as they are; from the sources (the tests, `npm run bench`, a checkout
// without a build) they are .ts files that need the tsx loader. The calling module's own
// extension tells which, so a compiled platform starts compiled gateways, workers and engine
// threads and never loads tsx, and a platform run from the sources starts the sources.
//
//   moduleEntry(import.meta.url, '../gateway/main')
//     from dist/control/gateway-process.js ─► dist/gateway/main.js, execArgv []
//     from src/control/gateway-process.ts  ─► src/gateway/main.ts,  execArgv --import <tsx>

import { fileURLToPath } from 'node:url';

export interface ModuleEntry {
  /** The file to start. */
  readonly url: URL;
  /** The same, as a path (what a spawned process's argv takes). */
  readonly path: string;
  /** Compiled JavaScript (true), or TypeScript run through tsx. */
  readonly compiled: boolean;
  /**
   * Node options to put before `path` in a spawned process's argv: none for compiled code;
   * `--import <tsx>` for the sources, tsx as resolved from here, so that a process started
   * from another working directory finds it too.
   */
  readonly execArgv: readonly string[];
}

/**
 * The module at `relativePath` (no extension) from the module whose `import.meta.url` is
 * `callerUrl`, in the same form as the caller: compiled beside compiled, source beside source.
 */
export function moduleEntry(callerUrl: string, relativePath: string): ModuleEntry {
  const compiled = new URL(callerUrl).pathname.endsWith('.js');
  const url = new URL(`${relativePath}${compiled ? '.js' : '.ts'}`, callerUrl);
  return {
    url,
    path: fileURLToPath(url),
    compiled,
    execArgv: compiled ? [] : ['--import', import.meta.resolve('tsx')],
  };
}

/** What `new Worker(script, { eval })` is given to run `entry` on a worker thread. */
export interface ThreadStart {
  readonly script: string | URL;
  readonly eval: boolean;
}

/**
 * How to start `entry` on a worker thread: the compiled module itself; or, from the sources,
 * a boot script that registers tsx and then imports it (a thread does not inherit the
 * process's `--import tsx`, and `Worker`'s execArgv does not take `--import`).
 */
export function threadStart(entry: ModuleEntry): ThreadStart {
  if (entry.compiled) return { script: entry.url, eval: false };
  const tsxApi = import.meta.resolve('tsx/esm/api');
  return {
    script:
      `import(${JSON.stringify(tsxApi)})` +
      `.then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.url.href)}); })`,
    eval: true,
  };
}
