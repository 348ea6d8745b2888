// The statistics settings, declared in the settings schema's form so settings.ts can spread them
// into SETTING_DEFS (`...STATS_SETTING_DEFS`), and their translation into sink options. The
// mogrifier variables have names that depend on the list, so they are read from the environment
// by `resolveStatsOptions`, which also loads the metrics mapping; both report every problem.
import { def, type Env, type ValuesOf, parseBool, parseDurationMs, parseEnum, parseGoPort, parseInteger } from '@rls/settings';
import { defaultStatsMapping } from './default-prom-mapping.js';
import { DEFAULT_METRICS_MAX_CONNECTIONS, parseListenAddress, type ListenAddress } from './metrics-server.js';
import { readMogrifiers } from './mogrifiers.js';
import { loadMappingFile, type StatsMapping } from './prom-mapping.js';
import { parseExtraTags } from './stat-tags.js';
import type { StatsSinksOptions } from './stats-sinks.js';
import { DEFAULT_MAX_SERIES_PER_GROUP, type StatTags } from '@rls/engine';

const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));
const str = (raw: string): string => raw;

export const STATS_SETTING_DEFS = {
  disableStats: def({ name: 'DISABLE_STATS', default: 'false', meaning: 'true turns every statistics sink off (push, pull and the debug log).', parse: bool }),
  useStatsPush: def({
    name: 'USE_STATS_PUSH',
    aliases: ['USE_STATSD'],
    default: 'true',
    meaning: 'Push statistics in the statsd protocol to STATSD_HOST:STATSD_PORT. With push and pull both off, stats are written to the log at debug level.',
    parse: bool,
  }),
  statsdHost: def({ name: 'STATSD_HOST', default: 'localhost', meaning: 'Host of the statsd (or DogStatsD) server.', parse: str }),
  statsdPort: def({ name: 'STATSD_PORT', default: '8125', meaning: 'Port of the statsd (or DogStatsD) server (Go integer syntax, as upstream; 0 starts but cannot deliver, as upstream).', parse: (raw) => parseGoPort(raw) }),
  statsdProtocol: def({ name: 'STATSD_PROTOCOL', default: 'tcp', meaning: '`tcp` or `udp`. Stats are queued (bounded) while a TCP statsd is unreachable and the connection is retried every second.', parse: (raw) => parseEnum(raw, ['tcp', 'udp'] as const) }),
  statsFlushIntervalMs: def({
    name: 'STATS_FLUSH_INTERVAL',
    default: '10s',
    meaning: 'How often counters (as the change since the last flush, only when non-zero) and gauges are pushed (duration). Timers are sent on each observation.',
    parse: (raw) => {
      const ms = parseDurationMs(raw);
      if (ms <= 0) throw new Error('must be greater than zero');
      return ms;
    },
  }),
  extraTags: def({
    name: 'EXTRA_TAGS',
    default: '',
    meaning: 'Tags on every statistic, `k1:v1,k2:v2`. Plain statsd: appended to the name as `.__k=v` (sorted; `.`, `:`, `|` in values become `_`); DogStatsD: tags; pull metrics: labels.',
    parse: (raw): StatTags => parseExtraTags(raw),
  }),
  useTaggedStatsPush: def({
    name: 'USE_TAGGED_STATS_PUSH',
    aliases: ['USE_DOG_STATSD'],
    default: 'false',
    meaning: 'Push in the DogStatsD dialect (tags) instead of plain statsd, with the TAGGED_STATS_MOGRIFIERS rewrites. Takes the place of USE_STATS_PUSH.',
    parse: bool,
  }),
  usePullMetrics: def({ name: 'USE_PULL_METRICS', aliases: ['USE_PROMETHEUS'], default: 'false', meaning: 'Serve Prometheus metrics on PULL_METRICS_ADDR. May be combined with push (upstream allows only one sink).', parse: bool }),
  pullMetricsAddr: def({ name: 'PULL_METRICS_ADDR', aliases: ['PROMETHEUS_ADDR'], default: ':9090', meaning: 'Listen address of the metrics endpoint, `[host]:port`.', parse: (raw): ListenAddress => parseListenAddress(raw) }),
  pullMetricsPath: def({
    name: 'PULL_METRICS_PATH',
    aliases: ['PROMETHEUS_PATH'],
    default: '/metrics',
    meaning: 'Path of the metrics endpoint.',
    parse: (raw) => {
      if (!raw.startsWith('/')) throw new Error("expected a path starting with '/'");
      return raw;
    },
  }),
  pullMetricsMapperYaml: def({
    name: 'PULL_METRICS_MAPPER_YAML',
    aliases: ['PROMETHEUS_MAPPER_YAML'],
    default: '',
    meaning: 'statsd_exporter mapping file replacing the built-in mapping; errors in it stop the start-up.',
    parse: str,
  }),
  pullMetricsMaxConnections: def({
    name: 'PULL_METRICS_MAX_CONNECTIONS',
    default: String(DEFAULT_METRICS_MAX_CONNECTIONS),
    meaning: 'Most open connections of the metrics endpoint (0 = no limit); at the limit the longest idle one is closed to make room, as for HTTP_MAX_CONNECTIONS.',
    parse: (raw) => parseInteger(raw, 0),
  }),
  statsMaxSeriesPerRule: def({
    name: 'STATS_MAX_SERIES_PER_RULE',
    default: String(DEFAULT_MAX_SERIES_PER_GROUP),
    meaning:
      'Most per-value statistic sets one rule creates (detailed_metric, value_to_metric; request overrides per domain). Values beyond it count into the rule\'s `<rule path>.overflow` statistics and ratelimit.service.stats_series_overflow, so request values cannot grow memory without bound: one set costs about 1.3 KB (more with pull metrics), see "Statistics cardinality" in the docs.',
    parse: (raw) => parseInteger(raw, 1),
  }),
  pullMetricsResponseTimeAsMs: def({
    name: 'PULL_METRICS_RESPONSE_TIME_AS_MILLISECONDS',
    aliases: ['PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS'],
    default: 'false',
    meaning: 'Keep milliseconds in ratelimit_service_response_time_seconds (legacy); ignored with PULL_METRICS_MAPPER_YAML.',
    parse: bool,
  }),
} as const;

export type StatsSettings = ValuesOf<typeof STATS_SETTING_DEFS>;

export interface ResolvedStatsOptions {
  options: StatsSinksOptions;
  errors: string[];
  warnings: string[];
}

/**
 * Turns parsed settings into sink options: reads the mogrifiers (only when tagged push is on, as
 * upstream) and loads the metrics mapping (only when pull is on). Problems are returned, not
 * thrown, so settings can list them with the others.
 */
export function resolveStatsOptions(s: StatsSettings, env: Env): ResolvedStatsOptions {
  const errors: string[] = [];
  const warnings: string[] = [];
  let mogrifiers: StatsSinksOptions['push']['mogrifiers'] = [];
  if (!s.disableStats && s.useTaggedStatsPush) {
    const r = readMogrifiers(env);
    mogrifiers = r.mogrifiers;
    errors.push(...r.errors);
    warnings.push(...r.warnings);
  }
  let mapping: StatsMapping | undefined;
  if (!s.disableStats && s.usePullMetrics) {
    try {
      mapping = s.pullMetricsMapperYaml !== '' ? loadMappingFile(s.pullMetricsMapperYaml) : defaultStatsMapping(s.pullMetricsResponseTimeAsMs);
      warnings.push(...mapping.warnings.map((w) => `${mapping?.source ?? ''}: ${w}`));
      if (s.pullMetricsMapperYaml !== '' && s.pullMetricsResponseTimeAsMs) warnings.push('PULL_METRICS_RESPONSE_TIME_AS_MILLISECONDS is ignored when PULL_METRICS_MAPPER_YAML is set');
    } catch (err) {
      errors.push(err instanceof Error ? err.message : String(err));
    }
  }
  const pushMode = s.useTaggedStatsPush ? 'tagged' : s.useStatsPush ? 'statsd' : 'off';
  return {
    options: {
      disabled: s.disableStats,
      extraTags: s.extraTags,
      flushIntervalMs: s.statsFlushIntervalMs,
      push: { mode: pushMode, host: s.statsdHost, port: s.statsdPort, protocol: s.statsdProtocol, mogrifiers },
      pull:
        mapping === undefined
          ? { enabled: false }
          : { enabled: true, address: s.pullMetricsAddr, path: s.pullMetricsPath, mapping, maxConnections: s.pullMetricsMaxConnections },
    },
    errors,
    warnings,
  };
}
