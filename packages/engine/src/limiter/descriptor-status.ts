// Status and stat arithmetic of one evaluated descriptor, identical to upstream's src/limiter/base_limiter.go
// so dashboards built on the Go service's counters keep their meaning.
import { Code, type DescriptorStatus } from '../domain.js';
import type { RuleStats } from '../config/rule-stats.js';
import type { Limit } from '../config/rule-tree.js';
import { SATURATED_COUNT } from '../store/counter-store.js';

/** floor(float32(L) * float32(ratio)), the float32 product upstream computes. */
export function nearLimitThreshold(requestsPerUnit: number, ratio: number): number {
  return Math.floor(Math.fround(Math.fround(requestsPerUnit) * Math.fround(ratio)));
}

/** The stats of a descriptor answered from the local over-limit cache. */
export function countLocalCacheAnswer(limit: Limit, stats: RuleStats, addend: number): void {
  stats.overLimit.add(addend);
  stats.overLimitWithLocalCache.add(addend);
  if (limit.shadowMode) stats.shadowMode.add(addend);
}

/** Status for a descriptor answered from the local over-limit cache. */
export function localCacheStatus(limit: Limit, stats: RuleStats, addend: number, durationUntilReset: number): DescriptorStatus {
  countLocalCacheAnswer(limit, stats, addend);
  return {
    code: limit.shadowMode ? Code.OK : Code.OVER_LIMIT,
    currentLimit: limit.currentLimit,
    limitRemaining: 0,
    durationUntilReset,
  };
}

/**
 * Status for a descriptor whose counter is `after` once this request's nominal `addend` counted
 * (SATURATED_COUNT or more: over the limit, whatever the limit).
 * The caller remembers the key locally when the returned status went over the limit
 * (`isOverLimit(after, limit)`).
 */
export function counterStatus(
  limit: Limit,
  stats: RuleStats,
  addend: number,
  after: number,
  nearLimitRatio: number,
  durationUntilReset: number,
): DescriptorStatus {
  const L = limit.requestsPerUnit;
  const N = nearLimitThreshold(L, nearLimitRatio);
  // A saturated counter (backends/counter-store.ts) is over every limit, and so was it before.
  const saturated = after >= SATURATED_COUNT;
  const before = after - addend;
  if (after > L || saturated) {
    if (saturated || before >= L) {
      stats.overLimit.add(addend);
    } else {
      // The request straddles the limit: the part above it is over, the part below is near.
      stats.overLimit.add(after - L);
      stats.nearLimit.add(L - Math.max(N, before));
    }
    if (limit.shadowMode) stats.shadowMode.add(saturated || before >= L ? addend : after - L);
    return {
      code: limit.shadowMode ? Code.OK : Code.OVER_LIMIT,
      currentLimit: limit.currentLimit,
      limitRemaining: 0,
      durationUntilReset,
    };
  }
  stats.withinLimit.add(addend);
  if (after > N) stats.nearLimit.add(before >= N ? addend : after - N);
  return { code: Code.OK, currentLimit: limit.currentLimit, limitRemaining: L - after, durationUntilReset };
}
