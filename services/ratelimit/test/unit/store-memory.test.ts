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
  test('a key expires exactly when its TTL has elapsed on the injected clock', () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock });
    store.increment([op('k', 2, 10)]);
    clock.advance(9_999);
    assert.deepEqual(store.get(['k']), [2]);
    assert.equal(store.pttl('k'), 1);
    clock.advance(1);
    assert.deepEqual(store.get(['k']), [0]);
    assert.equal(store.ttlSeconds('k'), -2);
  });

  test('EXPIRE with a non-positive TTL deletes the key after the increment, as in Redis', () => {
    const store = new MemoryStore({ clock: new FakeClock() });
    assert.deepEqual(store.increment([op('gone', 5, 0)]), [5]);
    assert.deepEqual(store.get(['gone']), [0]);
    assert.equal(store.counts().keys, 0);
  });

  test('non-integer addends or TTLs throw StoreError at once and change nothing', () => {
    const store = new MemoryStore({ clock: new FakeClock() });
    assert.throws(() => store.increment([op('a', 1, 10), op('b', 1.5, 10)]), StoreError);
    assert.throws(() => store.increment([op('a', 1, 2.5)]), /not an integer/);
    assert.deepEqual(store.get(['a', 'b']), [0, 0]);
  });

  test('expired windows are freed incrementally by later calls, without reads of those keys', () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const store = new MemoryStore({ clock, stats });
    const ops = Array.from({ length: 100 }, (_v, i) => op(`old_${i}`, 1, 1));
    store.increment(ops);
    assert.equal(store.counts().keys, 100);
    clock.advance(2_000);
    // Each call sweeps a bounded number of entries; enough calls free everything.
    for (let i = 0; i < 20 && store.counts().keys > 1; i++) store.increment([op('new', 1, 60)]);
    assert.deepEqual(store.counts(), { keys: 1, expired: 100, evicted: 0 });
    assert.equal(stats.counterValue('ratelimit.memory_store.expired'), 100);
    assert.equal(stats.gauge('ratelimit.memory_store.keys').value(), 1);
  });

  test('one call sweeps only a bounded number of entries (no full scan)', () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock });
    store.increment(Array.from({ length: 1000 }, (_v, i) => op(`k${i}`, 1, 1)));
    clock.advance(5_000);
    store.increment([op('x', 1, 60)]);
    const { keys, expired } = store.counts();
    assert.ok(expired > 0 && expired < 20, `swept ${expired}`);
    assert.equal(keys, 1001 - expired);
  });

  test('when full, the least recently used cold key is evicted first and counted', () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const store = new MemoryStore({ clock, maxKeys: 3, stats });
    store.increment([op('day', 1, 86_400), op('minute', 1, 60), op('hour', 1, 3_600)]);
    clock.advance(2_000);
    store.increment([op('day', 1, 86_400)]); // touched: now the most recently used
    store.increment([op('second', 1, 1)]);
    assert.deepEqual(store.get(['day', 'minute', 'hour', 'second']), [2, 0, 1, 1]);
    clock.advance(500);
    store.increment([op('week', 1, 604_800)]);
    assert.deepEqual(store.get(['day', 'hour', 'second', 'week']), [2, 0, 1, 1]);
    assert.deepEqual(store.counts(), { keys: 3, expired: 0, evicted: 2 });
    assert.equal(stats.counterValue('ratelimit.memory_store.evicted'), 2);
  });

  test('a key touched in the current or previous second is never evicted: the new key is refused, counted and logged once', () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const lines: string[] = [];
    const store = new MemoryStore({ clock, maxKeys: 2, stats, log: (m) => lines.push(m) });
    store.increment([op('a', 1, 3_600), op('b', 1, 3_600)]);
    clock.advance(1_000); // previous second: still hot
    assert.throws(() => store.increment([op('c', 1, 60)]), (err: unknown) => err instanceof StoreError && /memory store full/.test(err.message));
    assert.throws(() => store.increment([op('d', 1, 60)]), StoreError);
    assert.deepEqual(store.get(['a', 'b', 'c', 'd']), [1, 1, 0, 0]);
    assert.equal(stats.counterValue('ratelimit.memory_store.refused'), 2);
    assert.equal(store.pressure().refused, 2);
    assert.equal(lines.length, 1, 'the log line is rate-limited');
    // Existing keys keep counting while new ones are refused.
    assert.deepEqual(store.increment([op('a', 1, 3_600)]), [2]);
    clock.advance(1_000); // b is cold now
    assert.deepEqual(store.increment([op('c', 1, 60)]), [1]);
    assert.deepEqual(store.get(['a', 'b']), [2, 0]);
    assert.equal(store.counts().evicted, 1);
  });

  test('a refused batch changes nothing, existing keys in it included', () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock, maxKeys: 2 });
    store.increment([op('a', 1, 3_600), op('b', 1, 3_600)]);
    assert.throws(() => store.increment([op('a', 5, 3_600), op('new', 1, 60)]), StoreError);
    assert.deepEqual(store.get(['a', 'b', 'new']), [1, 1, 0]);
  });

  test('a cold counter at its limit is held (kept) while held counters fit in half of the budget', () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const store = new MemoryStore({ clock, maxKeys: 3, stats });
    store.increment([{ ...op('limited', 1, 3_600), limit: 1 }, { ...op('under', 1, 3_600), limit: 5 }, op('other', 1, 3_600)]);
    clock.advance(5_000);
    store.increment([op('n1', 1, 60)]);
    store.increment([op('n2', 1, 60)]);
    assert.deepEqual(store.get(['limited', 'under', 'other']), [1, 0, 0]);
    assert.equal(store.counts().evicted, 2);
    assert.equal(stats.counterValue('ratelimit.memory_store.evicted_held'), 0);
    assert.ok(store.pressure().heldBytes > 0);
  });

  test('held counters are evicted (oldest first, counted) once they weigh more than half the budget', () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const maxBytes = 8192;
    const store = new MemoryStore({ clock, maxBytes, stats });
    const long = (i: number): string => `held_${i}_${'x'.repeat(800)}`;
    // Each ~1 KB; at their limit of 1.
    for (let i = 0; i < 7; i++) store.increment([{ ...op(long(i), 1, 3_600), limit: 1 }]);
    clock.advance(5_000);
    for (let i = 0; i < 4; i++) store.increment([op(`new_${i}_${'y'.repeat(800)}`, 1, 60)]);
    const p = store.pressure();
    assert.ok(p.bytes <= maxBytes, `${p.bytes} bytes`);
    assert.ok(p.evictedHeld > 0 && p.evictedHeld === stats.counterValue('ratelimit.memory_store.evicted_held'));
    assert.ok(p.heldBytes * 2 <= maxBytes + 1100, `held ${p.heldBytes}`);
    assert.deepEqual(store.get([long(0)]), [0], 'the oldest held counter went first');
    assert.deepEqual(store.get([long(6)]), [1]);
  });

  test('bytes stay within the budget with 4 KB descriptor values, and the gauge reports them', () => {
    const clock = new FakeClock();
    const stats = new StatsStore();
    const maxBytes = 256 * 1024;
    const store = new MemoryStore({ clock, maxBytes, stats });
    const value = 'v'.repeat(4096);
    let refused = 0;
    for (let i = 0; i < 2_000; i++) {
      try {
        store.increment([op(`attack_${value}_${i}`, 1, 3_600)]);
      } catch (err) {
        assert.ok(err instanceof StoreError);
        refused++;
      }
      assert.ok(store.pressure().bytes <= maxBytes);
      clock.advance(100);
    }
    assert.equal(stats.gauge('ratelimit.memory_store.bytes').value(), store.pressure().bytes);
    assert.ok(store.counts().evicted > 1_000, `evicted ${store.counts().evicted}`);
    // 10 new keys/s × ~4.3 KB stay within 256 KB for two seconds, so nothing hot had to be refused.
    assert.equal(refused, 0);
  });

  test('a victim limited to 10/s keeps being refused while an attacker floods distinct one-hour keys', () => {
    const clock = new FakeClock(1_800_000_000_000);
    const maxBytes = 64 * 1024;
    const store = new MemoryStore({ clock, maxBytes });
    let attack = 0;
    let refusedBatches = 0;
    const hit = (key: string, expire: number, limit: number): boolean => {
      try {
        const [v] = store.increment([{ ...op(key, 1, expire), limit }]);
        return (v as number) <= limit;
      } catch {
        refusedBatches++;
        return false; // a store failure: the victim is not admitted (failure_mode_deny)
      }
    };
    // The victim also used up a 5-per-hour limit before the flood.
    for (let i = 0; i < 6; i++) hit('victim_hour', 3_600, 5);
    for (const attackersPerTick of [1, 20]) {
      for (let s = 0; s < 10; s++) {
        let admitted = 0;
        const sec = Math.floor(clock.now() / 1000);
        for (let tick = 0; tick < 100; tick++) {
          for (let j = 0; j < attackersPerTick; j++) {
            try {
              store.increment([op(`attacker_${attack++}_${'a'.repeat(100)}`, 1, 3_600)]);
            } catch {
              // refused: the attacker's own keys, once every counter is hot
            }
          }
          if (tick % 4 === 0 && (hit(`victim_${sec}`, 1, 10))) admitted++;
          assert.equal(hit('victim_hour', 3_600, 5), false, 'the hour counter at its limit is never reset');
          clock.advance(10);
        }
        assert.ok(admitted <= 10, `second ${s}: ${admitted} admitted`);
        assert.ok(store.pressure().bytes <= maxBytes);
      }
    }
    assert.ok(store.counts().evicted > 0);
    assert.ok(store.pressure().refused > 0, 'at 2,000 new keys/s the budget is all hot: new keys are refused, old counters kept');
    assert.ok(refusedBatches >= 0);
  });

  test('expired keys are reclaimed before live ones when full', () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock, maxKeys: 2 });
    store.increment([op('short', 1, 1), op('long', 1, 1000)]);
    clock.advance(1_500);
    store.increment([op('new', 1, 10)]);
    assert.deepEqual(store.get(['long', 'new']), [1, 1]);
    assert.equal(store.counts().evicted, 0);
    assert.equal(store.counts().expired, 1);
  });

  test('many refreshes of one hot key keep the queue bounded', () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock, maxKeys: 10 });
    for (let i = 0; i < 5_000; i++) {
      store.increment([op('hot', 1, 60 + (i % 300))]);
      clock.advance(10);
    }
    assert.deepEqual(store.get(['hot']), [5_000]);
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

  test('fixed ops as increment; sliding ops also read the previous key (0 when missing) without changing it', () => {
    const store = new MemoryStore({ clock: new FakeClock(T) });
    store.increment([op('prev', 7, 120)]);
    const r = store.execute([op('f', 2, 60), { ...op('cur', 3, 120), previousKey: 'prev' }, { ...op('cur2', 1, 120), previousKey: 'none' }]);
    assert.deepEqual(r, [{ value: 2 }, { value: 3, previous: 7 }, { value: 1, previous: 0 }]);
    assert.deepEqual(store.get(['prev', 'cur', 'none']), [7, 3, 0]);
    assert.equal(store.pttl('cur'), 120_000);
  });

  test('GCRA: admits up to the tolerance, refuses without change, TTL = ceil((TAT − now) / 1000) ms', () => {
    const clock = new FakeClock(T);
    const store = new MemoryStore({ clock });
    const now = T * 1000;
    // emission 10 µs, tolerance 30 µs: three hits at once
    assert.deepEqual(store.execute([bucket('b', 1, now), bucket('b', 2, now), bucket('b', 1, now)]), [
      { value: now + 10, admitted: true },
      { value: now + 30, admitted: true },
      { value: now + 30, admitted: false },
    ]);
    assert.deepEqual(store.get(['b']), [now + 30]);
    assert.equal(store.pttl('b'), 1, 'at least 1 ms');
    // addend 0 checks; a TAT in the past counts from now
    assert.deepEqual(store.execute([bucket('b', 0, now)]), [{ value: now + 30, admitted: true }]);
    assert.deepEqual(store.execute([bucket('b', 1, now + 20)]), [{ value: now + 40, admitted: true }]);
    const big = bucket('c', 1, now, 1_000_000, 5_000_000);
    assert.deepEqual(store.execute([big, { ...big, addend: 10 }]), [{ value: now + 1_000_000, admitted: true }, { value: now + 1_000_000, admitted: false }]);
    assert.equal(store.pttl('c'), 1000);
    clock.advance(1000);
    assert.deepEqual(store.get(['c']), [0], 'the TAT expires once it is in the past');
  });

  test('huge addends are refused exactly (no float rounding), and bad ops throw StoreError at once, changing nothing', () => {
    const store = new MemoryStore({ clock: new FakeClock(T) });
    const now = T * 1000;
    assert.deepEqual(store.execute([bucket('h', 2 ** 40, now, 31_536_000_000_000, 31_536_000_000_000)]), [{ value: now, admitted: false }]);
    assert.throws(() => store.execute([op('x', 1, 10), bucket('y', 1, now, 0)]), StoreError);
    assert.throws(() => store.execute([op('x', -1, 10)]), StoreError);
    assert.throws(() => store.execute([op('x', 1, 10), bucket('y', 1, 1.5)]), StoreError);
    assert.deepEqual(store.get(['x', 'y', 'h']), [0, 0, 0]);
  });

  test('bucket and sliding keys count against maxKeys like counters', () => {
    const clock = new FakeClock(T);
    const store = new MemoryStore({ clock, maxKeys: 3 });
    for (let i = 0; i < 10; i++) {
      const now = clock.now() * 1000;
      store.execute([bucket(`b${i}`, 1, now, 1000, 5000), { ...op(`s${i}`, 1, 60), previousKey: `s${i - 1}` }]);
      clock.advance(3_000);
    }
    assert.equal(store.counts().keys, 3);
    assert.ok(store.counts().evicted + store.counts().expired >= 17);
  });
});
