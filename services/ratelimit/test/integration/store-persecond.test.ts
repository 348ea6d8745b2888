import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, type RedisServer } from '@rls/testkit';
import { RedisStore } from '../../src/backends/redis-store.js';
import { PerSecondSplitStore } from '../../src/backends/split-store.js';
import { createKvStore } from '../../src/compose-counter-store.js';
import { StatsStore, type CounterOp } from '@rls/engine';
import { loadSettings } from '../../src/settings.js';
import { runCounterStoreContract } from '../support/store-contract.js';

let main: RedisServer;
let second: RedisServer;
before(async () => {
  [main, second] = await Promise.all([startRedis(), startRedis()]);
});
after(async () => {
  await Promise.all([main.stop(), second.stop()]);
});

const split = (): PerSecondSplitStore =>
  new PerSecondSplitStore(
    new RedisStore({ url: main.url, socketType: 'tcp', poolSize: 2, timeoutMs: 2_000 }),
    new RedisStore({ url: second.url, socketType: 'tcp', poolSize: 2, timeoutMs: 2_000, statsPrefix: 'ratelimit.redis_per_second_pool' }),
  );

// The contract's ops use minute windows, so they all go to the main store here; the routing of
// second windows is checked below.
runCounterStoreContract('per-second split (two Redis servers)', async () => {
  await Promise.all([main.call('FLUSHALL'), second.call('FLUSHALL')]);
  const store = split();
  await Promise.all([(store.main as RedisStore).waitUntilConnected(5_000), (store.perSecond as RedisStore).waitUntilConnected(5_000)]);
  return { store, cleanup: () => store.close(), ttlSeconds: async (key: string) => (await main.call('TTL', key)) as number };
});

const op = (key: string, windowSeconds: number, addend = 1): CounterOp => ({ key, addend, expireSeconds: windowSeconds, windowSeconds });

describe('PerSecondSplitStore', () => {
  test('execute: second-window ops (sliding pairs and buckets) go to the per-second Redis, in op order', async () => {
    await Promise.all([main.call('FLUSHALL'), second.call('FLUSHALL')]);
    const store = split();
    try {
      assert.deepEqual([...store.algorithms].sort(), ['fixed_window', 'sliding_window', 'token_bucket']);
      const t = 1_700_000_000_000_000;
      await store.increment([op('sp', 1, 3), op('mp', 60, 4)]);
      const got = await store.execute([
        { ...op('sc', 1), previousKey: 'sp' },
        { ...op('mc', 60), previousKey: 'mp' },
        { ...op('stb', 1), bucket: { nowUs: t, emissionUs: 1_000_000_000, toleranceUs: 5_000_000_000 } },
        { ...op('mtb', 60), bucket: { nowUs: t, emissionUs: 60_000_000, toleranceUs: 60_000_000 } },
      ]);
      assert.deepEqual(got, [
        { value: 1, previous: 3 },
        { value: 1, previous: 4 },
        { value: t + 1_000_000_000, admitted: true },
        { value: t + 60_000_000, admitted: true },
      ]);
      assert.equal(await second.call('GET', 'sc'), '1');
      assert.equal(await second.call('GET', 'stb'), String(t + 1_000_000_000));
      assert.equal(await main.call('GET', 'mc'), '1');
      assert.equal(await main.call('GET', 'mtb'), String(t + 60_000_000));
      assert.equal(await main.call('GET', 'stb'), null);
    } finally {
      await store.close();
    }
  });

  test('second-window ops go to the per-second Redis, the others to the main one; values in op order', async () => {
    await Promise.all([main.call('FLUSHALL'), second.call('FLUSHALL')]);
    const store = split();
    try {
      assert.deepEqual(await store.increment([op('m1', 60), op('s1', 1, 5), op('m2', 3600, 2), op('s2', 1, 7)]), [1, 5, 2, 7]);
      assert.deepEqual(await store.increment([op('s1', 1)]), [6]);
      assert.deepEqual(await store.increment([op('m1', 60)]), [2]);
      assert.equal(await main.call('GET', 'm1'), '2');
      assert.equal(await main.call('GET', 's1'), null);
      assert.equal(await second.call('GET', 's1'), '6');
      assert.equal(await second.call('GET', 'm2'), null);
      assert.deepEqual(await store.get(['m1', 's1', 'm2', 's2', 'none']), [2, 6, 2, 7, 0]);
      assert.deepEqual(await store.get(['m1', 's1'], [60, 1]), [2, 6]);
    } finally {
      await store.close();
    }
  });

  test('both stores are called in parallel: two paused servers cost one pause', async () => {
    const store = split();
    try {
      await store.increment([op('pm', 60), op('ps', 1)]);
      const pauseMs = 400;
      await Promise.all([main.call('CLIENT', 'PAUSE', String(pauseMs), 'WRITE'), second.call('CLIENT', 'PAUSE', String(pauseMs), 'WRITE')]);
      const t0 = performance.now();
      await store.increment([op('pm', 60), op('ps', 1)]);
      const ms = performance.now() - t0;
      assert.ok(ms >= pauseMs * 0.7 && ms < pauseMs * 1.8, `one pause, not two: ${ms} ms`);
    } finally {
      await store.close();
    }
  });

  test('KVSTORE_PERSECOND settings build the split with its own pool statistics', async () => {
    await Promise.all([main.call('FLUSHALL'), second.call('FLUSHALL')]);
    const { settings } = loadSettings({
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: main.url,
      REDIS_PERSECOND: 'true',
      KVSTORE_PERSECOND_SOCKET_TYPE: 'tcp',
      KVSTORE_PERSECOND_URL: second.url,
      KVSTORE_PERSECOND_POOL_SIZE: '3',
      KVSTORE_POOL_SIZE: '2',
    });
    const stats = new StatsStore();
    const store = createKvStore(settings, { stats });
    try {
      await store.waitUntilConnected(5_000);
      assert.ok(store instanceof PerSecondSplitStore);
      assert.deepEqual(await store.increment([op('a', 1), op('b', 60)]), [1, 1]);
      assert.equal(await second.call('GET', 'a'), '1');
      assert.equal(stats.gauge('ratelimit.redis_pool.cx_active').value() <= 2, true);
      assert.equal(stats.gauge('ratelimit.redis_per_second_pool.cx_active').value() <= 3, true);
      assert.ok(stats.counterValue('ratelimit.redis_per_second_pool.cx_total') >= 1);
      assert.equal(store.isConnected(), true);
    } finally {
      await store.close();
    }
  });
});
