// Per-rule counters (`ratelimit.service.rate_limit.<statsKey>.<stat>`), built once per stats key
// and kept by the rule set so a request only bumps properties (house rule 11).
import type { Counter, StatsStore } from '../stats/stats-store.js';

export interface RuleStats {
  /** The logical stats key (`domain.k1_v1.k2`), before sanitisation. */
  readonly key: string;
  readonly totalHits: Counter;
  readonly overLimit: Counter;
  readonly nearLimit: Counter;
  readonly withinLimit: Counter;
  readonly overLimitWithLocalCache: Counter;
  readonly shadowMode: Counter;
}

export const RATE_LIMIT_STATS_PREFIX = 'ratelimit.service.rate_limit.';

const IPV4 = /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/g;

/**
 * statsd-safe form of a stats key, as upstream emits it: `:` and `|` would break the statsd line
 * format, and the dots of an IPv4 address would otherwise add path segments.
 */
export function sanitizeStatsKey(key: string): string {
  return key.replace(/[:|]/g, '_').replace(IPV4, (ip) => ip.replace(/\./g, '_'));
}

export function createRuleStats(stats: StatsStore, key: string): RuleStats {
  const base = RATE_LIMIT_STATS_PREFIX + sanitizeStatsKey(key) + '.';
  return Object.freeze({
    key,
    totalHits: stats.counter(base + 'total_hits'),
    overLimit: stats.counter(base + 'over_limit'),
    nearLimit: stats.counter(base + 'near_limit'),
    withinLimit: stats.counter(base + 'within_limit'),
    overLimitWithLocalCache: stats.counter(base + 'over_limit_with_local_cache'),
    shadowMode: stats.counter(base + 'shadow_mode'),
  });
}
