// The behaviour every CounterStore must show (house rule 3): one set of cases run against each
// implementation. Expiry is tested by advancing the injected clock and then waiting (bounded) for
// the key to read 0, so a store on the fake clock passes at once and Redis passes in real time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, waitFor } from '@rls/testkit';
import type { CounterOp, CounterStore } from '../src/backends/counter-store.js';

export interface ContractHarness {
  store: CounterStore;
  cleanup: () => Promise<void>;
  /** The key's remaining TTL in whole seconds as Redis TTL reports it (-2 when missing). */
  ttlSeconds: (key: string) => Promise<number>;
}

const op = (key: string, addend: number, expireSeconds = 60): CounterOp => ({ key, addend, expireSeconds, windowSeconds: 60 });

/**
 * Where a backend legitimately differs from Redis's INCRBY + EXPIRE (memcached, reference §3.20).
 * Every trait defaults to Redis behaviour.
 */
export interface ContractTraits {
  /** Writes land after the call resolves: concurrent calls may see the same value (final counts stay exact). Await `settle()` before reading. */
  asyncIncrements?: { settle: (store: CounterStore) => Promise<void> };
  /** The TTL is set when the key is created and never refreshed. */
  ttlOnCreateOnly?: boolean;
  /** Keys with whitespace/control characters or empty keys are refused: their ops count from 0 and store nothing. */
  refusesUnsafeKeys?: boolean;
}

export function runCounterStoreContract(name: string, makeStore: (clock: FakeClock) => Promise<ContractHarness>, traits: ContractTraits = {}): void {
  const settle = async (store: CounterStore): Promise<void> => {
    await traits.asyncIncrements?.settle(store);
  };
  describe(`CounterStore contract: ${name}`, () => {
    const withStore = async (fn: (h: ContractHarness, clock: FakeClock) => Promise<void>): Promise<void> => {
      const clock = new FakeClock();
      const h = await makeStore(clock);
      try {
        await fn(h, clock);
      } finally {
        await h.cleanup();
      }
    };

    test('increment resolves with post-increment values in op order', () =>
      withStore(async ({ store }) => {
        assert.deepEqual(await store.increment([op('a', 1), op('b', 5), op('c', 2)]), [1, 5, 2]);
        assert.deepEqual(await store.increment([op('c', 1), op('a', 1), op('b', 5)]), [3, 2, 10]);
      }));

    test('sequential calls read the previous calls\' increments, with no wait in between', () =>
      withStore(async ({ store }) => {
        for (let i = 1; i <= 20; i++) assert.deepEqual(await store.increment([op('seq', 1), op('seq2', 2)]), [i, 2 * i]);
      }));

    test('an empty call resolves with an empty list', () =>
      withStore(async ({ store }) => {
        assert.deepEqual(await store.increment([]), []);
        assert.deepEqual(await store.get([]), []);
      }));

    test('addend 0 reads the counter without changing it', () =>
      withStore(async ({ store }) => {
        assert.deepEqual(await store.increment([op('k', 0)]), [0]);
        await store.increment([op('k', 3)]);
        assert.deepEqual(await store.increment([op('k', 0)]), [3]);
        await settle(store);
        assert.deepEqual(await store.get(['k']), [3]);
      }));

    test('the same key twice in one call: the second op sees the first', () =>
      withStore(async ({ store }) => {
        assert.deepEqual(await store.increment([op('dup', 1), op('other', 7), op('dup', 2)]), [1, 7, 3]);
        await settle(store);
        assert.deepEqual(await store.get(['dup', 'other']), [3, 7]);
      }));

    test('the TTL is set and re-applied on every increment (longer or shorter)', () =>
      withStore(async ({ store, ttlSeconds }) => {
        assert.equal(await ttlSeconds('t'), -2);
        await store.increment([op('t', 1, 100)]);
        await settle(store);
        assert.ok([99, 100].includes(await ttlSeconds('t')), 'ttl ~100');
        await store.increment([op('t', 1, 500)]);
        await settle(store);
        if (traits.ttlOnCreateOnly === true) {
          assert.ok([99, 100].includes(await ttlSeconds('t')), 'ttl kept from creation');
          return;
        }
        assert.ok([499, 500].includes(await ttlSeconds('t')), 'ttl refreshed to ~500');
        await store.increment([op('t', 0, 50)]);
        assert.ok([49, 50].includes(await ttlSeconds('t')), 'ttl re-applied even when shorter, also with addend 0');
      }));

    test('an expired key reads 0 and counts again from 0', () =>
      withStore(async ({ store }, clock) => {
        assert.deepEqual(await store.increment([op('exp', 4, 1), op('keep', 1, 3600)]), [4, 1]);
        await settle(store);
        clock.advance(1_100);
        await waitFor(async () => (await store.get(['exp']))[0] === 0, { what: 'key to expire', timeoutMs: 5_000 });
        assert.deepEqual(await store.get(['exp', 'keep']), [0, 1]);
        assert.deepEqual(await store.increment([op('exp', 1, 1)]), [1]);
      }));

    test('get of missing keys is 0, in key order', () =>
      withStore(async ({ store }) => {
        await store.increment([op('present', 9)]);
        await settle(store);
        assert.deepEqual(await store.get(['missing1', 'present', 'missing2']), [0, 9, 0]);
      }));

    test('a batch of 500 ops in one call', () =>
      withStore(async ({ store }) => {
        const ops: CounterOp[] = [];
        for (let i = 0; i < 500; i++) ops.push(op(`batch_${i % 250}`, i + 1));
        const got = await store.increment(ops);
        const expected = ops.map((_o, i) => (i < 250 ? i + 1 : i + 1 + (i - 250 + 1)));
        assert.deepEqual(got, expected);
        await settle(store);
        const keys = Array.from({ length: 250 }, (_v, i) => `batch_${i}`);
        assert.deepEqual(await store.get(keys), keys.map((_k, i) => i + 1 + (i + 250 + 1)));
      }));

    test('many parallel calls: exact final counts, every post-increment value seen once', () =>
      withStore(async ({ store }) => {
        const n = 300;
        const results = await Promise.all(Array.from({ length: n }, () => store.increment([op('par_a', 1), op('par_b', 2)])));
        await settle(store);
        assert.deepEqual(await store.get(['par_a', 'par_b']), [n, 2 * n]);
        if (traits.asyncIncrements !== undefined) {
          // Calls in flight together may read the same value; each still answers value + addend.
          for (const r of results) assert.ok((r[0] ?? 0) >= 1 && (r[0] ?? 0) <= n && (r[1] ?? 0) >= 2 && (r[1] ?? 0) <= 2 * n);
          return;
        }
        const seenA = results.map((r) => r[0]).sort((x, y) => (x ?? 0) - (y ?? 0));
        assert.deepEqual(seenA, Array.from({ length: n }, (_v, i) => i + 1));
        for (const r of results) assert.equal(r[1], 2 * (r[0] ?? 0));
      }));

    test('keys with odd characters round-trip as distinct counters', () =>
      withStore(async ({ store }) => {
        let keys = ['a/b/c', 'x*y', 'p:q:r', 'with space', 'ünïcødé_🚀_日本', 'tab\tand\r\nnewline', '', 'domain_key__1234'];
        if (traits.refusesUnsafeKeys === true) {
          const unsafe = ['with space', 'tab\tand\r\nnewline', '', `long_${'x'.repeat(250)}`];
          assert.deepEqual(await store.increment(unsafe.map((k) => op(k, 2))), [2, 2, 2, 2], 'refused keys count from 0');
          assert.deepEqual(await store.increment([...unsafe.map((k) => op(k, 2)), op('safe_after_unsafe', 1)]), [2, 2, 2, 2, 1], 'nothing stored, the connection still works');
          keys = keys.filter((k) => !unsafe.includes(k));
        }
        const got = await store.increment(keys.map((k, i) => op(k, i + 1)));
        assert.deepEqual(got, keys.map((_k, i) => i + 1));
        await settle(store);
        assert.deepEqual(await store.get(keys), keys.map((_k, i) => i + 1));
        assert.deepEqual(await store.increment(keys.map((k) => op(k, 10))), keys.map((_k, i) => i + 11));
      }));

    test('a large addend and large counts stay exact', () =>
      withStore(async ({ store }) => {
        assert.deepEqual(await store.increment([op('big', 4_000_000_000)]), [4_000_000_000]);
        assert.deepEqual(await store.increment([op('big', 4_000_000_000)]), [8_000_000_000]);
      }));

    test('the store reports itself connected', () =>
      withStore(async ({ store }) => {
        await store.increment([op('conn', 1)]);
        assert.equal(store.isConnected(), true);
      }));
  });
}
