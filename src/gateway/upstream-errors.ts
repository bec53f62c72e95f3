// How the gateway reads a failure talking to a replica. A failure before any response
// arrived on a connection-level error (refused, reset, socket closed: the worker died or
// was kill -9ed) means the worker never answered, so the request may go to another
// replica once, and the replica is ejected for a while. Timeouts are not retried: the
// worker may still be computing, and a retry would double the load that made it slow.

import type { UpstreamErrorReason } from './metrics.ts';

export interface UpstreamFailure {
  readonly reason: UpstreamErrorReason;
  /** The worker cannot have answered: eject it and retry elsewhere. */
  readonly connectionLost: boolean;
  readonly timedOut: boolean;
}

const refused: UpstreamFailure = { reason: 'refused', connectionLost: true, timedOut: false };
const connectTimeout: UpstreamFailure = {
  reason: 'connect_timeout',
  connectionLost: true,
  timedOut: false,
};
const reset: UpstreamFailure = { reason: 'reset', connectionLost: true, timedOut: false };
const timeout: UpstreamFailure = { reason: 'timeout', connectionLost: false, timedOut: true };
const other: UpstreamFailure = { reason: 'other', connectionLost: false, timedOut: false };

export function classifyUpstreamError(error: Error): UpstreamFailure {
  const code = (error as { code?: unknown }).code;
  switch (code) {
    case 'ECONNREFUSED':
      return refused;
    case 'UND_ERR_CONNECT_TIMEOUT':
      return connectTimeout;
    case 'ECONNRESET':
    case 'EPIPE':
    case 'ECONNABORTED':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'UND_ERR_SOCKET': // "other side closed"
    case 'UND_ERR_CLOSED':
    case 'UND_ERR_DESTROYED':
    case 'CHANNEL_CLOSED': // channel-client.ts: the worker's channel went away
      return reset;
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'CHANNEL_TIMEOUT':
      return timeout;
    default:
      return other;
  }
}
