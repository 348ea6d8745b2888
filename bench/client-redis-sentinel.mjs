#!/usr/bin/env node
// KVSTORE_TYPE=sentinel: our sentinel store (services/ratelimit/src/backends/sentinel-store.ts:
// master look-up and +switch-master on our RESP client) against ioredis with `sentinels:` doing the
// same work: each request increments DESCRIPTORS keys (INCRBY + EXPIRE per key), CONCURRENCY
// requests in flight, against a private master + replica + 3 sentinels (@rls/testkit). Both hold
// POOL connections to the master (ours: its KVSTORE_POOL_SIZE pool; ioredis: POOL clients
// round-robin). ioredis has two ways:
//   ioredis-pipeline  one explicit pipeline per request (what single mode's comparison uses);
//   ioredis-auto      enableAutoPipelining: ioredis batches a tick's commands.
// Prints req/s, the bench process's CPU µs per request and the master's CPU µs per request.
//
//   node --conditions=source --import tsx bench/client-redis-sentinel.mjs
//   env: ROUNDS (3) DURATION (s per run, 3) CONCURRENCY (64) DESCRIPTORS (3) KEYS (1000) POOL (10) ONLY (comma list)
import { fileURLToPath } from 'node:url';
import { alternate, childRequest, envNumber, reportAndExit } from './lib/alternate.mjs';
import { counterWorkload } from './lib/counter-workload.mjs';

const CANDIDATES = {
  ours: async ({ url, pool }) => {
    const { SentinelStore } = await import('../services/ratelimit/src/backends/sentinel-store.ts');
    const s = new SentinelStore({ url, poolSize: pool, timeoutMs: 5000 });
    await s.waitUntilConnected(10_000);
    return s;
  },
  'ioredis-pipeline': async (ctx) => await ioredisSentinel(ctx, {}),
  'ioredis-auto': async (ctx) => await ioredisSentinel(ctx, { autoPipelining: true }),
};

async function ioredisSentinel({ url, pool }, mode) {
  const { Redis } = await import('ioredis');
  const { IoredisStore, ioredisCommonOptions } = await import('./lib/ioredis-store.mjs');
  const [name, ...sentinels] = url.split(',');
  const s = new IoredisStore({
    ...mode,
    poolSize: pool,
    createClient: () =>
      new Redis({
        name,
        sentinels: sentinels.map((a) => ({ host: a.slice(0, a.lastIndexOf(':')), port: Number(a.slice(a.lastIndexOf(':') + 1)) })),
        ...ioredisCommonOptions(5000),
        enableAutoPipelining: mode.autoPipelining === true,
      }),
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

const { startSentinelSet } = await import('@rls/testkit');
const set = await startSentinelSet({ replicas: 1, sentinels: 3 });
const context = {
  url: set.url,
  pool: envNumber('POOL', 10),
  seconds: envNumber('DURATION', 3),
  concurrency: envNumber('CONCURRENCY', 64),
  descriptors: envNumber('DESCRIPTORS', 3),
  keys: envNumber('KEYS', 1000),
};
const only = (process.env.ONLY ?? '').split(',').filter((x) => x !== '');
try {
  await alternate({
    title: `Redis Sentinel (master + 1 replica, 3 sentinels): ${context.descriptors} descriptors per request, ${context.concurrency} in flight, pool ${context.pool}, ${context.seconds} s per run`,
    self: fileURLToPath(import.meta.url),
    candidates: only.length > 0 ? only : Object.keys(CANDIDATES),
    rounds: envNumber('ROUNDS', 3),
    context,
    serverPorts: [set.master.port],
    unit: 'req',
    extraColumns: [{ label: 'counted/expected', value: (r) => `${r.counted}/${r.expected}` }],
  });
} finally {
  await set.stop();
}
