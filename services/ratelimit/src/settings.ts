// Every environment variable of the rate limit service, declared once: primary name,
// upstream aliases, default, meaning. `loadSettings` parses them all at start-up, lists every bad
// variable in one error, and returns a frozen object that is passed down to the components.
// docs/ratelimit.md's settings table is generated from SETTING_DEFS
// (`npx tsx --conditions=source services/ratelimit/src/settings-doc.ts`).
import { RateLimitError } from '@rls/engine';
import { def, formatSettingsProblems, SettingsReader, type Env, type ValuesOf, clampedFloat, clampedInt, nonNegativeDurationMs, parseBool, parseDurationMs, parseEnum, parseGoPort, parseInteger } from '@rls/settings';
import { resolveStatsOptions, STATS_SETTING_DEFS } from './stats/stats-settings.js';
import { checkXdsSettings, XDS_SETTING_DEFS } from './provider/xds-settings.js';
import { checkGrpcTlsSettings, GRPC_TLS_SETTING_DEFS } from './server/tls-settings.js';
import { checkGrpcLimitSettings, GRPC_LIMIT_SETTING_DEFS } from './server/grpc-limits-settings.js';
import { TRACING_SETTING_DEFS } from './tracing/tracing-settings.js';
import { LIMIT_SETTING_DEFS } from './server/limits-settings.js';
import { checkKvstoreSettings, KVSTORE_SETTING_DEFS } from './backends/kvstore-settings.js';
import { checkMcstoreSettings, MCSTORE_SETTING_DEFS } from './backends/memcached-settings.js';
import { WORKER_SETTING_DEFS } from './cluster/worker-settings.js';
import { OPERATOR_SETTING_DEFS } from './operator/operator-settings.js';
import { DEBUG_SETTING_DEFS } from './server/debug-settings.js';
import { checkRlqsSettings, RLQS_SETTING_DEFS } from './server/rlqs-settings.js';
import type { StatsSinksOptions } from './stats/stats-sinks.js';

const str = (raw: string): string => raw;
const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));
const port = (raw: string): number => parseGoPort(raw);
const durationMs = (raw: string): number => parseDurationMs(raw);
/** EXPIRATION_JITTER_MAX_SECONDS bound: a year. */
const MAX_JITTER_SECONDS = 31_536_000;

export const SETTING_DEFS = {
  // --- listeners and logging
  host: def({ name: 'HOST', default: '0.0.0.0', meaning: 'Bind host of the HTTP/1.1 server (/json, /healthcheck).', parse: str }),
  port: def({ name: 'PORT', default: '8080', meaning: 'Port of the HTTP/1.1 server.', parse: port }),
  grpcHost: def({ name: 'GRPC_HOST', default: '0.0.0.0', meaning: 'Bind host of the gRPC server.', parse: str }),
  grpcPort: def({ name: 'GRPC_PORT', default: '8081', meaning: 'Port of the gRPC server.', parse: port }),
  grpcUds: def({
    name: 'GRPC_UDS',
    default: '',
    meaning: 'Unix socket path for the gRPC server instead of GRPC_HOST:GRPC_PORT. A socket file left by a crashed process is removed; one that something listens on is an error.',
    parse: str,
  }),
  grpcMaxConnectionAgeMs: def({
    name: 'GRPC_MAX_CONNECTION_AGE',
    default: '24h',
    meaning: 'A gRPC connection older than this (±10 % random jitter) is sent GOAWAY so the client reconnects (duration; 0 = no limit; negative is taken as 0 with a warning).',
    parse: nonNegativeDurationMs,
  }),
  grpcMaxConnectionAgeGraceMs: def({
    name: 'GRPC_MAX_CONNECTION_AGE_GRACE',
    default: '1h',
    meaning: 'After that GOAWAY, calls still open get this long, then the connection is closed (duration; negative is taken as 0 with a warning).',
    parse: nonNegativeDurationMs,
  }),
  // Retired: the node:http2 transport was removed (issue 13). Declared only so that a deployment
  // still asking for it fails at start with the reason instead of silently getting another stack.
  grpcTransport: def({
    name: 'GRPC_TRANSPORT',
    default: 'lean',
    meaning:
      'Retired. The gRPC server always runs on its own HTTP/2 stack (`lean`, the only value accepted); `node` (node:http2) was removed and is refused at start.',
    parse: (raw: string) => {
      if (raw === 'node') throw new Error('the node:http2 transport was removed; unset GRPC_TRANSPORT (the lean HTTP/2 transport is the only one)');
      return parseEnum(raw, ['lean'] as const);
    },
  }),
  ...GRPC_TLS_SETTING_DEFS,
  ...GRPC_LIMIT_SETTING_DEFS,
  ...RLQS_SETTING_DEFS,
  ...LIMIT_SETTING_DEFS,
  logLevel: def({
    name: 'LOG_LEVEL',
    default: 'WARN',
    meaning: 'Log level: trace, debug, info, warn (warning), error, fatal or panic; case-insensitive.',
    parse: (raw) => {
      const v = raw.trim().toLowerCase();
      const map: Record<string, string> = { trace: 'trace', debug: 'debug', info: 'info', warn: 'warn', warning: 'warn', error: 'error', fatal: 'fatal', panic: 'fatal' };
      const lvl = map[v];
      if (lvl === undefined) throw new Error('expected one of trace, debug, info, warn, error, fatal, panic');
      return lvl as 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
    },
  }),
  debugHost: def({ name: 'DEBUG_HOST', default: '0.0.0.0', meaning: 'Bind host of the debug server (/rlconfig, /stats, /debug/pprof/, /operator/). All interfaces, as upstream; DEBUG_ACCESS decides which peers are answered (by default loopback ones only). The quick start binds it to 127.0.0.1 (profiles and heap snapshots expose process memory).', parse: str }),
  debugPort: def({ name: 'DEBUG_PORT', default: '6070', meaning: 'Port of the debug server.', parse: port }),
  ...DEBUG_SETTING_DEFS,
  ...OPERATOR_SETTING_DEFS,
  shutdownDrainDelayMs: def({
    name: 'SHUTDOWN_DRAIN_DELAY',
    default: '0s',
    meaning:
      'On SIGTERM health turns unhealthy at once; the listeners keep serving for this long before they stop accepting (duration), so load balancers and Envoy health checks can take the instance out first. 0 stops at once, as upstream; on Kubernetes set it a little above the time your health checks need to notice (e.g. 5s) instead of a preStop sleep.',
    parse: durationMs,
  }),
  shutdownTimeoutMs: def({
    name: 'SHUTDOWN_TIMEOUT',
    default: '15s',
    meaning:
      'Bound on the shutdown after the drain delay (duration): in-flight gRPC and HTTP requests get this long minus a reserve of up to 3 s (connections still open then are closed), then the store connections close, the last stats are pushed and the traces flushed. The process exits 0, or 1 if the bound was hit.',
    parse: (raw) => {
      const ms = parseDurationMs(raw);
      if (ms <= 0) throw new Error('must be greater than zero');
      return ms;
    },
  }),
  logFormat: def({
    name: 'LOG_FORMAT',
    default: 'text',
    meaning: '`text` (`time=… level=… msg=…`) or `json` (`@timestamp`, `@message`, `level`). Any other value means `text` (with a warning), as upstream.',
    parse: (raw, ctx) => {
      const v = raw.trim().toLowerCase();
      if (v === 'json') return 'json' as const;
      if (v !== 'text') ctx.clamp('text', 'not json');
      return 'text' as const;
    },
  }),

  // --- configuration source
  configType: def({
    name: 'CONFIG_TYPE',
    default: 'FILE',
    meaning:
      'Where rules come from. `FILE` reads YAML files under RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY; `GRPC_XDS_SOTW` receives RateLimitConfig resources from an xDS (ADS) management server.',
    parse: (raw) => {
      return parseEnum(raw, ['FILE', 'GRPC_XDS_SOTW'] as const);
    },
  }),
  runtimeRoot: def({ name: 'RUNTIME_ROOT', default: '/srv/runtime_data/current', meaning: 'Root of the rule tree.', parse: str }),
  runtimeSubdirectory: def({ name: 'RUNTIME_SUBDIRECTORY', default: '', meaning: 'Subdirectory of RUNTIME_ROOT.', parse: str }),
  runtimeAppDirectory: def({ name: 'RUNTIME_APPDIRECTORY', default: 'config', meaning: 'Directory (under the subdirectory) whose files are rule files.', parse: str }),
  runtimeIgnoreDotfiles: def({ name: 'RUNTIME_IGNOREDOTFILES', default: 'false', meaning: 'Skip files and directories whose name starts with a dot. Names starting with `..` (Kubernetes ConfigMap bookkeeping: `..data`, `..<timestamp>`) are always skipped.', parse: bool }),
  runtimeWatchRoot: def({
    name: 'RUNTIME_WATCH_ROOT',
    default: 'true',
    meaning: '`true`: reload when RUNTIME_ROOT is re-pointed to another directory (symlink swap or rename; its parent directory is watched). `false`: reload when an entry of the application directory is written, created, chmod-ed, renamed or removed.',
    parse: bool,
  }),
  runtimeWatchDebounceMs: def({
    name: 'RUNTIME_WATCH_DEBOUNCE',
    default: '200ms',
    meaning: 'Quiet period after the last file event before a reload (duration): a burst of events gives one reload; a steady stream still reloads every max(1 s, 5 × this).',
    parse: durationMs,
  }),
  mergeDomainConfig: def({ name: 'MERGE_DOMAIN_CONFIG', default: 'false', meaning: 'Allow one domain in several files (their top-level descriptors are merged).', parse: bool }),
  ...XDS_SETTING_DEFS,

  // --- limiter behaviour
  backendType: def({
    name: 'BACKEND_TYPE',
    default: 'redis',
    meaning: 'Counter store: `redis` (alias `kvstore`, the KVSTORE_* settings), `mcstore` (alias `memcache`, memcached, the MCSTORE_* settings) or `memory` (embedded, one process, nothing to run).',
    parse: (raw) => {
      const v = raw.trim().toLowerCase();
      if (v === '' || v === 'redis' || v === 'kvstore') return 'redis' as const;
      if (v === 'memory') return 'memory' as const;
      if (v === 'mcstore' || v === 'memcache') return 'mcstore' as const;
      throw new Error('expected redis, mcstore or memory');
    },
  }),
  cacheKeyPrefix: def({ name: 'CACHE_KEY_PREFIX', default: '', meaning: 'Prefix of every counter key.', parse: str }),
  expirationJitterMaxSeconds: def({
    name: 'EXPIRATION_JITTER_MAX_SECONDS',
    default: '300',
    meaning:
      'Counter TTLs get a random extra of [0, this) seconds; 0 disables. Negative values mean 0 and values above 31536000 (a year) mean a year, each with a warning: a longer TTL only keeps dead counters and can push memcached expirations past what it accepts.',
    parse: (raw, ctx) => clampedInt(raw, ctx, 0, MAX_JITTER_SECONDS),
  }),
  localCacheSizeInBytes: def({
    name: 'LocalCacheSizeInBytes',
    aliases: ['LOCAL_CACHE_SIZE_IN_BYTES'],
    default: '0',
    meaning: 'Bytes for the local cache of keys known to be over limit (answered without the store for the rest of their window); 0 disables (so does a negative value, with a warning).',
    parse: (raw, ctx) => clampedInt(raw, ctx, 0, Number.MAX_SAFE_INTEGER),
  }),
  nearLimitRatio: def({
    name: 'NEAR_LIMIT_RATIO',
    default: '0.8',
    meaning: 'Share of the limit above which hits also count as near_limit (0–1; values outside are clamped to it with a warning, which counts the same as upstream; NaN means 0.8).',
    parse: (raw, ctx) => clampedFloat(raw, ctx, 0, 1, 0.8),
  }),
  stopCacheKeyIncrementWhenOverlimit: def({ name: 'STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT', default: 'false', meaning: 'When one descriptor of a request is over limit, do not increment the counters of the others.', parse: bool }),
  shadowMode: def({ name: 'SHADOW_MODE', default: 'false', meaning: 'Global shadow mode: every OVER_LIMIT overall result is turned into OK (counted in ratelimit.service.global_shadow_mode).', parse: bool }),
  quotaMode: def({ name: 'QUOTA_MODE', default: 'false', meaning: 'Treat every descriptor as a quota descriptor (the request fails only when all of them are over).', parse: bool }),
  responseDynamicMetadata: def({ name: 'RESPONSE_DYNAMIC_METADATA', default: 'false', meaning: 'Fill dynamic_metadata in responses (domain, descriptors, rule metadata).', parse: bool }),
  limitResponseHeadersEnabled: def({ name: 'LIMIT_RESPONSE_HEADERS_ENABLED', default: 'false', meaning: 'Add the limit/remaining/reset headers to response_headers_to_add.', parse: bool }),
  limitLimitHeader: def({ name: 'LIMIT_LIMIT_HEADER', default: 'RateLimit-Limit', meaning: 'Header name for the limit.', parse: str }),
  limitRemainingHeader: def({ name: 'LIMIT_REMAINING_HEADER', default: 'RateLimit-Remaining', meaning: 'Header name for the remaining requests.', parse: str }),
  limitResetHeader: def({ name: 'LIMIT_RESET_HEADER', default: 'RateLimit-Reset', meaning: 'Header name for the seconds until the window resets.', parse: str }),
  limitResponsePolicyHeadersEnabled: def({
    name: 'LIMIT_RESPONSE_POLICY_HEADERS_ENABLED',
    default: 'false',
    meaning:
      'Extension: also add `RateLimit-Policy` (every limit that applied, `"name";q=<quota>;w=<seconds>`) and `RateLimit` (the limit that decides, `"name";r=<remaining>;t=<seconds>`) to response_headers_to_add, in the syntax of draft-ietf-httpapi-ratelimit-headers-11. Independent of LIMIT_RESPONSE_HEADERS_ENABLED, whose headers stay as upstream sends them.',
    parse: bool,
  }),
  healthyWithAtLeastOneConfigLoaded: def({ name: 'HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED', default: 'false', meaning: 'Adds the configuration health component: unhealthy until a rule set with at least one domain is loaded.', parse: bool }),

  // --- counter store: Redis
  ...KVSTORE_SETTING_DEFS,
  kvstoreHealthCheckActiveConnection: def({
    name: 'KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION',
    aliases: ['REDIS_HEALTH_CHECK_ACTIVE_CONNECTION'],
    default: 'false',
    meaning: 'The `redis` health component fails while the counter store has no open connection and recovers with the next one (without it, only the first connection matters).',
    parse: bool,
  }),

  // --- counter store: embedded
  memoryStoreMaxBytes: def({
    name: 'MEMORY_STORE_MAX_BYTES',
    default: '268435456',
    unit: 'bytes',
    meaning:
      'Memory the embedded store (BACKEND_TYPE=memory) may charge for counters: each costs its key bytes plus 192. When full it drops expired counters, then the least recently used cold ones (never one touched in the last two seconds, never one at its limit while held counters fit in half of this); when nothing can go, new counters are refused like a store outage (`ratelimit.memory_store.refused`). At least 4096; default 256 MiB.',
    parse: (raw) => parseInteger(raw, 4096),
  }),
  memoryStoreMaxKeys: def({
    name: 'MEMORY_STORE_MAX_KEYS',
    default: '',
    unit: 'keys',
    meaning: 'Optional extra cap on the embedded store\'s live counters, applied with the same eviction order as MEMORY_STORE_MAX_BYTES. Empty: only the byte bound applies.',
    parse: (raw) => (raw.trim() === '' ? undefined : parseInteger(raw, 1)),
  }),

  // --- counter store: memcached
  ...MCSTORE_SETTING_DEFS,

  // --- processes
  ...WORKER_SETTING_DEFS,

  // --- statistics (push, pull, tags)
  ...STATS_SETTING_DEFS,

  // --- tracing
  ...TRACING_SETTING_DEFS,
} as const;

export type Settings = ValuesOf<typeof SETTING_DEFS>;

export interface LoadedSettings {
  settings: Settings;
  /** Sink options derived from the stats settings (mogrifiers and the metrics mapping resolved). */
  stats: StatsSinksOptions;
  warnings: string[];
}

/** Parses the environment; throws RateLimitError('settings_invalid') listing every bad variable. */
export function loadSettings(env: Env = process.env): LoadedSettings {
  const reader = new SettingsReader(env, { invalid: (problems) => new RateLimitError('settings_invalid', formatSettingsProblems(problems)) });
  const s: Settings = reader.readAll(SETTING_DEFS);
  if (reader.errors.length === 0 && s.backendType === 'redis') {
    const kv = checkKvstoreSettings(s, (name) => env[name] !== undefined);
    for (const e of kv.errors) reader.fail(e);
    reader.warnings.push(...kv.warnings);
  }
  if (reader.errors.length === 0 && s.backendType === 'mcstore') checkMcstoreSettings(s, (e) => reader.fail(e));
  if (reader.errors.length === 0) {
    checkXdsSettings(s, (e) => reader.fail(e));
    checkGrpcTlsSettings(s, (e) => reader.fail(e));
    checkGrpcLimitSettings(s, (e) => reader.fail(e));
    checkRlqsSettings(s, (e) => reader.fail(e));
  }
  const stats = resolveStatsOptions(s, env);
  if (reader.errors.length === 0) for (const e of stats.errors) reader.fail(e);
  const { warnings } = reader.finish();
  return { settings: Object.freeze(s), stats: stats.options, warnings: [...warnings, ...stats.warnings] };
}
