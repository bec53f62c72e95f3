// The activator's call to the control plane: POST /api/v1/endpoints/{e}/wake with the
// gateway's token (protocol/scaling/load-report.ts), so a cold start begins with the first
// held request rather than with the next load report. One connection, bounded by
// `timeoutMs`; the outcome is a value the activator acts on (activator.ts: a retryable
// failure is tried again with backoff while requests are held).

import { Agent, request } from 'undici';
import { wakePath } from '../protocol/scaling/load-report.ts';
import type { WakeResult } from './activator.ts';

export interface WakeCallerOptions {
  /** Base URL of the control plane, asked before every call (it may move). */
  readonly controlUrl: () => string;
  /** Bearer token ('' = none), asked before every call. */
  readonly token: () => string;
  /** The longest one call may take, ms. */
  readonly timeoutMs: number;
}

export class WakeCaller {
  private readonly agent: Agent;

  constructor(private readonly options: WakeCallerOptions) {
    this.agent = new Agent({
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connectTimeout: Math.min(options.timeoutMs, 2_000),
      connections: 2,
    });
  }

  async wake(endpoint: string): Promise<WakeResult> {
    const url = this.options.controlUrl().replace(/\/+$/, '') + wakePath(endpoint);
    const token = this.options.token();
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== '') headers.authorization = `Bearer ${token}`;
    try {
      const response = await request(url, {
        method: 'POST',
        headers,
        body: '{}',
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const text = await response.body.text();
      const status = response.statusCode;
      if (status < 300) return { ok: true };
      // Refused for good (unknown endpoint, no right to wake it) or worth another try
      // (a conflict with a change in progress, overload, a control plane starting up).
      const retryable = status >= 500 || status === 408 || status === 409 || status === 429;
      return {
        ok: false,
        retryable,
        reason: `control plane answered ${status}: ${text.slice(0, 200)}`,
      };
    } catch (error) {
      return { ok: false, retryable: true, reason: (error as Error).message };
    }
  }

  close(): Promise<void> {
    return this.agent.destroy();
  }
}
