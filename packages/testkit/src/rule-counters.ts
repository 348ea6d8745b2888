/** The per-rule counters the limiter keeps, in a fixed order for compact assertions. */
export type RuleCounters = Record<'total' | 'over' | 'near' | 'within' | 'local' | 'shadow', number>;

/** Counter values of one rule's stats key (`<domain>.<key path>`), read from a stats registry. */
export function ruleCounters(stats: { counterValue(name: string): number }, key: string): RuleCounters {
  const p = `ratelimit.service.rate_limit.${key}.`;
  return {
    total: stats.counterValue(p + 'total_hits'),
    over: stats.counterValue(p + 'over_limit'),
    near: stats.counterValue(p + 'near_limit'),
    within: stats.counterValue(p + 'within_limit'),
    local: stats.counterValue(p + 'over_limit_with_local_cache'),
    shadow: stats.counterValue(p + 'shadow_mode'),
  };
}
