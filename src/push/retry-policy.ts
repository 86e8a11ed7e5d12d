/**
 * When to retry a failed push delivery, and how long to wait. Exponential backoff with
 * "equal jitter" (a uniform draw in [cap/2, cap)): receivers that came back after an outage
 * are not hit by every sender at the same instant, and the total retry window has a floor
 * (with the defaults, 12 attempts span at least ~3 minutes, so a receiver that is down for
 * a minute misses nothing).
 */

/** Deliveries of one event, the first included, before it is dropped. */
export const PUSH_MAX_ATTEMPTS = 12;
/** First retry waits up to this long, ms. */
export const PUSH_RETRY_BASE_MS = 1_000; // 1 s
/** No wait is longer than this, ms. */
export const PUSH_RETRY_MAX_MS = 60_000; // 1 min

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** Uniform in [0, 1); default Math.random. Tests pass a fixed value. */
  random?: () => number;
}

/**
 * Wait before the next try, after `attempt` tries failed (attempt ≥ 1): with
 * cap = min(maxMs, baseMs · 2^(attempt−1)), a uniform draw in [cap/2, cap), rounded down to whole ms.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions): number {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a whole number ≥ 1 (got ${attempt})`);
  if (!(opts.baseMs >= 0) || !(opts.maxMs >= 0)) throw new RangeError('baseMs and maxMs must be ≥ 0');
  // 2 ** 1100 is Infinity, which min() caps: no overflow for any attempt count.
  const cap = Math.min(opts.maxMs, opts.baseMs * 2 ** (attempt - 1));
  const r = Math.min(Math.max((opts.random ?? Math.random)(), 0), 1 - Number.EPSILON);
  return Math.floor(cap / 2 + (r * cap) / 2);
}

/**
 * True for responses worth another try: network-level failures are decided by the caller;
 * here 408, 425, 429 and 5xx retry, every other status is final (a 4xx will not fix itself).
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || (status >= 500 && status <= 599);
}
