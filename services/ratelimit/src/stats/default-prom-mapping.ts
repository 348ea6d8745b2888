// The built-in statsd → Prometheus mapping (upstream's src/stats/prom/default_mapper.yaml; docs/ratelimit.md, "Prometheus
// rules"). Written in the mapping-file format and parsed by the same loader as user files, so
// the format support is exercised by every start.
//
// Differences from the file upstream ships, on purpose:
// - the ≥3-level rules use `([^.]*)` per level and an optional tail, anchored at both ends: upstream's
//   greedy `(.*)` with a mandatory tail leaves 3-level keys (domain.k1.k2) unmapped and shifts
//   segments into `domain` for 5+ levels; unanchored, `…over_limit_with_local_cache` was also
//   added into the `over_limit` series (already counting local-cache hits) for 3+ levels.
import { parseMappingYaml, type StatsMapping } from './prom-mapping.js';

const RULE_STATS = ['near_limit', 'over_limit', 'total_hits', 'within_limit', 'shadow_mode'] as const;
/** The RLQS counters per quota rule (quota-balancer.ts: `ratelimit.rlqs.<domain>.<rule>.<stat>`). */
const RLQS_RULE_COUNTERS = ['allowed', 'denied', 'assignments', 'abandoned', 'store_fallback'] as const;

function builtInYaml(responseTimeAsMs: boolean): string {
  const lines: string[] = ['mappings:'];
  for (const stat of RULE_STATS) {
    lines.push(
      `  - match: "ratelimit.service.rate_limit.*.*.${stat}"`,
      `    name: "ratelimit_service_rate_limit_${stat}"`,
      '    observer_type: histogram',
      '    labels: { domain: "$1", key1: "$2" }',
    );
  }
  for (const stat of RULE_STATS) {
    lines.push(
      `  - match: '^ratelimit\\.service\\.rate_limit\\.([^.]*)\\.([^.]*)\\.([^.]*)(\\..*)?\\.${stat}$'`,
      '    match_type: regex',
      `    name: "ratelimit_service_rate_limit_${stat}"`,
      '    observer_type: histogram',
      '    labels: { domain: "$1", key1: "$2", key2: "$3" }',
    );
  }
  lines.push(
    '  - match: "ratelimit.service.call.should_rate_limit.*"',
    '    name: "ratelimit_service_should_rate_limit_error"',
    '    match_metric_type: counter',
    '    labels: { err_type: "$1" }',
    '  - match: "ratelimit_server.*.total_requests"',
    '    name: "ratelimit_service_total_requests"',
    '    match_metric_type: counter',
    '    labels: { grpc_method: "$1" }',
    '  - match: "ratelimit_server.*.response_time"',
    '    name: "ratelimit_service_response_time_seconds"',
    '    observer_type: histogram',
    '    labels: { grpc_method: "$1" }',
  );
  // Timers arrive in milliseconds; the metric name promises seconds.
  if (!responseTimeAsMs) lines.push('    scale: 0.001');
  // RLQS per quota rule: the domain is one segment, the rule name the rest (a rule name may hold dots, e.g. from a
  // bucket_id value). One series per rule, not per bucket: the count is bounded by the quota rules; buckets of
  // domains without rules share `ratelimit.rlqs.unknown_domain.<stat>` (domain="unknown_domain", rule="").
  for (const stat of RLQS_RULE_COUNTERS) {
    lines.push(
      `  - match: "ratelimit.rlqs.unknown_domain.${stat}"`,
      `    name: "ratelimit_rlqs_${stat}_total"`,
      '    match_metric_type: counter',
      '    labels: { domain: "unknown_domain", rule: "" }',
      `  - match: '^ratelimit\\.rlqs\\.([^.]+)\\.(.+)\\.${stat}$'`,
      '    match_type: regex',
      `    name: "ratelimit_rlqs_${stat}_total"`,
      '    match_metric_type: counter',
      '    labels: { domain: "$1", rule: "$2" }',
    );
  }
  lines.push(
    '  - match: "ratelimit.rlqs.unknown_domain.demand"',
    '    name: "ratelimit_rlqs_demand"',
    '    match_metric_type: gauge',
    '    labels: { domain: "unknown_domain", rule: "" }',
    "  - match: '^ratelimit\\.rlqs\\.([^.]+)\\.(.+)\\.demand$'",
    '    match_type: regex',
    '    name: "ratelimit_rlqs_demand"',
    '    match_metric_type: gauge',
    '    labels: { domain: "$1", rule: "$2" }',
  );
  lines.push(
    '  - match: "ratelimit.service.config_load_success"',
    '    name: "ratelimit_service_config_load_success"',
    '    match_metric_type: counter',
    '  - match: "ratelimit.service.config_load_error"',
    '    name: "ratelimit_service_config_load_error"',
    '    match_metric_type: counter',
  );
  return lines.join('\n') + '\n';
}

/** The built-in mapping; `responseTimeAsMs` is PULL_METRICS_RESPONSE_TIME_AS_MILLISECONDS. */
export function defaultStatsMapping(responseTimeAsMs: boolean): StatsMapping {
  return parseMappingYaml(builtInYaml(responseTimeAsMs), 'built-in metrics mapping');
}
