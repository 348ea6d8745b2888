import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@rls/testkit';
import { MemoryStore, StatsStore, StoreError, type CounterOp } from '@rls/engine';
import { runCounterStoreContract } from '../support/store-contract.js';

runCounterStoreContract('memory', (clock) => {
  const store = new MemoryStore({ clock });
  return Promise.resolve({
    store,
    cleanup: () => store.close(),
    ttlSeconds: (key: string) => Promise.resolve(store.ttlSeconds(key)),
  });
});

const op = (key: string, addend: number, expireSeconds: number): CounterOp => ({ key, addend, expireSeconds, windowSeconds: 1 });

describe('MemoryStore specifics', () => {
  test('a key expires exactly when its TTL has elapsed on the injected clock', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock });
    await store.increment([op('k', 2, 10)]);
    clock.advance(9_999);
    assert.deepEqual(await store.get(['k']), [2]);
    assert.equal(store.pttl('k'), 1);
    clock.advance(1);
    assert.deepEqual(await store.get(['k']), [0]);
    assert.equal(store.ttlSeconds('k'), -2);
  });

  test('EXPIRE with a non-positive TTL deletes the key after the increment, as in Redis', async () => {
    const store = new MemoryStore({ clock: new FakeClock() });
    assert.deepEqual(await store.increment([op('gone', 5, 0)]), [5]);
    assert.deepEqual(await store.get(['gone']), [0]);
    assert.equal(store.counts().keys, 0);
  });

  test('non-integer addends or TTLs reject with StoreError and change nothing', async () => {
    const store = new MemoryStore({ clock: new FakeClock() });
    await assert.rejects(store.increment([op('a', 1, 10), op('b', 1.5, 10)]), StoreError);
    await assert.rejects(store.increment([op('a', 1, 2.5)]), /not an integer/);
    assert.deepEqual(await store.get(['a', 'b']), [0, 0]);
  });

  test('expired windows are freed incrementally by later calls, without reads of those keys', async () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const store = new MemoryStore({ clock, stats });
    const ops = Array.from({ length: 100 }, (_v, i) => op(`old_${i}`, 1, 1));
    await store.increment(ops);
    assert.equal(store.counts().keys, 100);
    clock.advance(2_000);
    // Each call sweeps a bounded number of entries; enough calls free everything.
    for (let i = 0; i < 20 && store.counts().keys > 1; i++) await store.increment([op('new', 1, 60)]);
    assert.deepEqual(store.counts(), { keys: 1, expired: 100, evicted: 0 });
    assert.equal(stats.counterValue('ratelimit.memory_store.expired'), 100);
    assert.equal(stats.gauge('ratelimit.memory_store.keys').value(), 1);
  });

  test('one call sweeps only a bounded number of entries (no full scan)', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock });
    await store.increment(Array.from({ length: 1000 }, (_v, i) => op(`k${i}`, 1, 1)));
    clock.advance(5_000);
    await store.increment([op('x', 1, 60)]);
    const { keys, expired } = store.counts();
    assert.ok(expired > 0 && expired < 20, `swept ${expired}`);
    assert.equal(keys, 1001 - expired);
  });

  test('when full, the keys expiring soonest are evicted first and counted', async () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const store = new MemoryStore({ clock, maxKeys: 3, stats });
    await store.increment([op('day', 1, 86_400), op('minute', 1, 60), op('hour', 1, 3_600)]);
    await store.increment([op('second', 1, 1)]);
    assert.deepEqual(await store.get(['day', 'minute', 'hour', 'second']), [1, 0, 1, 1]);
    await store.increment([op('week', 1, 604_800)]);
    assert.deepEqual(await store.get(['day', 'hour', 'second', 'week']), [1, 1, 0, 1]);
    assert.deepEqual(store.counts(), { keys: 3, expired: 0, evicted: 2 });
    assert.equal(stats.counterValue('ratelimit.memory_store.evicted'), 2);
  });

  test('a refreshed TTL moves a key behind keys that now expire sooner', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock, maxKeys: 2 });
    await store.increment([op('a', 1, 10), op('b', 1, 20)]);
    clock.advance(1_000);
    await store.increment([op('a', 1, 100)]); // a now expires after b
    await store.increment([op('c', 1, 50)]);
    assert.deepEqual(await store.get(['a', 'b', 'c']), [2, 0, 1]);
  });

  test('expired keys are reclaimed before live ones when full', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock, maxKeys: 2 });
    await store.increment([op('short', 1, 1), op('long', 1, 1000)]);
    clock.advance(1_500);
    await store.increment([op('new', 1, 10)]);
    assert.deepEqual(await store.get(['long', 'new']), [1, 1]);
    assert.equal(store.counts().evicted, 0);
    assert.equal(store.counts().expired, 1);
  });

  test('many refreshes of one hot key keep the queue bounded', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock, maxKeys: 10 });
    for (let i = 0; i < 5_000; i++) {
      await store.increment([op('hot', 1, 60 + (i % 300))]);
      clock.advance(10);
    }
    assert.deepEqual(await store.get(['hot']), [5_000]);
    assert.equal(store.counts().keys, 1);
    // Random-looking TTLs only add an entry when the expiry moves earlier than the queued one.
    assert.ok(store.queueLength() <= 5, `queue has ${store.queueLength()} entries`);
  });
});
