// Where traces go: the OTLP/HTTP collector `kiln up --otlp URL` names, handed to the gateway
// and worker processes in their environment. Pure.

/** The environment variable carrying the collector's URL to the gateway and workers. */
export const otlpUrlEnv = 'KILN_OTLP_URL';

/** Why `url` cannot be an OTLP/HTTP collector's address (null: it can). */
export function otlpUrlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a URL (expected e.g. http://127.0.0.1:4318)';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `expected an http:// or https:// URL, not ${parsed.protocol}`;
  }
  return null;
}

/** The collector's traces URL: `/v1/traces` is added to a URL without a path. */
export function otlpTracesUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = '/v1/traces';
  return parsed.toString();
}
