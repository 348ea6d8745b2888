// Part of the composition root (called only from app.ts, the one place that picks implementations): picks the counter store
// BACKEND_TYPE names — the embedded memory store, memcached, or the Redis store the KVSTORE_*
// settings describe (single, sentinel or cluster, with TLS and auth, and the per-second split when
// KVSTORE_PERSECOND is on) — and what waiting for it at start-up means. The stores themselves
// receive plain options and know nothing of settings.
import { MEMORY_STORE_ALGORITHMS, MemoryShareStore, MemoryStore, type AlgorithmSupport, type QuotaShareStore, type Clock, type CounterStore, type RandomSource, type StatsStore } from '@rls/engine';
import type { Secret } from '@rls/settings';
import { ClusterStore } from './backends/cluster-store.js';
import type { StoreLogger } from './backends/connection-pool.js';
import type { KvstoreSettings, KvstoreType, PoolOnEmptyBehavior } from './backends/kvstore-settings.js';
import { mcstoreTlsOptions } from './backends/memcached-settings.js';
import { MEMCACHED_ALGORITHMS, MemcachedStore } from './backends/memcached-store.js';
import { REDIS_ALGORITHMS, RedisStore, maskUrl, type RedisStoreOptions } from './backends/redis-store.js';
import { RedisQuotaShareStore } from './backends/redis-quota-share.js';
import type { KeyedCommandSender } from './backends/redis-commands.js';
import { redisTlsOptions } from './backends/redis-tls.js';
import { SentinelStore } from './backends/sentinel-store.js';
import { PerSecondSplitStore } from './backends/split-store.js';
import { createSrvLookup } from './backends/srv.js';
import { waitForStore } from './backends/store-startup.js';
import type { Logger } from './logger.js';
import type { Settings } from './settings.js';

/** The chosen store and how start-up waits for it. */
export interface ComposedStore {
  readonly store: CounterStore;
  /**
   * Resolves when serving may begin: Redis blocks start-up until it answers (KVSTORE_STARTUP_*,
   * as upstream; a give-up rejects); memcached only needs its SRV name resolved (fatal, as
   * upstream) — nodes not answering yet are logged, not fatal (fail-open); memory is ready at once.
   */
  readonly ready: () => Promise<void>;
  /**
   * Where RLQS replicas share demand and grants: the memory store's in-process ledger, or Redis
   * single's pool; undefined for stores that cannot hold them (the settings check refuses
   * RLQS_ENABLED with those).
   */
  readonly quotaShare: QuotaShareStore | undefined;
}

export interface ComposeStoreDeps {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly stats: StatsStore;
  readonly logger: Logger;
}

/**
 * What each BACKEND_TYPE's store runs, as the stores declare it (CounterStore.algorithms), known
 * without connecting: the worker-mode primary and ratelimit-config-check refuse rules with it.
 */
export const BACKEND_ALGORITHMS: Readonly<Record<Settings['backendType'], AlgorithmSupport>> = {
  redis: { kind: 'redis', algorithms: REDIS_ALGORITHMS },
  mcstore: { kind: 'memcached', algorithms: MEMCACHED_ALGORITHMS },
  memory: { kind: 'memory', algorithms: MEMORY_STORE_ALGORITHMS },
};

/** The configured store in words, for people (the operator page): `embedded memory`, `redis sentinel + per-second redis single`, `memcached`. */
export function describeCounterStore(s: Settings): string {
  switch (s.backendType) {
    case 'memory':
      return 'embedded memory';
    case 'mcstore':
      return 'memcached';
    case 'redis':
      return `redis ${s.kvstoreType}` + (s.kvstorePersecond ? ` + per-second redis ${s.kvstorePersecondType}` : '');
  }
}

export function composeCounterStore(s: Settings, deps: ComposeStoreDeps): ComposedStore {
  const { clock, random, stats, logger } = deps;
  switch (s.backendType) {
    case 'memory':
      return {
        store: new MemoryStore({ clock, maxBytes: s.memoryStoreMaxBytes, maxKeys: s.memoryStoreMaxKeys, stats, log: (message) => logger.child({ component: 'memory_store' }).warn(message) }),
        ready: () => Promise.resolve(),
        quotaShare: new MemoryShareStore(),
      };
    case 'redis': {
      const store = createKvStore(s, { stats, logger, random });
      const ready = (): Promise<void> =>
        waitForStore(store, {
          initialIntervalMs: s.kvstoreStartupInitialIntervalMs,
          maxIntervalMs: s.kvstoreStartupMaxIntervalMs,
          maxElapsedMs: s.kvstoreStartupMaxElapsedMs,
          url: maskUrl(s.kvstoreUrl),
          random,
          logger: logger.child({ component: 'redis' }),
        });
      // RLQS quota records go to the main store (the per-second split only moves 1-second counters).
      const sender = quotaSenderOf(store instanceof PerSecondSplitStore ? store.main : store);
      return { store, ready, quotaShare: sender === undefined ? undefined : new RedisQuotaShareStore({ sender }) };
    }
    case 'mcstore': {
      const store = new MemcachedStore({
        ...(s.mcstoreHostPort.length > 0 ? { servers: s.mcstoreHostPort } : {}),
        ...(s.mcstoreSrv !== '' ? { srv: { name: s.mcstoreSrv, refreshMs: s.mcstoreSrvRefreshMs, lookup: createSrvLookup(s.mcstoreSrvDnsServer, s.mcstoreTimeoutMs) } } : {}),
        connectionsPerNode: s.mcstoreMaxIdleConns,
        timeoutMs: s.mcstoreTimeoutMs,
        tls: mcstoreTlsOptions(s),
        clock,
        random,
        stats,
        logger: logger.child({ component: 'memcached' }),
      });
      const ready = async (): Promise<void> => {
        await store.ready();
        await store.waitUntilConnected(s.mcstoreTimeoutMs * 4).catch((err: unknown) => {
          logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'memcached not reachable yet; counting from 0 until it is');
        });
      };
      return { store, ready, quotaShare: undefined };
    }
  }
}

/** The Redis store (single, Sentinel or Cluster) that sends the RLQS quota scripts, routed by key. */
function quotaSenderOf(store: CounterStore): KeyedCommandSender | undefined {
  return store instanceof RedisStore || store instanceof SentinelStore || store instanceof ClusterStore ? store : undefined;
}

export interface KvstoreDeps {
  stats?: StatsStore | undefined;
  logger?: (StoreLogger & { child(bindings: object): StoreLogger }) | undefined;
  random?: RandomSource | undefined;
}

/** A Redis counter store that can be waited for at start-up. */
export type WaitableStore = CounterStore & { waitUntilConnected(timeoutMs: number): Promise<void> };

interface OneStore {
  type: KvstoreType;
  socketType: 'tcp' | 'unix';
  url: string;
  poolSize: number;
  timeoutMs: number;
  auth: Secret;
  sentinelAuth: Secret;
  onEmpty: PoolOnEmptyBehavior;
  onEmptyWaitMs: number;
  pipelineWindowMs: number;
  tls: boolean;
  statsPrefix: string;
}

function buildOne(o: OneStore, s: KvstoreSettings, deps: KvstoreDeps, component: string): WaitableStore {
  const base: Omit<RedisStoreOptions, 'url' | 'socketType'> = {
    ...(!o.auth.empty ? { auth: o.auth } : {}),
    poolSize: o.poolSize,
    timeoutMs: o.timeoutMs,
    onEmpty: o.onEmpty,
    onEmptyWaitMs: o.onEmptyWaitMs,
    pipelineWindowMs: o.pipelineWindowMs,
    stats: deps.stats,
    statsPrefix: o.statsPrefix,
    logger: deps.logger?.child({ component }),
    random: deps.random,
    tls: o.tls
      ? redisTlsOptions({
          clientCert: s.kvstoreTlsClientCert,
          clientKey: s.kvstoreTlsClientKey,
          caCert: s.kvstoreTlsCacert,
          skipHostnameVerification: s.kvstoreTlsSkipHostnameVerification,
        })
      : undefined,
  };
  switch (o.type) {
    case 'single':
      return new RedisStore({ ...base, url: o.url, socketType: o.socketType });
    case 'sentinel':
      return new SentinelStore({ ...base, url: o.url, ...(!o.sentinelAuth.empty ? { sentinelAuth: o.sentinelAuth } : {}) });
    case 'cluster':
      return new ClusterStore({ ...base, nodes: o.url.split(',').map((x) => x.trim()) });
  }
}

export function createKvStore(s: KvstoreSettings, deps: KvstoreDeps): WaitableStore {
  const main = buildOne(
    {
      type: s.kvstoreType,
      socketType: s.kvstoreSocketType,
      url: s.kvstoreUrl,
      poolSize: s.kvstorePoolSize,
      timeoutMs: s.kvstoreTimeoutMs,
      auth: s.kvstoreAuth,
      sentinelAuth: s.kvstoreSentinelAuth,
      onEmpty: s.kvstorePoolOnEmptyBehavior,
      onEmptyWaitMs: s.kvstorePoolOnEmptyWaitMs,
      pipelineWindowMs: s.kvstorePipelineWindowMs,
      tls: s.kvstoreTls,
      statsPrefix: 'ratelimit.redis_pool',
    },
    s,
    deps,
    'redis',
  );
  if (!s.kvstorePersecond) return main;
  const perSecond = buildOne(
    {
      type: s.kvstorePersecondType,
      socketType: s.kvstorePersecondSocketType,
      url: s.kvstorePersecondUrl,
      poolSize: s.kvstorePersecondPoolSize,
      timeoutMs: s.kvstorePersecondTimeoutMs,
      auth: s.kvstorePersecondAuth,
      sentinelAuth: s.kvstorePersecondSentinelAuth,
      onEmpty: s.kvstorePersecondPoolOnEmptyBehavior,
      onEmptyWaitMs: s.kvstorePersecondPoolOnEmptyWaitMs,
      pipelineWindowMs: s.kvstorePersecondPipelineWindowMs,
      tls: s.kvstorePersecondTls,
      statsPrefix: 'ratelimit.redis_per_second_pool',
    },
    s,
    deps,
    'redis_per_second',
  );
  const split = new PerSecondSplitStore(main, perSecond);
  return Object.assign(split, {
    waitUntilConnected: async (timeoutMs: number): Promise<void> => {
      await Promise.all([main.waitUntilConnected(timeoutMs), perSecond.waitUntilConnected(timeoutMs)]);
    },
  });
}
