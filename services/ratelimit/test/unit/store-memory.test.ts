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

describe('MemoryStore.execute (sliding windows and token buckets, counter-store.ts)', () => {
  const T = 1_800_000_000_000; // ms
  const bucket = (key: string, addend: number, nowUs: number, emissionUs = 10, toleranceUs = 30): CounterOp => ({
    key,
    addend,
    expireSeconds: 1,
    windowSeconds: 1,
    bucket: { nowUs, emissionUs, toleranceUs },
  });

  test('claims every algorithm', () => {
    const store = new MemoryStore({ clock: new FakeClock(T) });
    assert.deepEqual([...store.algorithms].sort(), ['fixed_window', 'sliding_window', 'token_bucket']);
  });

  test('fixed ops as increment; sliding ops also read the previous key (0 when missing) without changing it', async () => {
    const store = new MemoryStore({ clock: new FakeClock(T) });
    await store.increment([op('prev', 7, 120)]);
    const r = await store.execute([op('f', 2, 60), { ...op('cur', 3, 120), previousKey: 'prev' }, { ...op('cur2', 1, 120), previousKey: 'none' }]);
    assert.deepEqual(r, [{ value: 2 }, { value: 3, previous: 7 }, { value: 1, previous: 0 }]);
    assert.deepEqual(await store.get(['prev', 'cur', 'none']), [7, 3, 0]);
    assert.equal(store.pttl('cur'), 120_000);
  });

  test('GCRA: admits up to the tolerance, refuses without change, TTL = ceil((TAT − now) / 1000) ms', async () => {
    const clock = new FakeClock(T);
    const store = new MemoryStore({ clock });
    const now = T * 1000;
    // emission 10 µs, tolerance 30 µs: three hits at once
    assert.deepEqual(await store.execute([bucket('b', 1, now), bucket('b', 2, now), bucket('b', 1, now)]), [
      { value: now + 10, admitted: true },
      { value: now + 30, admitted: true },
      { value: now + 30, admitted: false },
    ]);
    assert.deepEqual(await store.get(['b']), [now + 30]);
    assert.equal(store.pttl('b'), 1, 'at least 1 ms');
    // addend 0 checks; a TAT in the past counts from now
    assert.deepEqual(await store.execute([bucket('b', 0, now)]), [{ value: now + 30, admitted: true }]);
    assert.deepEqual(await store.execute([bucket('b', 1, now + 20)]), [{ value: now + 40, admitted: true }]);
    const big = bucket('c', 1, now, 1_000_000, 5_000_000);
    assert.deepEqual(await store.execute([big, { ...big, addend: 10 }]), [{ value: now + 1_000_000, admitted: true }, { value: now + 1_000_000, admitted: false }]);
    assert.equal(store.pttl('c'), 1000);
    clock.advance(1000);
    assert.deepEqual(await store.get(['c']), [0], 'the TAT expires once it is in the past');
  });

  test('huge addends are refused exactly (no float rounding), and bad ops reject with StoreError changing nothing', async () => {
    const store = new MemoryStore({ clock: new FakeClock(T) });
    const now = T * 1000;
    assert.deepEqual(await store.execute([bucket('h', 2 ** 40, now, 31_536_000_000_000, 31_536_000_000_000)]), [{ value: now, admitted: false }]);
    await assert.rejects(store.execute([op('x', 1, 10), bucket('y', 1, now, 0)]), StoreError);
    await assert.rejects(store.execute([op('x', -1, 10)]), StoreError);
    await assert.rejects(store.execute([op('x', 1, 10), bucket('y', 1, 1.5)]), StoreError);
    assert.deepEqual(await store.get(['x', 'y', 'h']), [0, 0, 0]);
  });

  test('bucket and sliding keys count against maxKeys like counters', async () => {
    const store = new MemoryStore({ clock: new FakeClock(T), maxKeys: 3 });
    const now = T * 1000;
    for (let i = 0; i < 10; i++) await store.execute([bucket(`b${i}`, 1, now, 1000, 5000), { ...op(`s${i}`, 1, 60), previousKey: `s${i - 1}` }]);
    assert.equal(store.counts().keys, 3);
    assert.ok(store.counts().evicted >= 17);
  });
});
