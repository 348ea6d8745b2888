import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { RedisStore } from '../../src/backends/redis-store.js';
import type { OnEmptyBehavior } from '../../src/backends/connection-pool.js';
import { StatsStore, StoreError, type CounterOp } from '@rls/engine';

// The pool is exhausted when every connection carries `maxPendingPerConnection` calls awaiting
// replies. CLIENT PAUSE ... WRITE holds the replies of INCRBY, so a test can fill the pool.
let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const op = (key: string): CounterOp => ({ key, addend: 1, expireSeconds: 60, windowSeconds: 60 });

function make(onEmpty: OnEmptyBehavior, timeoutMs: number, stats?: StatsStore): RedisStore {
  return new RedisStore({ url: redis.url, socketType: 'tcp', poolSize: 1, maxPendingPerConnection: 2, onEmpty, onEmptyWaitMs: 200, timeoutMs, stats });
}

type Outcome = { value?: number; err?: StoreError; ms: number };
function track(p: Promise<number[]>): Promise<Outcome> {
  const t0 = performance.now();
  return p.then(
    (v) => ({ value: v[0] as number, ms: performance.now() - t0 }),
    (err: unknown) => {
      assert.ok(err instanceof StoreError, String(err));
      return { err, ms: performance.now() - t0 };
    },
  );
}

const clientCount = async (): Promise<number> => String(await redis.call('CLIENT', 'LIST')).split('\n').filter((l) => l.length > 0).length - 1;

describe('pool exhausted', () => {
  test('WAIT: calls queue for a free connection and all complete, in order', async () => {
    await redis.call('FLUSHALL');
    const store = make('WAIT', 3_000);
    try {
      await store.waitUntilConnected(5_000);
      await redis.call('CLIENT', 'PAUSE', '500', 'WRITE');
      const calls = Array.from({ length: 5 }, () => track(store.increment([op('w')])));
      await waitFor(() => store.pool.waiting === 3, { what: 'three calls waiting' });
      const out = await Promise.all(calls);
      assert.deepEqual(out.map((o) => o.value), [1, 2, 3, 4, 5]);
      assert.equal(store.pool.waiting, 0);
    } finally {
      await store.close();
    }
  });

  test('WAIT is bounded by KVSTORE_TIMEOUT: waiting calls fail with "pool exhausted" at the timeout', async () => {
    const store = make('WAIT', 400);
    try {
      await store.waitUntilConnected(5_000);
      await redis.call('CLIENT', 'PAUSE', '1500', 'WRITE');
      const out = await Promise.all(Array.from({ length: 4 }, () => track(store.increment([op('wt')]))));
      for (const o of out) {
        assert.ok(o.err !== undefined, 'failed');
        assert.ok(o.ms >= 350 && o.ms < 400 + 300, `failed near the timeout (${Math.round(o.ms)} ms)`);
      }
      assert.match(out[3]!.err!.message, /pool exhausted/);
      assert.match(out[0]!.err!.message, /timed out after 400 ms/);
    } finally {
      await redis.call('CLIENT', 'UNPAUSE');
      await store.close();
    }
  });

  test('ERROR: the extra call fails after the wait duration; the calls in flight complete', async () => {
    await redis.call('FLUSHALL');
    const store = make('ERROR', 3_000);
    try {
      await store.waitUntilConnected(5_000);
      await redis.call('CLIENT', 'PAUSE', '700', 'WRITE');
      const out = await Promise.all(Array.from({ length: 3 }, () => track(store.increment([op('e')]))));
      assert.deepEqual(out.slice(0, 2).map((o) => o.value), [1, 2]);
      const third = out[2]!;
      assert.match(third.err?.message ?? '', /pool exhausted.*after waiting 200 ms.*ERROR/);
      assert.ok(third.ms >= 180 && third.ms < 600, `failed after the wait duration (${Math.round(third.ms)} ms)`);
      assert.equal(await redis.call('GET', 'e'), '2');
    } finally {
      await store.close();
    }
  });

  test('CREATE: after the wait duration an extra connection carries the call; it closes once idle', async () => {
    await redis.call('FLUSHALL');
    const stats = new StatsStore();
    const store = make('CREATE', 3_000, stats);
    try {
      await store.waitUntilConnected(5_000);
      // Connections of the previous tests may still be closing at the server.
      await waitFor(async () => (await clientCount()) === 1, { what: 'only the pool connection at the server' });
      await redis.call('CLIENT', 'PAUSE', '800', 'WRITE');
      const calls = Array.from({ length: 4 }, () => track(store.increment([op('c')])));
      await waitFor(() => store.pool.extraConnections === 1, { what: 'an extra connection', timeoutMs: 2_000 });
      await waitFor(async () => (await clientCount()) === 2, { what: 'the extra connection at the server' });
      const out = await Promise.all(calls);
      assert.deepEqual(out.map((o) => o.value).sort(), [1, 2, 3, 4]);
      assert.ok(out[2]!.ms >= 180, 'the extra connection waited for the wait duration first');
      await waitFor(() => store.pool.extraConnections === 0, { what: 'the extra connection to close when idle' });
      await waitFor(async () => (await clientCount()) === 1, { what: 'the server to see it gone' });
      assert.equal(stats.counterValue('ratelimit.redis_pool.cx_total'), 2);
      assert.equal(stats.gauge('ratelimit.redis_pool.cx_active').value(), 1);
    } finally {
      await store.close();
    }
  });
});
