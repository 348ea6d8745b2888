// Reconnect delays of the xDS client (the formula lives in @rls/backoff), and the timer seam that
// lets tests drive them.
//
// Upstream feeds XDS_CLIENT_BACKOFF_RANDOM_FACTOR (default 0.5) to jpillora/backoff as the
// exponential base, so with the defaults every retry waits the initial 10 s and never grows.
// Ours grows: the multiplier is RANDOM_FACTOR when it is greater than 1, otherwise 2.
//
//   base(n)   = min(MAX, INITIAL × multiplier^n)            n = failed attempts since the last
//                                                          stream that delivered a response
//   wait(n)   = base(n)                                    jitter off
//   wait(n)   = uniform in [INITIAL, base(n))              jitter on
//
// With the defaults (10 s, 60 s, 0.5, jitter on) the bounds are 10, 20, 40, 60, 60 … seconds.
import { backoffDelayMs as exponentialDelayMs } from '@rls/backoff';
import type { RandomSource } from '@rls/engine';

export interface BackoffPolicy {
  /** XDS_CLIENT_BACKOFF_INITIAL_INTERVAL, ms. */
  readonly initialMs: number;
  /** XDS_CLIENT_BACKOFF_MAX_INTERVAL, ms. */
  readonly maxMs: number;
  /** XDS_CLIENT_BACKOFF_RANDOM_FACTOR as configured; see effectiveMultiplier. */
  readonly factor: number;
  /** XDS_CLIENT_BACKOFF_JITTER. */
  readonly jitter: boolean;
}

/** The exponential base actually used: the configured factor when it grows the delay, else 2. */
export function effectiveMultiplier(factor: number): number {
  return factor > 1 ? factor : 2;
}

/** Milliseconds to wait before attempt `n + 1` after `n + 1` consecutive failures (n from 0). */
export function backoffDelayMs(policy: BackoffPolicy, attempt: number, random: RandomSource): number {
  return exponentialDelayMs(
    {
      initialMs: policy.initialMs,
      // A max below the initial interval means the initial interval every time.
      maxMs: Math.max(policy.maxMs, policy.initialMs),
      multiplier: effectiveMultiplier(policy.factor),
      jitter: policy.jitter ? 'from-initial' : 'none',
    },
    attempt,
    random,
  );
}

/** Timers, injectable so backoff timing is tested without waiting. */
export interface Scheduler {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realScheduler: Scheduler = {
  // Not unref'd: while the service waits for its first configuration this timer is what keeps
  // the process alive between attempts.
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};
