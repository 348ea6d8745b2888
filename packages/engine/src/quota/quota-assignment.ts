// Between a quota rule and the wire: the allocator's integer unit (micro-requests per quota
// period), a reported demand in that unit, and one instance's share as the RateLimitStrategy the
// server pushes. Every conversion rounds towards less traffic, so the strategies pushed for one
// bucket never admit more than its quota per period (token buckets add their capacity once when
// they are created full, which docs/ratelimit.md, "RLQS" counts in the overshoot).
import type { RateLimitStrategyMsg } from '@rls/rls-proto';
import type { QuotaSpec } from '../config/quota-rules.js';

/** Allocator units per request. */
export const MICROS = 1_000_000;

/** `envoy.type.v3.RateLimitUnit` numbers (no WEEK there) and their lengths in seconds. */
const WIRE_UNITS: readonly { unit: number; seconds: number }[] = [
  { unit: 1, seconds: 1 },
  { unit: 2, seconds: 60 },
  { unit: 3, seconds: 3600 },
  { unit: 4, seconds: 86400 },
  { unit: 5, seconds: 2592000 },
  { unit: 6, seconds: 31536000 },
];

/** Longest fill interval chosen for resolution (seconds), unless the quota's period is longer. */
const MAX_FILL_SECONDS = 10;
/** Tokens per fill above which the fill interval is not stretched further (rounding costs under 1%). */
const FINE_TOKENS = 100;

/** The bucket's global quota in allocator units (0 for blanket strategies). */
export function quotaCapacity(q: QuotaSpec): number {
  return q.strategy === 'token_bucket' || q.strategy === 'requests_per_time_unit' ? q.requestsPerUnit * MICROS : 0;
}

/**
 * A demand of `ratePerSecond` in allocator units, rounded up (a demand is never understated) and
 * capped at the capacity (asking for more than the whole quota changes nothing in max-min).
 */
export function demandUnits(q: QuotaSpec, ratePerSecond: number): number {
  const cap = quotaCapacity(q);
  if (!(ratePerSecond > 0)) return 0;
  const units = Math.ceil(ratePerSecond * q.periodSeconds * MICROS);
  return units < cap ? units : cap;
}

/** A share in requests per second (for statistics and logs). */
export function shareRate(q: QuotaSpec, shareUnits: number): number {
  return q.periodSeconds > 0 ? shareUnits / MICROS / q.periodSeconds : 0;
}

/**
 * The strategy for an instance holding `shareUnits` of the bucket's quota. Blanket rules ignore the
 * share. A share of zero is DENY_ALL.
 *
 * token_bucket: a rate of tokens_per_fill / fill_interval, fill_interval a whole number of seconds
 * (Envoy's filter reads only the seconds of it): one period, stretched up to MAX_FILL_SECONDS while
 * that gains resolution; below one token per period, one token per ⌈period / share⌉ seconds.
 * max_tokens is the instance's part of the global burst, at least 1.
 *
 * requests_per_time_unit: the share per unit in the shortest wire unit that holds at least one
 * whole request (a share of 0.5 per second goes out as 30 per minute; a week quota per day).
 */
export function strategyForShare(q: QuotaSpec, shareUnits: number): RateLimitStrategyMsg {
  if (q.strategy === 'allow_all') return { kind: 'blanket_rule', blanketRule: 0 };
  if (q.strategy === 'deny_all' || shareUnits <= 0) return { kind: 'blanket_rule', blanketRule: 1 };
  const period = q.periodSeconds;
  if (q.strategy === 'token_bucket') {
    const cap = quotaCapacity(q);
    const maxTokens = Math.max(1, floorMulDiv(q.burst, shareUnits, cap));
    const perPeriod = Math.floor(shareUnits / MICROS);
    if (perPeriod < 1) {
      // Less than one request per period: one token every ⌈period × MICROS / share⌉ seconds.
      const fill = Math.ceil((period * MICROS) / shareUnits);
      return { kind: 'token_bucket', tokenBucket: { maxTokens, tokensPerFill: 1, fillInterval: fill } };
    }
    let k = 1;
    while (k * period < MAX_FILL_SECONDS && floorMulDiv(shareUnits, k, MICROS) < FINE_TOKENS) k++;
    const tokens = Math.min(4294967295, floorMulDiv(shareUnits, k, MICROS));
    return { kind: 'token_bucket', tokenBucket: { maxTokens, tokensPerFill: tokens, fillInterval: period * k } };
  }
  // requests_per_time_unit: the smallest wire unit at least as long as needed for one request.
  for (const u of WIRE_UNITS) {
    const n = floorMulDiv(shareUnits, u.seconds, period * MICROS);
    if (n >= 1) return { kind: 'requests_per_time_unit', requestsPerTimeUnit: n, timeUnit: u.unit };
  }
  return { kind: 'blanket_rule', blanketRule: 1 };
}

/** ⌊a × b / c⌋ for non-negative safe integers, exact where the product passes 2^53. */
export function floorMulDiv(a: number, b: number, c: number): number {
  const p = a * b;
  if (p <= Number.MAX_SAFE_INTEGER) return Math.floor(p / c) - (Math.floor(p / c) * c > p ? 1 : 0);
  return Number((BigInt(a) * BigInt(b)) / BigInt(c));
}
