// Brings the platform up on the embedded defaults: SQLite store and artifact store under the
// home folder, and the control-plane API. Later issues add the gateway and the reconciler
// here.

import { resolve, join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { systemClock, type Clock } from '../core/clock.ts';
import { SqliteStore } from '../store/sqlite/sqlite-store.ts';
import { ArtifactStore } from '../registry/artifact-store.ts';
import { Registry } from '../registry/registry.ts';
import type { FastifyInstance } from 'fastify';
import { buildApiServer } from './api/api-server.ts';
import { kilnVersion } from '../core/version.ts';
import { registerDemoModels } from './demo-models.ts';

export interface PlatformOptions {
  readonly home: string;
  readonly host: string;
  readonly port: number;
  readonly dev: boolean;
  /** Register the demo models into an empty registry (what `npm start` does). */
  readonly demo?: boolean;
  readonly maxUploadBytes?: number;
  readonly logger?: boolean;
  readonly clock?: Clock;
}

export interface RunningPlatform {
  readonly url: string;
  readonly registry: Registry;
  /** Names of the demo models registered at this start (empty unless `demo`). */
  readonly demoModels: readonly string[];
  close(): Promise<void>;
}

export const defaultMaxUploadBytes = 16 * 1024 ** 3;

export async function startPlatform(options: PlatformOptions): Promise<RunningPlatform> {
  const home = resolve(options.home);
  const clock = options.clock ?? systemClock;
  await mkdir(home, { recursive: true });
  const store = SqliteStore.open(join(home, 'kiln.db'), { clock });
  const artifacts = new ArtifactStore(join(home, 'artifacts'), clock);
  await artifacts.init();
  const registry = new Registry(store, artifacts);
  let demoModels: string[] = [];
  let app: FastifyInstance | undefined;
  try {
    if (options.demo === true) demoModels = await registerDemoModels(registry);
    app = await buildApiServer({
      registry,
      home,
      version: kilnVersion,
      maxUploadBytes: options.maxUploadBytes ?? defaultMaxUploadBytes,
      logger: options.logger ?? false,
    });
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    await app?.close();
    await store.close();
    throw error;
  }
  const server = app;
  const address = server.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    registry,
    demoModels,
    async close() {
      await server.close();
      await store.close();
    },
  };
}
