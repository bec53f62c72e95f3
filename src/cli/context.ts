// What a command action needs from the global options: an HTTP client for --url with the
// control-plane token (closed when the action ends) and the resolved --home.

import type { Command } from 'commander';
import { resolveHome, resolveToken, resolveUrl } from './config.ts';
import { KilnClient } from './http-client.ts';

export interface GlobalOptions {
  readonly url?: string;
  readonly home?: string;
  readonly token?: string;
}

export async function withClient<T>(
  command: Command,
  run: (client: KilnClient) => Promise<T>,
): Promise<T> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const url = resolveUrl(options.url);
  const client = new KilnClient(url, resolveToken(options.token, url, resolveHome(options.home)));
  try {
    return await run(client);
  } finally {
    await client.close();
  }
}

export function homeOf(command: Command): string {
  return resolveHome(command.optsWithGlobals<GlobalOptions>().home);
}
