// A token bucket (pure: every call takes the time, so tests drive it with a fake clock).
// It holds at most `burst` tokens and refills continuously at `ratePerSecond`; a request
// takes one token or is refused. Tokens are fractional between refills:
//
//   tokens(t) = min(burst, tokens(t0) + (t - t0) / 1000 * ratePerSecond)
//
// A bucket starts full, so a quiet team may send `burst` requests at once.

export class TokenBucket {
  private tokens: number;
  private lastMs: number;

  constructor(
    private ratePerSecond: number,
    private burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.lastMs = nowMs;
  }

  /** Takes one token if there is one; false means refuse (nothing is taken). */
  tryTake(nowMs: number): boolean {
    this.refill(nowMs);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Returns a token taken for a request that was then refused for a reason not the team's
   * (its endpoint filled while the body arrived), capped at `burst`.
   */
  giveBack(nowMs: number): void {
    this.refill(nowMs);
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  /** Whole seconds until one token is available (>= 1), for `Retry-After` after a refusal. */
  retryAfterSeconds(nowMs: number): number {
    this.refill(nowMs);
    // A rate of 0 never refills; the API refuses it, but answer something finite.
    if (!(this.ratePerSecond > 0)) return 3600;
    const missing = Math.max(0, 1 - this.tokens);
    // At most an hour: a tiny rate (1e-25/s) would otherwise print as 1e+25, not a number
    // of seconds a client can parse.
    return Math.min(3600, Math.max(1, Math.ceil(missing / this.ratePerSecond)));
  }

  /** Changes the limits in place, keeping the tokens (capped at the new burst). */
  setLimits(ratePerSecond: number, burst: number, nowMs: number): void {
    this.refill(nowMs);
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.tokens = Math.min(this.tokens, burst);
  }

  /** Tokens now (fractional). */
  available(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens;
  }

  private refill(nowMs: number): void {
    const elapsedMs = nowMs - this.lastMs;
    // A clock that goes backwards adds nothing (and does not move lastMs back).
    if (elapsedMs <= 0) return;
    this.lastMs = nowMs;
    this.tokens = Math.min(this.burst, this.tokens + (elapsedMs / 1000) * this.ratePerSecond);
  }
}
