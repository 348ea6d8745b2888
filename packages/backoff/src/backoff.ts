// The one backoff of both services (store reconnects, the Redis start-up wait, the xDS client,
// upstream HTTP retries in quotes). One formula family:
//
//   base(0) = initial                                    the first wait is always the initial one
//   base(n) = min(max, round(initial × multiplier^n))    n = failures so far, minus one
//
// and the wait is drawn from a range around base(n) with an injected RandomSource, so tests
// pin every delay exactly:
//
//   none           base                                 deterministic
//   full           [0, base)                            AWS "full jitter"
//   equal          [floor(base/2), base)                AWS "equal jitter": never shorter than half
//   from-initial   [initial, base)                      never shorter than the first wait (the xDS client)
//   { spread: f }  [base·(1−f), base·(1+f)]             proportional, like cenkalti/backoff's randomization factor
//
// A cap below the initial wait lets the first wait be the initial one and every later one the cap,
// as cenkalti/backoff (which upstream's start-up wait uses) does.
import type { RandomSource } from '@rls/engine';

export type Jitter = 'none' | 'full' | 'equal' | 'from-initial' | { readonly spread: number };

export interface ExponentialBackoff {
  /** First wait, ms. */
  readonly initialMs: number;
  /** Largest base wait, ms. */
  readonly maxMs: number;
  /** Growth per failure; 2 when absent. */
  readonly multiplier?: number;
  readonly jitter: Jitter;
}

/** The un-jittered wait after `failures + 1` consecutive failures (failures counted from 0). */
export function baseDelayMs(policy: ExponentialBackoff, failures: number): number {
  if (failures <= 0 || policy.initialMs <= 0) return Math.round(Math.max(0, policy.initialMs));
  const grown = policy.initialMs * Math.pow(policy.multiplier ?? 2, failures);
  // Infinity (huge failure counts) is capped like any other large value.
  return Math.round(Math.min(policy.maxMs, grown));
}

/** Milliseconds to wait after `failures + 1` consecutive failures (failures counted from 0). */
export function backoffDelayMs(policy: ExponentialBackoff, failures: number, random: RandomSource): number {
  const base = baseDelayMs(policy, failures);
  const [lo, hi] = jitterRange(policy, base);
  // random.int(n) is uniform in [0, n): the wait is uniform in [lo, hi).
  return hi > lo ? lo + random.int(hi - lo) : lo;
}

/** The half-open range [lo, hi) a jittered wait is drawn from. */
function jitterRange(policy: ExponentialBackoff, base: number): [number, number] {
  const j = policy.jitter;
  if (j === 'none') return [base, base];
  if (j === 'full') return [0, base];
  if (j === 'equal') return [Math.floor(base / 2), base];
  if (j === 'from-initial') return base > policy.initialMs ? [Math.round(policy.initialMs), base] : [base, base];
  const f = Math.min(1, Math.max(0, j.spread));
  // +1: the upper bound of a proportional spread is reachable, so a centred draw gives base exactly.
  return [Math.round(base * (1 - f)), Math.round(base * (1 + f)) + 1];
}
