// A Kiln platform for benchmarks: started in-process in a temp home, the bench model
// (fixtures/trees/bench-fraud.ubj) registered as `bench`, deployed on the endpoint `bench`,
// and waited for until a replica is ready and the gateway routes to it.

import { platformStarter } from './_compiled.ts';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { PlatformOptions, RunningPlatform } from '../src/control/start-platform.ts';
import { call, readArtifact, register } from '../test/helpers/platform.ts';

const root = new URL('../', import.meta.url).pathname;

export interface BenchPlatform {
  readonly platform: RunningPlatform;
  /** The platform's temp home. */
  readonly home: string;
  /** Absolute path of the registered model file. */
  readonly modelPath: string;
  readonly gatewayUrl: string;
  /** Base URL of the first ready replica (the worker, without the gateway). */
  readonly workerUrl: string;
  /** Closes the platform and removes its temp home. */
  close(): Promise<void>;
}

export interface BenchPlatformOptions {
  /** Prefix of the temp home's folder name. */
  readonly tempPrefix: string;
  /** Replicas to deploy; left to the platform's default when absent. */
  readonly replicas?: number;
  /** More platform options (observability: an OTLP collector's URL; gatewayProcesses). */
  readonly platform?: Partial<PlatformOptions> & { readonly gatewayProcesses?: number };
}

/** Starts the platform and deploys the bench model; on any failure closes what it started. */
export async function startBenchPlatform(options: BenchPlatformOptions): Promise<BenchPlatform> {
  const home = await mkdtemp(join(tmpdir(), options.tempPrefix));
  const platform = await (
    await platformStarter()
  )({
    home,
    host: '127.0.0.1',
    port: 0,
    gatewayPort: 0,
    dev: true,
    ...options.platform,
  });
  const close = async (): Promise<void> => {
    await platform.close();
    await rm(home, { recursive: true, force: true });
  };
  try {
    const benchModel = `${root}fixtures/trees/bench-fraud.ubj`;
    const modelPath = existsSync(benchModel)
      ? benchModel
      : `${root}fixtures/registry/xgb-binary.json`;
    const files = await readArtifact(modelPath);
    const registered = await register(platform.url, 'bench', 'xgboost', files);
    if (registered.status !== 201) throw new Error(JSON.stringify(registered.body));
    const wanted = options.replicas ?? 1;
    await call(platform.url, 'PUT', '/api/v1/endpoints/bench', {
      model: 'bench',
      ...(options.replicas === undefined ? {} : { replicas: options.replicas }),
    });
    let workerUrl = '';
    for (let i = 0; i < 600 && workerUrl === ''; i++) {
      const status = (await call(platform.url, 'GET', '/api/v1/endpoints/bench')).body as {
        status: { ready: boolean; replicas: { url: string | null; state: string }[] };
      };
      const ready = status.status.replicas.filter((r) => r.state === 'ready' && r.url);
      if (status.status.ready && ready.length >= wanted && ready[0]?.url) {
        const gw = await fetch(`${platform.gatewayUrl}/v2/models/bench/ready`);
        await gw.arrayBuffer();
        if (gw.status === 200) workerUrl = ready[0].url;
      }
      if (workerUrl === '') await new Promise((r) => setTimeout(r, 100));
    }
    if (workerUrl === '') throw new Error('the bench endpoint never became ready');
    return { platform, home, modelPath, gatewayUrl: platform.gatewayUrl, workerUrl, close };
  } catch (error) {
    await close();
    throw error;
  }
}
