#!/usr/bin/env node
// KVSTORE_TYPE=cluster: our cluster store (services/ratelimit/src/backends/cluster-store.ts, slot
// routing and MOVED/ASK on our RESP client) against ioredis's Cluster doing the same work: each
// request increments DESCRIPTORS keys (INCRBY + EXPIRE per key), CONCURRENCY requests in flight,
// on a private 3-master cluster (@rls/testkit). Both hold POOL connections per node (ours: its
// KVSTORE_POOL_SIZE pool; ioredis: POOL Cluster clients round-robin). ioredis has two ways:
//   ioredis-auto      enableAutoPipelining: ioredis batches a tick's commands per node;
//   ioredis-pipeline  one pipeline per descriptor (an ioredis Cluster pipeline must stay within one
//                     slot, so one pipeline for a whole request fails when its keys span nodes).
// Prints req/s, the bench process's CPU µs per request and redis-server CPU µs per request.
//
//   node --conditions=source --import tsx bench/client-redis-cluster.mjs
//   env: ROUNDS (3) DURATION (s per run, 3) CONCURRENCY (64) DESCRIPTORS (3) KEYS (1000) POOL (10) MASTERS (3) ONLY (comma list)
import { fileURLToPath } from 'node:url';
import { alternate, childRequest, envNumber, reportAndExit } from './lib/alternate.mjs';
import { counterWorkload } from './lib/counter-workload.mjs';

const CANDIDATES = {
  ours: async ({ nodes, pool }) => {
    const { ClusterStore } = await import('../services/ratelimit/src/backends/cluster-store.ts');
    const s = new ClusterStore({ nodes, poolSize: pool, timeoutMs: 5000 });
    await s.waitUntilConnected(10_000);
    return s;
  },
  'ioredis-auto': async (ctx) => await ioredisCluster(ctx, { autoPipelining: true }),
  'ioredis-pipeline': async (ctx) => await ioredisCluster(ctx, { pipelinePerKey: true }),
};

async function ioredisCluster({ nodes, pool }, mode) {
  const { Cluster } = await import('ioredis');
  const { IoredisStore, ioredisCommonOptions } = await import('./lib/ioredis-store.mjs');
  const startup = nodes.map((n) => ({ host: n.slice(0, n.lastIndexOf(':')), port: Number(n.slice(n.lastIndexOf(':') + 1)) }));
  const s = new IoredisStore({
    ...mode,
    poolSize: pool,
    createClient: () => new Cluster(startup, { enableAutoPipelining: mode.autoPipelining === true, redisOptions: ioredisCommonOptions(5000) }),
  });
  await s.waitUntilConnected(10_000);
  return s;
}

const child = childRequest();
if (child !== undefined) {
  const ctx = child.context;
  const store = await CANDIDATES[child.name](ctx);
  const r = await counterWorkload(store, { prefix: `bench:${child.name}:${process.pid}`, ...ctx });
  await store.close();
  reportAndExit(r);
}

const { startRedisCluster } = await import('@rls/testkit');
const cluster = await startRedisCluster({ masters: envNumber('MASTERS', 3) });
const context = {
  nodes: cluster.url.split(','),
  pool: envNumber('POOL', 10),
  seconds: envNumber('DURATION', 3),
  concurrency: envNumber('CONCURRENCY', 64),
  descriptors: envNumber('DESCRIPTORS', 3),
  keys: envNumber('KEYS', 1000),
};
const only = (process.env.ONLY ?? '').split(',').filter((x) => x !== '');
try {
  await alternate({
    title: `Redis Cluster, ${cluster.nodes.length} masters: ${context.descriptors} descriptors per request, ${context.concurrency} in flight, pool ${context.pool} per node, ${context.seconds} s per run`,
    self: fileURLToPath(import.meta.url),
    candidates: only.length > 0 ? only : Object.keys(CANDIDATES),
    rounds: envNumber('ROUNDS', 3),
    context,
    serverPorts: cluster.nodes.map((n) => n.port),
    unit: 'req',
    extraColumns: [{ label: 'counted/expected', value: (r) => (r.counted !== undefined ? `${r.counted}/${r.expected}` : '') }],
  });
} finally {
  await cluster.stop();
}
