// Per-rule counters (`ratelimit.service.rate_limit.<statsKey>.<stat>`), built once per stats key
// and kept by the rule set so a request only bumps properties (no name building per request).
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

/**
 * Stats-key suffix of a rule's overflow series: per-value statistics beyond the cap
 * (STATS_MAX_SERIES_PER_RULE) of a rule count into `ratelimit.service.rate_limit.<rule path>.overflow.<stat>`
 * (overrides into `<domain>.overflow`), so totals stay right while the series count is bounded.
 */
export const OVERFLOW_KEY_SUFFIX = '.overflow';

/** Counts every lookup whose per-value series was folded into an overflow series. */
export const SERIES_OVERFLOW_STAT = 'ratelimit.service.stats_series_overflow';

/**
 * The rule stats of one rule set, one object per stats key. A key that is not its group's own
 * (a per-value key of a detailed_metric / value_to_metric rule, whose group is the rule path,
 * or a request override's, whose group is the domain) gets its own series only while the store
 * admits it into the group; otherwise the group's overflow stats.
 */
export class RuleStatsCache {
  private readonly byKey = new Map<string, RuleStats>();
  private readonly notFound = new Map<string, Counter>();
  private overflowCounter: Counter | undefined;
  private notFoundOverflow: Counter | undefined;

  constructor(private readonly stats: StatsStore) {}

  get(key: string, group?: string): RuleStats {
    const known = this.byKey.get(key);
    if (known !== undefined) return known;
    if (group !== undefined && key !== group && !this.stats.admitSeries(group, key)) {
      // Created on first use so a registry without overflow shows no such counter.
      (this.overflowCounter ??= this.stats.counter(SERIES_OVERFLOW_STAT)).inc();
      // Cached under the overflow key (never under `key`: that would grow without bound).
      return this.get(group + OVERFLOW_KEY_SUFFIX);
    }
    const created = createRuleStats(this.stats, key);
    this.byKey.set(key, created);
    return created;
  }

  /**
   * `<domain>.domain_not_found` for a domain no rule has: the domain comes from the request, so
   * these counters are capped like per-value statistics (one group for all unknown domains);
   * beyond the cap they count into `overflow.domain_not_found`.
   */
  domainNotFound(domain: string): Counter {
    let c = this.notFound.get(domain);
    if (c !== undefined) return c;
    if (!this.stats.admitSeries(UNKNOWN_DOMAINS_GROUP, domain)) {
      (this.overflowCounter ??= this.stats.counter(SERIES_OVERFLOW_STAT)).inc();
      return (this.notFoundOverflow ??= this.stats.counter(RATE_LIMIT_STATS_PREFIX + 'overflow.domain_not_found'));
    }
    c = this.stats.counter(RATE_LIMIT_STATS_PREFIX + sanitizeStatsKey(domain) + '.domain_not_found');
    this.notFound.set(domain, c);
    return c;
  }
}

/** The series group of unknown domains (a name no rule path can have: rule paths are never empty). */
const UNKNOWN_DOMAINS_GROUP = '';

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
