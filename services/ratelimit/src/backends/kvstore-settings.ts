// The counter-store (KVSTORE_*) settings, declared in the schema's form so settings.ts spreads them
// into SETTING_DEFS, plus the cross-field checks (URL format per type, TLS file pairs, deprecated
// variables) that need several of them at once. Seed names first, upstream REDIS_* names as aliases.
import { existsSync } from 'node:fs';
import { def, type ParseContext, clampedInt, nonNegativeDurationMs, parseBool, parseEnum, parseGoInt, parseSecret, parseSignedDurationMs, positiveDurationMs, redactSecret } from '@rls/settings';

const str = (raw: string): string => raw;
const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));
// Every value upstream's envconfig accepts starts here too (issue 12): Go syntax for integers and
// durations; where our design needs a bound the value is clamped with a warning naming the
// variable, the given and the used value (docs/ratelimit.md, "Settings upstream accepts").
const durationMs = nonNegativeDurationMs;

export type KvstoreType = 'single' | 'sentinel' | 'cluster';
export type PoolOnEmptyBehavior = 'CREATE' | 'ERROR' | 'WAIT';

const storeType = (raw: string): KvstoreType => {
  const v = raw.trim().toLowerCase();
  if (v === 'single' || v === 'sentinel' || v === 'cluster') return v;
  throw new Error(`Unrecognized redis type ${raw}; expected single, sentinel or cluster`);
};
const socketType = (raw: string): 'tcp' | 'unix' => parseEnum(raw, ['tcp', 'unix'] as const);
/** Upstream warns about any other value and waits (WAIT); so do we. */
const onEmpty = (raw: string, ctx: ParseContext): PoolOnEmptyBehavior => {
  try {
    return parseEnum(raw, ['CREATE', 'ERROR', 'WAIT'] as const);
  } catch {
    ctx.clamp('WAIT', 'not CREATE, ERROR or WAIT');
    return 'WAIT';
  }
};
/** Connections are opened eagerly and each pipelines, so a pool beyond 1024 only costs sockets. */
export const MAX_POOL_SIZE = 1024;
const poolSize = (raw: string, ctx: ParseContext): number => clampedInt(raw, ctx, 1, MAX_POOL_SIZE);
/** Upstream's 0 means "no dial timeout"; every wait here is bounded, so 0 or less takes the default. */
const timeout = (raw: string, ctx: ParseContext): number => positiveDurationMs(raw, ctx, 10_000);
/** Deprecated counters upstream only compares with 0: any Go integer. */
const anyInt = (raw: string): number => Number(parseGoInt(raw));
const parallelism = (raw: string): number => {
  const v = parseGoInt(raw);
  // Upstream panics on a negative value too.
  if (v < 0n) throw new Error('must not be negative');
  return Number(v);
};

const URL_MEANING =
  'Redis address. single: `host:port` (tcp) or a socket path (unix); sentinel: `<master name>,<sentinel host:port>,...`; cluster: `host:port,host:port,...` (the nodes to learn the topology from).';

export const KVSTORE_SETTING_DEFS = {
  kvstoreType: def({ name: 'KVSTORE_TYPE', aliases: ['REDIS_TYPE'], default: 'single', meaning: 'Redis deployment: `single`, `sentinel` or `cluster` (case-insensitive).', parse: storeType }),
  kvstoreSocketType: def({ name: 'KVSTORE_SOCKET_TYPE', aliases: ['REDIS_SOCKET_TYPE'], default: 'unix', meaning: '`tcp` or `unix` (unix only for single).', parse: socketType }),
  kvstoreUrl: def({ name: 'KVSTORE_URL', aliases: ['REDIS_URL'], default: '/var/run/nutcracker/ratelimit.sock', meaning: URL_MEANING, parse: str }),
  kvstorePoolSize: def({ name: 'KVSTORE_POOL_SIZE', aliases: ['REDIS_POOL_SIZE'], default: '10', meaning: 'Connections to Redis (per node in cluster mode), 1–1024 (other values are clamped with a warning). Connections pipeline; one counts as busy with 64 calls awaiting replies.', parse: poolSize }),
  kvstoreTimeoutMs: def({ name: 'KVSTORE_TIMEOUT', aliases: ['REDIS_TIMEOUT'], default: '10s', meaning: 'Bound on connect, read and write to Redis (duration); a call fails with a store error after it. 0 or less (upstream: no dial timeout) means 10s, with a warning.', parse: timeout }),
  kvstoreAuth: def({ name: 'KVSTORE_AUTH', aliases: ['REDIS_AUTH'], default: '', meaning: '`password` or `user:password` (Redis ACL user; split at the first `:`) for master, replica and cluster nodes.', parse: parseSecret, redact: redactSecret }),
  kvstoreSentinelAuth: def({ name: 'KVSTORE_SENTINEL_AUTH', aliases: ['REDIS_SENTINEL_AUTH'], default: '', meaning: '`password` or `user:password` for the sentinels (type sentinel only); empty: no AUTH sent to sentinels.', parse: parseSecret, redact: redactSecret }),
  kvstorePoolOnEmptyBehavior: def({
    name: 'KVSTORE_POOL_ON_EMPTY_BEHAVIOR',
    aliases: ['REDIS_POOL_ON_EMPTY_BEHAVIOR'],
    default: 'CREATE',
    meaning: 'When every connection is busy: `CREATE` opens an extra connection after the wait duration (closed again when idle), `ERROR` fails the call after the wait duration, `WAIT` waits for a free connection within KVSTORE_TIMEOUT.',
    parse: onEmpty,
  }),
  kvstorePoolOnEmptyWaitMs: def({ name: 'KVSTORE_POOL_ON_EMPTY_WAIT_DURATION', aliases: ['REDIS_POOL_ON_EMPTY_WAIT_DURATION'], default: '1s', meaning: 'Wait before CREATE or ERROR takes effect (duration).', parse: durationMs }),
  kvstorePipelineWindowMs: def({ name: 'KVSTORE_PIPELINE_WINDOW', aliases: ['REDIS_PIPELINE_WINDOW'], default: '0', meaning: 'Flush interval of buffered writes (duration, e.g. 150us); 0 flushes at the end of each event-loop turn. Applies to every type.', parse: durationMs }),
  kvstorePipelineLimit: def({ name: 'KVSTORE_PIPELINE_LIMIT', aliases: ['REDIS_PIPELINE_LIMIT'], default: '0', meaning: 'Deprecated: accepted, no effect (a warning is logged when > 0).', parse: anyInt }),
  kvstoreClusterPipelineParallelism: def({
    name: 'KVSTORE_CLUSTER_PIPELINE_PARALLELISM',
    aliases: ['REDIS_CLUSTER_PIPELINE_PARALLELISM'],
    default: '0',
    meaning: 'Accepted for compatibility, no effect: cluster groups always go to their nodes in parallel (a warning is logged when set).',
    parse: parallelism,
  }),
  kvstoreTls: def({ name: 'KVSTORE_TLS', aliases: ['REDIS_TLS'], default: 'false', meaning: 'Connect to Redis with TLS (both stores when KVSTORE_PERSECOND_TLS is also true).', parse: bool }),
  kvstoreTlsClientCert: def({ name: 'KVSTORE_TLS_CLIENT_CERT', aliases: ['REDIS_TLS_CLIENT_CERT'], default: '', meaning: 'Client certificate file (PEM) for TLS; needs KVSTORE_TLS_CLIENT_KEY. Shared by both stores.', parse: str }),
  kvstoreTlsClientKey: def({ name: 'KVSTORE_TLS_CLIENT_KEY', aliases: ['REDIS_TLS_CLIENT_KEY'], default: '', meaning: 'Client private key file (PEM).', parse: str }),
  kvstoreTlsCacert: def({ name: 'KVSTORE_TLS_CACERT', aliases: ['REDIS_TLS_CACERT'], default: '', meaning: 'CA file (PEM) trusted in addition to the system roots.', parse: str }),
  kvstoreTlsSkipHostnameVerification: def({
    name: 'KVSTORE_TLS_SKIP_HOSTNAME_VERIFICATION',
    aliases: ['REDIS_TLS_SKIP_HOSTNAME_VERIFICATION'],
    default: 'false',
    meaning: 'Verify the certificate chain but not the host name (managed Redis that presents a certificate for another name).',
    parse: bool,
  }),
  kvstoreStartupInitialIntervalMs: def({ name: 'KVSTORE_STARTUP_INITIAL_INTERVAL', aliases: ['REDIS_STARTUP_INITIAL_INTERVAL'], default: '1s', meaning: 'First wait between start-up connection attempts (duration; doubles up to the max interval, with jitter). 0 or less means 1s, with a warning.', parse: (raw, ctx) => positiveDurationMs(raw, ctx, 1_000) }),
  kvstoreStartupMaxIntervalMs: def({ name: 'KVSTORE_STARTUP_MAX_INTERVAL', aliases: ['REDIS_STARTUP_MAX_INTERVAL'], default: '30s', meaning: 'Largest wait between start-up connection attempts (duration). 0 or less means 30s, with a warning.', parse: (raw, ctx) => positiveDurationMs(raw, ctx, 30_000) }),
  kvstoreStartupMaxElapsedMs: def({
    name: 'KVSTORE_STARTUP_MAX_ELAPSED_TIME',
    aliases: ['REDIS_STARTUP_MAX_ELAPSED_TIME'],
    default: '0',
    meaning:
      'Give up starting (exit 1) when Redis is still unreachable after this long (duration); 0 waits forever. A negative value gives up after the first failed attempt, as upstream (taken as 1ms, with a warning). The listeners open only once Redis answered.',
    parse: (raw, ctx) => {
      const ms = parseSignedDurationMs(raw);
      if (ms >= 0) return ms;
      ctx.clamp('1ms', 'negative: give up after the first failed attempt');
      return 1;
    },
  }),

  kvstorePersecond: def({ name: 'KVSTORE_PERSECOND', aliases: ['REDIS_PERSECOND'], default: 'false', meaning: 'Use a second store (the KVSTORE_PERSECOND_* settings) for limits with unit second; both stores are called in parallel.', parse: bool }),
  kvstorePersecondType: def({ name: 'KVSTORE_PERSECOND_TYPE', aliases: ['REDIS_PERSECOND_TYPE'], default: 'single', meaning: 'As KVSTORE_TYPE, for the per-second store.', parse: storeType }),
  kvstorePersecondSocketType: def({ name: 'KVSTORE_PERSECOND_SOCKET_TYPE', aliases: ['REDIS_PERSECOND_SOCKET_TYPE'], default: 'unix', meaning: 'As KVSTORE_SOCKET_TYPE, for the per-second store.', parse: socketType }),
  kvstorePersecondUrl: def({ name: 'KVSTORE_PERSECOND_URL', aliases: ['REDIS_PERSECOND_URL'], default: '/var/run/nutcracker/ratelimitpersecond.sock', meaning: 'As KVSTORE_URL, for the per-second store.', parse: str }),
  kvstorePersecondPoolSize: def({ name: 'KVSTORE_PERSECOND_POOL_SIZE', aliases: ['REDIS_PERSECOND_POOL_SIZE'], default: '10', meaning: 'As KVSTORE_POOL_SIZE, for the per-second store.', parse: poolSize }),
  kvstorePersecondTimeoutMs: def({ name: 'KVSTORE_PERSECOND_TIMEOUT', aliases: ['REDIS_PERSECOND_TIMEOUT'], default: '10s', meaning: 'As KVSTORE_TIMEOUT, for the per-second store.', parse: timeout }),
  kvstorePersecondAuth: def({ name: 'KVSTORE_PERSECOND_AUTH', aliases: ['REDIS_PERSECOND_AUTH'], default: '', meaning: 'As KVSTORE_AUTH, for the per-second store.', parse: parseSecret, redact: redactSecret }),
  kvstorePersecondSentinelAuth: def({ name: 'KVSTORE_PERSECOND_SENTINEL_AUTH', aliases: ['REDIS_PERSECOND_SENTINEL_AUTH'], default: '', meaning: 'As KVSTORE_SENTINEL_AUTH, for the per-second store.', parse: parseSecret, redact: redactSecret }),
  kvstorePersecondPoolOnEmptyBehavior: def({ name: 'KVSTORE_PERSECOND_POOL_ON_EMPTY_BEHAVIOR', aliases: ['REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR'], default: 'CREATE', meaning: 'As KVSTORE_POOL_ON_EMPTY_BEHAVIOR, for the per-second store.', parse: onEmpty }),
  kvstorePersecondPoolOnEmptyWaitMs: def({ name: 'KVSTORE_PERSECOND_POOL_ON_EMPTY_WAIT_DURATION', aliases: ['REDIS_PERSECOND_POOL_ON_EMPTY_WAIT_DURATION'], default: '1s', meaning: 'As KVSTORE_POOL_ON_EMPTY_WAIT_DURATION, for the per-second store.', parse: durationMs }),
  kvstorePersecondPipelineWindowMs: def({ name: 'KVSTORE_PERSECOND_PIPELINE_WINDOW', aliases: ['REDIS_PERSECOND_PIPELINE_WINDOW'], default: '0', meaning: 'As KVSTORE_PIPELINE_WINDOW, for the per-second store.', parse: durationMs }),
  kvstorePersecondPipelineLimit: def({ name: 'KVSTORE_PERSECOND_PIPELINE_LIMIT', aliases: ['REDIS_PERSECOND_PIPELINE_LIMIT'], default: '0', meaning: 'Deprecated: accepted, no effect.', parse: anyInt }),
  kvstorePersecondClusterPipelineParallelism: def({
    name: 'KVSTORE_PERSECOND_CLUSTER_PIPELINE_PARALLELISM',
    aliases: ['REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM'],
    default: '0',
    meaning: 'Accepted for compatibility, no effect.',
    parse: parallelism,
  }),
  kvstorePersecondTls: def({ name: 'KVSTORE_PERSECOND_TLS', aliases: ['REDIS_PERSECOND_TLS'], default: 'false', meaning: 'TLS for the per-second store (uses the KVSTORE_TLS_* files).', parse: bool }),
} as const;

/** The parsed KVSTORE_* values (a structural subset of Settings). */
export type KvstoreSettings = {
  readonly [K in keyof typeof KVSTORE_SETTING_DEFS]: ReturnType<(typeof KVSTORE_SETTING_DEFS)[K]['parse']>;
};

export const SENTINEL_URL_ERROR =
  'Expected master name and a list of urls for the sentinels, in the format: <redis master name>,<sentinel1>,...,<sentineln>';

const HOST_PORT = /^[^\s:,]+:\d+$|^\[[^\]]+\]:\d+$/;

/** Problems with one store's URL for its type; empty when fine. */
export function urlProblems(name: string, type: KvstoreType, socket: 'tcp' | 'unix', url: string): string[] {
  const show = `${name}=${JSON.stringify(url)}`;
  if (type === 'single') {
    if (socket === 'tcp' && !HOST_PORT.test(url)) return [`${show}: expected host:port for socket type tcp`];
    if (socket === 'unix' && url.length === 0) return [`${show}: expected a socket path`];
    return [];
  }
  const items = url.split(',').map((x) => x.trim());
  if (type === 'sentinel') {
    if (items.length < 2) return [`${show}: ${SENTINEL_URL_ERROR}`];
    const bad = items.slice(1).filter((x) => !HOST_PORT.test(x));
    return bad.length > 0 || items[0] === '' ? [`${show}: ${SENTINEL_URL_ERROR} (sentinels as host:port)`] : [];
  }
  const bad = items.filter((x) => !HOST_PORT.test(x));
  return bad.length > 0 ? [`${show}: expected a comma-separated host:port list of cluster nodes`] : [];
}

/** Cross-field checks run after every variable parsed; `present(name)` says whether a variable was set. */
export function checkKvstoreSettings(s: KvstoreSettings, present: (name: string) => boolean): { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  errors.push(...urlProblems('KVSTORE_URL', s.kvstoreType, s.kvstoreSocketType, s.kvstoreUrl));
  if (s.kvstorePersecond) errors.push(...urlProblems('KVSTORE_PERSECOND_URL', s.kvstorePersecondType, s.kvstorePersecondSocketType, s.kvstorePersecondUrl));
  if ((s.kvstoreTlsClientCert === '') !== (s.kvstoreTlsClientKey === '')) errors.push('KVSTORE_TLS_CLIENT_CERT and KVSTORE_TLS_CLIENT_KEY must be set together');
  if (s.kvstoreTls || (s.kvstorePersecond && s.kvstorePersecondTls)) {
    for (const [name, file] of [
      ['KVSTORE_TLS_CLIENT_CERT', s.kvstoreTlsClientCert],
      ['KVSTORE_TLS_CLIENT_KEY', s.kvstoreTlsClientKey],
      ['KVSTORE_TLS_CACERT', s.kvstoreTlsCacert],
    ] as const) {
      if (file !== '' && !existsSync(file)) errors.push(`${name}=${JSON.stringify(file)}: file not found`);
    }
  }
  // Upstream's backoff accepts this too: the first wait is the initial interval, every later one the max.
  if (s.kvstoreStartupMaxIntervalMs < s.kvstoreStartupInitialIntervalMs) {
    warnings.push('KVSTORE_STARTUP_MAX_INTERVAL is below KVSTORE_STARTUP_INITIAL_INTERVAL: the first wait is the initial interval, later ones the max');
  }
  if (s.kvstorePipelineLimit > 0) warnings.push('KVSTORE_PIPELINE_LIMIT is deprecated and has no effect');
  if (s.kvstorePersecondPipelineLimit > 0) warnings.push('KVSTORE_PERSECOND_PIPELINE_LIMIT is deprecated and has no effect');
  for (const n of ['KVSTORE_CLUSTER_PIPELINE_PARALLELISM', 'KVSTORE_PERSECOND_CLUSTER_PIPELINE_PARALLELISM']) {
    if (present(n) || present(n.replace('KVSTORE_', 'REDIS_'))) warnings.push(`${n} has no effect: cluster groups always go to their nodes in parallel`);
  }
  return { errors, warnings };
}
