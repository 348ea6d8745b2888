// Arithmetic of the two algorithms beyond upstream's fixed window (docs/ratelimit.md, "Algorithms
// (extension)"). Pure integer functions on the values a store returns; the limiter
// (fixed-window-limiter.ts) calls them between planning the ops and building the statuses.
import { Code, type DescriptorStatus } from '../domain.js';
import type { RuleStats } from '../config/rule-stats.js';
import type { Limit } from '../config/rule-tree.js';
import { saturate, SATURATED_COUNT } from '../store/counter-store.js';
import { nearLimitThreshold } from './descriptor-status.js';

/** floor(a × b ÷ c) exactly for non-negative integers (c > 0), also past 2^53. */
export function mulDivFloor(a: number, b: number, c: number): number {
  const prod = a * b;
  if (prod <= 2 ** 52) {
    let q = Math.floor(prod / c);
    // The double quotient may round across an integer: correct it on exact integers.
    if (q * c > prod) q -= 1;
    else if ((q + 1) * c <= prod) q += 1;
    return q;
  }
  return Number((BigInt(a) * BigInt(b)) / BigInt(c));
}

/**
 * The sliding-window estimate: floor(previous × (window − elapsed) ÷ window) + current, with
 * `elapsedMs` the time since the current window started (0 ≤ elapsedMs < windowMs). Saturated
 * inputs (or a sum past SATURATED_COUNT) give SATURATED_COUNT.
 */
export function slidingEstimate(previous: number, current: number, elapsedMs: number, windowMs: number): number {
  if (previous >= SATURATED_COUNT || current >= SATURATED_COUNT) return SATURATED_COUNT;
  return saturate(mulDivFloor(previous, windowMs - elapsedMs, windowMs) + current);
}

/**
 * When a sliding window over its limit admits one more hit (ms on the clock), assuming nothing is
 * added meanwhile (the local over-limit cache sends nothing to the store): the first instant at
 * which floor(previous × (window − elapsed) ÷ window) + current + 1 ≤ limit, or the window's end
 * when the current window alone is already over (then the next window is a new question).
 */
export function slidingAdmitsAgainAtMs(previous: number, current: number, limit: number, windowStartMs: number, windowMs: number): number {
  const end = windowStartMs + windowMs;
  if (current + 1 > limit || previous <= 0 || previous >= SATURATED_COUNT) return end;
  const room = limit - current; // ≥ 1: the previous part must fall to room − 1 or less
  if (previous < room) return windowStartMs; // already admits
  // floor(P(W − e)/W) ≤ room − 1  ⇔  P(W − e) < room·W  ⇔  e > W(P − room)/P
  const e = mulDivFloor(windowMs, previous - room, previous) + 1;
  return Math.min(end, windowStartMs + e);
}

/** What a token bucket's store result means for one descriptor (all µs integers). */
export interface BucketOutcome {
  readonly admitted: boolean;
  /** Whole tokens left after this request (0 when refused). */
  readonly remaining: number;
  /**
   * Admitted: whole seconds until the bucket is full again (0 when already full). Refused:
   * whole seconds until one hit would be admitted (at least 1 when one hit would be refused now).
   */
  readonly durationUntilReset: number;
  /** Refused and one more hit would be refused too: the clock ms until which it would be (the local cache's expiry); 0 otherwise. */
  readonly refuseOneUntilMs: number;
}

export function bucketOutcome(limit: Limit, tatUs: number, admitted: boolean, nowUs: number): BucketOutcome {
  const E = limit.emissionUs;
  const tau = limit.toleranceUs;
  if (admitted && tatUs < SATURATED_COUNT) {
    const used = Math.max(0, tatUs - nowUs);
    return { admitted: true, remaining: Math.max(0, Math.floor((tau - used) / E)), durationUntilReset: Math.ceil(used / 1_000_000), refuseOneUntilMs: 0 };
  }
  // One more hit is admitted once tat + E − now ≤ tau.
  const tat = Math.max(tatUs, nowUs);
  const waitUs = tat >= SATURATED_COUNT ? SATURATED_COUNT : tat + E - tau - nowUs;
  if (waitUs <= 0) return { admitted: false, remaining: 0, durationUntilReset: 0, refuseOneUntilMs: 0 };
  return {
    admitted: false,
    remaining: 0,
    durationUntilReset: Math.ceil(waitUs / 1_000_000),
    refuseOneUntilMs: Math.ceil((nowUs + waitUs) / 1000),
  };
}

/** Would this bucket refuse `addend` hits, given its stored TAT (0 when missing)? For STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT. */
export function bucketWouldRefuse(limit: Limit, storedTatUs: number, addend: number, nowUs: number): boolean {
  if (storedTatUs >= SATURATED_COUNT) return true;
  const tat = Math.max(storedTatUs, nowUs);
  return tat - nowUs + limit.emissionUs * addend > limit.toleranceUs;
}

/**
 * A token bucket's status and statistics. The bucket admits all of a request's hits or none, so
 * there is no straddling: admitted hits count within_limit (and near_limit for the part above
 * NEAR_LIMIT_RATIO × burst tokens in use), refused hits over_limit (and shadow_mode for a shadow rule).
 */
export function bucketStatus(limit: Limit, stats: RuleStats, addend: number, outcome: BucketOutcome, nearLimitRatio: number): DescriptorStatus {
  if (!outcome.admitted) {
    stats.overLimit.add(addend);
    if (limit.shadowMode) stats.shadowMode.add(addend);
    return {
      code: limit.shadowMode ? Code.OK : Code.OVER_LIMIT,
      currentLimit: limit.currentLimit,
      limitRemaining: 0,
      durationUntilReset: outcome.durationUntilReset,
    };
  }
  stats.withinLimit.add(addend);
  const used = limit.burst - outcome.remaining;
  const N = nearLimitThreshold(limit.burst, nearLimitRatio);
  if (used > N) stats.nearLimit.add(Math.min(addend, used - N));
  return { code: Code.OK, currentLimit: limit.currentLimit, limitRemaining: outcome.remaining, durationUntilReset: outcome.durationUntilReset };
}
