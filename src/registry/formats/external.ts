// External models: Kiln routes to a server it does not run (a URL) or runs a container image
// it does not inspect. There are no files to check; the spec itself is the artifact.

import type { FormatCheck } from './artifact-file.ts';

export type ExternalProtocol = 'v2' | 'openai';

export type ExternalSpec =
  | { readonly url: string; readonly protocol: ExternalProtocol }
  | { readonly image: string; readonly protocol: ExternalProtocol };

const protocols: readonly ExternalProtocol[] = ['v2', 'openai'];
const knownKeys = new Set(['url', 'image', 'protocol']);
const maxImageChars = 512;

export function validateExternal(spec: unknown): FormatCheck {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    return {
      ok: false,
      reason:
        'an external model needs a spec object: { "url" or "image", "protocol": "v2" | "openai" }',
    };
  }
  const fields = spec as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !knownKeys.has(key));
  if (unknown.length > 0) {
    return {
      ok: false,
      reason: `external spec has unknown field(s) ${unknown.join(', ')}; allowed: url, image, protocol`,
    };
  }
  const { url, image, protocol } = fields;
  if (typeof protocol !== 'string' || !protocols.includes(protocol as ExternalProtocol)) {
    return {
      ok: false,
      reason: `external spec "protocol" must be "v2" or "openai", got ${JSON.stringify(protocol) ?? 'nothing'}`,
    };
  }
  const checkedProtocol = protocol as ExternalProtocol;
  if ((url === undefined) === (image === undefined)) {
    return {
      ok: false,
      reason:
        'external spec needs exactly one of "url" (a server to route to) or "image" (a container to run)',
    };
  }
  if (url !== undefined) {
    if (typeof url !== 'string' || !isHttpUrl(url)) {
      return {
        ok: false,
        reason: `external spec "url" must be an http:// or https:// URL, got ${JSON.stringify(url)}`,
      };
    }
    return { ok: true, info: { url, protocol: checkedProtocol } };
  }
  if (
    typeof image !== 'string' ||
    image === '' ||
    image.length > maxImageChars ||
    /\s/.test(image)
  ) {
    return {
      ok: false,
      reason: `external spec "image" must be a container image reference such as "ghcr.io/org/server:1.2", got ${JSON.stringify(image)}`,
    };
  }
  return { ok: true, info: { image, protocol: checkedProtocol } };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
