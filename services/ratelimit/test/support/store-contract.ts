// The behaviour every CounterStore must show: one set of cases run against each
// implementation. Expiry is tested by advancing the injected clock and then waiting (bounded) for
// the key to read 0, so a store on the fake clock passes at once and Redis passes in real time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, waitFor } from '@rls/testkit';
import { Code, DEFAULT_LIMITER_OPTIONS, MAX_HITS_ADDEND, RateLimitService, SATURATED_COUNT, StatsStore, Unit, loadRuleSet, type CounterOp, type CounterStore, type MaybePromise, type RateLimitRequest, type RequestDescriptor } from '@rls/engine';

export interface ContractHarness {
  store: CounterStore;
  cleanup: () => Promise<void>;
  /** The key's remaining TTL in whole seconds as Redis TTL reports it (-2 when missing). */
  ttlSeconds: (key: string) => Promise<number>;
}

const op = (key: string, addend: number, expireSeconds = 60): CounterOp => ({ key, addend, expireSeconds, windowSeconds: 60 });

/**
 * Where a backend legitimately differs from Redis's INCRBY + EXPIRE (memcached: see memcached-store.ts).
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

    test('delete removes the keys (an operator reset): they read 0 and count again from 0; missing keys are fine', () =>
      withStore(async ({ store }) => {
        assert.ok(store.delete !== undefined, 'every store can reset counters');
        await store.increment([op('del-a', 5), op('del-b', 7), op('del-keep', 3)]);
        await settle(store);
        await store.delete(['del-a', 'del-b', 'del-missing']);
        assert.deepEqual(await store.get(['del-a', 'del-b', 'del-keep']), [0, 0, 3]);
        assert.deepEqual(await store.increment([op('del-a', 1)]), [1]);
        await store.delete([]);
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

    // `expireOnCreate` (a windowed key of ours): the TTL must be there from creation on; whether a
    // later increment re-applies it is the store's choice (Redis stores skip it for keys they know).
    const once = (key: string, addend: number, expireSeconds: number): CounterOp => ({ ...op(key, addend, expireSeconds), expireOnCreate: true });
    const near = (ttl: number, expected: number): boolean => ttl === expected || ttl === expected - 1;

    test('expireOnCreate: a created key gets its TTL; counts stay exact; a later TTL may or may not be re-applied', () =>
      withStore(async ({ store, ttlSeconds }) => {
        assert.deepEqual(await store.increment([once('w', 2, 100)]), [2]);
        await settle(store);
        assert.ok(near(await ttlSeconds('w'), 100), 'ttl ~100 from creation');
        for (let i = 1; i <= 3; i++) assert.deepEqual(await store.increment([once('w', 1, 500)]), [2 + i]);
        await settle(store);
        const ttl = await ttlSeconds('w');
        assert.ok(near(ttl, 100) || near(ttl, 500), `ttl ${ttl}: kept from creation or re-applied`);
        assert.deepEqual(await store.get(['w']), [5]);
      }));

    test('expireOnCreate: a key reset (deleted) behind the store is created again with its TTL, also with addend 0', () =>
      withStore(async ({ store, ttlSeconds }) => {
        assert.ok(store.delete !== undefined);
        for (const addend of [3, 0]) {
          await store.increment([once('reset', 1, 100)]);
          await store.increment([once('reset', 1, 100)]);
          await settle(store);
          await store.delete(['reset']);
          assert.equal(await ttlSeconds('reset'), -2);
          assert.deepEqual(await store.increment([once('reset', addend, 300)]), [addend], 'counts again from 0');
          await settle(store);
          const ttl = await ttlSeconds('reset');
          // Addend 0 need not create the key (memcached does not), but a key that exists has its TTL.
          assert.ok(near(ttl, 300) || (addend === 0 && ttl === -2), `addend ${addend}: the recreated key has its TTL (${ttl})`);
          await store.delete(['reset']);
        }
      }));

    test('expireOnCreate beside upstream-format ops in one call: theirs is still re-applied on every increment', () =>
      withStore(async ({ store, ttlSeconds }) => {
        assert.deepEqual(await store.increment([op('plain', 1, 100), once('tagged', 1, 100), op('plain2', 4, 100)]), [1, 1, 4]);
        assert.deepEqual(await store.increment([op('plain', 1, 500), once('tagged', 1, 500), op('plain2', 1, 500)]), [2, 2, 5]);
        await settle(store);
        if (traits.ttlOnCreateOnly !== true) {
          assert.ok(near(await ttlSeconds('plain'), 500) && near(await ttlSeconds('plain2'), 500), 'upstream-format keys: ttl refreshed');
        }
        const ttl = await ttlSeconds('tagged');
        assert.ok(near(ttl, 100) || near(ttl, 500), `tagged ttl ${ttl}`);
        assert.deepEqual(await store.get(['plain', 'tagged', 'plain2']), [2, 2, 5]);
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
        const results = await Promise.all(Array.from({ length: n }, async () => store.increment([op('par_a', 1), op('par_b', 2)])));
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

    // Exact bursts (issue 23 finding 5): concurrent calls each see a distinct count, so a limit of
    // N admits exactly N of them (the limiter admits a value <= the limit).
    test('200 concurrent increments of one key each see a distinct count: a 1-per-hour and a 10/s rule admit exactly 1 and 10', () =>
      withStore(async ({ store }) => {
        for (const [key, expire, limit] of [
          ['burst_hour', 3_600, 1],
          ['burst_second', 1, 10],
        ] as const) {
          const values = (await Promise.all(Array.from({ length: 200 }, async () => store.increment([{ key, addend: 1, expireSeconds: expire, windowSeconds: expire, limit }])))).map((v) => v[0] as number);
          assert.deepEqual([...values].sort((x, y) => x - y), Array.from({ length: 200 }, (_v, i) => i + 1), `${key}: every count once`);
          assert.equal(values.filter((v) => v <= limit).length, limit, `${key}: admitted`);
        }
      }));

    // Counters saturate (counter-store.ts): past 2^53 (JS precision), 2^63 (Redis INCRBY overflow)
    // and 2^64 (memcached incr wrap) a counter reads SATURATED_COUNT, never 0 or a small value, and
    // the call still succeeds. The addends here are larger than the limiter ever sends (it clamps
    // to MAX_HITS_ADDEND) so that months of maximal traffic fit into a few calls.
    test('a counter pushed past 2^53 reads saturated; further increments and addend 0 keep it there', () =>
      withStore(async ({ store, ttlSeconds }) => {
        const max = Number.MAX_SAFE_INTEGER;
        assert.deepEqual(await store.increment([op('sat', max - 1), op('sat_other', 1)]), [max - 1, 1]);
        assert.deepEqual(await store.increment([op('sat', 2)]), [SATURATED_COUNT]);
        assert.deepEqual(await store.increment([op('sat', MAX_HITS_ADDEND), op('sat', 1)]), [SATURATED_COUNT, SATURATED_COUNT]);
        await settle(store);
        assert.deepEqual(await store.get(['sat', 'sat_other']), [SATURATED_COUNT, 1]);
        assert.deepEqual(await store.increment([op('sat', 0)]), [SATURATED_COUNT], 'addend 0 reads it saturated');
        assert.deepEqual(await store.increment([op('sat', 1)]), [SATURATED_COUNT]);
        await settle(store);
        assert.ok((await ttlSeconds('sat')) > 0, 'the saturated counter still expires');
      }));

    test('a counter pushed past 2^63 and 2^64 in one call stays saturated; the call and its other ops succeed', () =>
      withStore(async ({ store, ttlSeconds }) => {
        // 2100 × (2^53-1) ≈ 1.9e19: past Redis's 2^63-1 after ~1024 ops, past 2^64 at the end.
        const ops: CounterOp[] = [op('bystander_a', 1)];
        for (let i = 0; i < 2100; i++) ops.push(op('huge', Number.MAX_SAFE_INTEGER));
        ops.push(op('bystander_b', 2));
        const got = await store.increment(ops);
        assert.equal(got.length, ops.length);
        assert.equal(got[0], 1);
        assert.equal(got[got.length - 1], 2);
        assert.ok(got.slice(1, -1).every((v) => v === SATURATED_COUNT), 'every op on the huge counter reads saturated');
        await settle(store);
        assert.deepEqual(await store.get(['huge', 'bystander_a', 'bystander_b']), [SATURATED_COUNT, 1, 2]);
        for (let i = 0; i < 3; i++) assert.deepEqual(await store.increment([op('huge', MAX_HITS_ADDEND), op('bystander_a', 1)]), [SATURATED_COUNT, 2 + i]);
        await settle(store);
        assert.deepEqual(await store.get(['huge']), [SATURATED_COUNT], 'never wrapped back to a small value');
        assert.ok((await ttlSeconds('huge')) > 0, 'the saturated counter still expires');
      }));

    test('the store reports itself connected', () =>
      withStore(async ({ store }) => {
        await store.increment([op('conn', 1)]);
        assert.equal(store.isConnected(), true);
      }));

    // The same through the service: the addends the limiter sends, overrides at their largest.
    describe('through the service (hits_addend and override extremes)', () => {
      const RULES = `
domain: sat
descriptors:
  - key: k
    rate_limit: { unit: hour, requests_per_unit: 10 }
`;
      const UINT32_MAX = 4_294_967_295;
      const withService = (fn: (svc: RateLimitService, store: KeyedStore) => Promise<void>): Promise<void> =>
        withStore(async ({ store }, clock) => {
          clock.setSeconds(1_767_225_600 + 17); // fixed, away from a window edge
          const stats = new StatsStore();
          const keyed = new KeyedStore(store);
          const svc = new RateLimitService({
            store: keyed,
            stats,
            clock,
            random: { int: () => 0 },
            options: { ...DEFAULT_LIMITER_OPTIONS, expirationJitterMaxSeconds: 0 },
          });
          svc.setRuleSet(loadRuleSet([{ name: 'sat.yaml', content: RULES }], { mergeDomainConfig: false, stats }));
          await fn(svc, keyed);
        });
      const desc = (value: string, extra: Partial<RequestDescriptor> = {}): RequestDescriptor => ({ entries: [{ key: 'k', value }], ...extra });
      const ask = async (svc: RateLimitService, store: KeyedStore, d: RequestDescriptor, hitsAddend = 0): Promise<{ code: number; remaining: number }> => {
        const req: RateLimitRequest = { domain: 'sat', descriptors: [d], hitsAddend };
        const res = await svc.shouldRateLimit(req);
        await settle(store.inner);
        const st = res.statuses[0]!;
        return { code: st.code, remaining: st.limitRemaining };
      };
      const OVER = { code: Code.OVER_LIMIT, remaining: 0 };
      const maxOverride = { requestsPerUnit: UINT32_MAX, unit: Unit.HOUR };

      test('request-level hits_addend at uint32 max is over the limit, and so is every later request', () =>
        withService(async (svc, store) => {
          assert.deepEqual(await ask(svc, store, desc('req'), UINT32_MAX), OVER);
          assert.deepEqual(await store.get(store.lastKeys), [UINT32_MAX], 'counted exactly');
          for (let i = 0; i < 3; i++) assert.deepEqual(await ask(svc, store, desc('req')), OVER);
          assert.deepEqual(await ask(svc, store, desc('req', { hitsAddend: 0 })), OVER, 'addend 0 sees it over');
        }));

      test('descriptor-level hits_addend beyond uint32 (UInt64Value) is clamped to 2^32: over the limit, the counter exact', () =>
        withService(async (svc, store) => {
          for (let i = 1; i <= 2; i++) {
            assert.deepEqual(await ask(svc, store, desc('d64', { hitsAddend: Number.MAX_SAFE_INTEGER })), OVER);
            assert.deepEqual(await store.get(store.lastKeys), [i * MAX_HITS_ADDEND], 'clamped, not wrapped or reset');
          }
          assert.deepEqual(await ask(svc, store, desc('d64')), OVER);
          // The clamp keeps every decision: beyond uint32 is still over the largest possible limit.
          assert.deepEqual(await ask(svc, store, desc('o64', { limit: maxOverride, hitsAddend: Number.MAX_SAFE_INTEGER })), OVER);
        }));

      test('a counter pushed past 2^53 and 2^64 keeps a normal request OVER_LIMIT for the rest of the window', () =>
        withService(async (svc, store) => {
          assert.deepEqual(await ask(svc, store, desc('push', { hitsAddend: 0 })), { code: Code.OK, remaining: 10 });
          const [key] = store.lastKeys;
          assert.ok(key !== undefined);
          // Months of maximal traffic in one call: past 2^53, 2^63 (Redis) and 2^64 (memcached).
          await store.inner.increment(Array.from({ length: 2100 }, () => op(key, Number.MAX_SAFE_INTEGER, 3600)));
          await settle(store.inner);
          for (let i = 0; i < 3; i++) assert.deepEqual(await ask(svc, store, desc('push')), OVER);
          assert.deepEqual(await ask(svc, store, desc('push', { hitsAddend: 0 })), OVER);
          assert.deepEqual(await ask(svc, store, desc('push', { limit: maxOverride })), OVER, 'over even the largest override');
          assert.deepEqual(await store.get([key]), [SATURATED_COUNT]);
        }));

      test('an override at uint32 max requests per unit: exact remaining, over only past it', () =>
        withService(async (svc, store) => {
          assert.deepEqual(await ask(svc, store, desc('omax', { limit: maxOverride })), { code: Code.OK, remaining: UINT32_MAX - 1 });
          assert.deepEqual(await ask(svc, store, desc('omax', { limit: maxOverride, hitsAddend: UINT32_MAX - 1 })), { code: Code.OK, remaining: 0 });
          assert.deepEqual(await ask(svc, store, desc('omax', { limit: maxOverride, hitsAddend: 0 })), { code: Code.OK, remaining: 0 });
          assert.deepEqual(await ask(svc, store, desc('omax', { limit: maxOverride })), OVER);
          assert.deepEqual(await store.get(store.lastKeys), [UINT32_MAX + 1]);
        }));

      test('hits_addend 0 checks without consuming; request-level 0 still means 1', () =>
        withService(async (svc, store) => {
          assert.deepEqual(await ask(svc, store, desc('zero', { hitsAddend: 0 })), { code: Code.OK, remaining: 10 });
          assert.deepEqual(await store.get(store.lastKeys), [0]);
          assert.deepEqual(await ask(svc, store, desc('zero'), 0), { code: Code.OK, remaining: 9 });
          assert.deepEqual(await ask(svc, store, desc('zero'), 3), { code: Code.OK, remaining: 6 });
          assert.deepEqual(await ask(svc, store, desc('zero', { hitsAddend: 0 }), 5), { code: Code.OK, remaining: 6 }, 'descriptor 0 wins over the request addend');
          assert.deepEqual(await store.get(store.lastKeys), [4]);
        }));
    });
  });
}

/** Passes calls through and remembers the keys of the last increment (to reach a counter directly). */
class KeyedStore implements CounterStore {
  readonly kind: string;
  lastKeys: string[] = [];
  constructor(readonly inner: CounterStore) {
    this.kind = inner.kind;
  }
  increment(ops: readonly CounterOp[]): MaybePromise<number[]> {
    this.lastKeys = ops.map((o) => o.key);
    return this.inner.increment(ops);
  }
  get(keys: readonly string[]): MaybePromise<number[]> {
    return this.inner.get(keys);
  }
  isConnected(): boolean {
    return this.inner.isConnected();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
