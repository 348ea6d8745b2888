// Builds the Redis counter store the KVSTORE_* settings describe: single, sentinel or cluster,
// with TLS and auth, and the per-second split when KVSTORE_PERSECOND is on. app.ts calls this; it
// is the only place that maps these settings to store options.
import type { RandomSource } from '../clock.js';
import type { StatsStore } from '../stats/stats-store.js';
import { ClusterStore } from './cluster-store.js';
import type { StoreLogger } from './connection-pool.js';
import type { CounterStore } from './counter-store.js';
import type { KvstoreSettings, KvstoreType, PoolOnEmptyBehavior } from './kvstore-settings.js';
import { RedisStore, type RedisStoreOptions } from './redis-store.js';
import { redisTlsOptions } from './redis-tls.js';
import { SentinelStore } from './sentinel-store.js';
import { PerSecondSplitStore } from './split-store.js';

export interface KvstoreDeps {
  stats?: StatsStore | undefined;
  logger?: (StoreLogger & { child(bindings: object): StoreLogger }) | undefined;
  random?: RandomSource | undefined;
}

/** A counter store that can be waited for at start-up. */
export type WaitableStore = CounterStore & { waitUntilConnected(timeoutMs: number): Promise<void> };

interface OneStore {
  type: KvstoreType;
  socketType: 'tcp' | 'unix';
  url: string;
  poolSize: number;
  timeoutMs: number;
  auth: string;
  sentinelAuth: string;
  onEmpty: PoolOnEmptyBehavior;
  onEmptyWaitMs: number;
  pipelineWindowMs: number;
  tls: boolean;
  statsPrefix: string;
}

function buildOne(o: OneStore, s: KvstoreSettings, deps: KvstoreDeps, component: string): WaitableStore {
  const base: Omit<RedisStoreOptions, 'url' | 'socketType'> = {
    ...(o.auth !== '' ? { auth: o.auth } : {}),
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
      return new SentinelStore({ ...base, url: o.url, ...(o.sentinelAuth !== '' ? { sentinelAuth: o.sentinelAuth } : {}) });
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
