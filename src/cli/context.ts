// What a command action needs from the global options: an HTTP client for --url (closed
// when the action ends) and the resolved --home.

import type { Command } from 'commander';
import { resolveHome, resolveUrl } from './config.ts';
import { KilnClient } from './http-client.ts';

export interface GlobalOptions {
  readonly url?: string;
  readonly home?: string;
}

export async function withClient<T>(
  command: Command,
  run: (client: KilnClient) => Promise<T>,
): Promise<T> {
  const client = new KilnClient(resolveUrl(command.optsWithGlobals<GlobalOptions>().url));
  try {
    return await run(client);
  } finally {
    await client.close();
  }
}

export function homeOf(command: Command): string {
  return resolveHome(command.optsWithGlobals<GlobalOptions>().home);
}
