// Store-level cases for CounterStore.execute (sliding window and token bucket), run against real
// backends by the store-*.test.ts files. The engine-level contract (algorithm-contract.ts in
// test/support) checks decisions; these check what the store itself promises in counter-store.ts:
// exact values with an injected `nowUs`, what is written (key, value, TTL), what is left alone,
// saturation, and that any mix of ops runs in op order in one call.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SATURATED_COUNT, StoreError, type BucketParams, type CounterOp, type CounterStore } from '@rls/engine';

export interface AlgorithmStoreHarness {
  store: CounterStore;
  /** The key's raw value as the backend holds it; undefined when missing. */
  raw: (key: string) => Promise<string | undefined>;
  /** Stores a raw value (no TTL). */
  plant: (key: string, value: string) => Promise<void>;
  /** Remaining TTL in ms, -2 when missing (memcached: whole seconds × 1000). */
  pttl: (key: string) => Promise<number>;
  /** Resolves once asynchronous writes landed (memcached). */
  settle?: () => Promise<void>;
  cleanup: () => Promise<void>;
}

export interface AlgorithmStoreTraits {
  /** The store runs token_bucket (Redis; not memcached). */
  bucket: boolean;
  /** Redis only: makes `key` a list, so commands on it fail with WRONGTYPE. */
  plantWrongType?: (h: AlgorithmStoreHarness, key: string) => Promise<void>;
  /** Redis only: empties the script cache of every node (SCRIPT FLUSH). */
  flushScripts?: () => Promise<void>;
}

const fixed = (key: string, addend: number, expireSeconds = 60): CounterOp => ({ key, addend, expireSeconds, windowSeconds: 60 });
const sliding = (key: string, previousKey: string, addend: number, expireSeconds = 120): CounterOp => ({ key, previousKey, addend, expireSeconds, windowSeconds: 60 });
const bucket = (key: string, addend: number, b: BucketParams): CounterOp => ({ key, addend, expireSeconds: 0, windowSeconds: 1, bucket: b });

// A TAT of 16 digits whose low digits Lua's %.14g would round away.
const T0 = 1_799_999_999_999_999;

export function runAlgorithmStoreCases(name: string, make: () => Promise<AlgorithmStoreHarness>, traits: AlgorithmStoreTraits): void {
  const withStore = async (fn: (h: AlgorithmStoreHarness) => Promise<void>): Promise<void> => {
    const h = await make();
    try {
      await fn(h);
    } finally {
      await h.cleanup();
    }
  };
  const exec = async (h: AlgorithmStoreHarness, ops: CounterOp[]) => {
    assert.ok(h.store.execute !== undefined, 'execute is present');
    return h.store.execute(ops);
  };

  describe(`CounterStore.execute: ${name}`, () => {
    test('algorithms names what the store runs', () =>
      withStore(({ store }) => {
        assert.ok(store.algorithms?.has('sliding_window'));
        assert.equal(store.algorithms?.has('token_bucket'), traits.bucket);
        return Promise.resolve();
      }));

    test('a fixed-window op in execute counts as increment does', () =>
      withStore(async (h) => {
        assert.deepEqual(await exec(h, [fixed('fw', 2), fixed('fw', 3)]), [{ value: 2 }, { value: 5 }]);
        await h.settle?.();
        assert.equal(await h.raw('fw'), '5');
        assert.deepEqual(await h.store.increment([fixed('fw', 1)]), [6]);
      }));

    test('sliding window: increments the current key, reads the previous one without changing it', () =>
      withStore(async (h) => {
        assert.deepEqual(await exec(h, [sliding('cur', 'prev', 1)]), [{ value: 1, previous: 0 }]);
        await h.settle?.();
        assert.equal(await h.raw('prev'), undefined, 'a missing previous key is not created');
        await exec(h, [fixed('prev', 7)]);
        await h.settle?.();
        assert.deepEqual(await exec(h, [sliding('cur', 'prev', 2), sliding('cur', 'prev', 0)]), [
          { value: 3, previous: 7 },
          { value: 3, previous: 7 },
        ]);
        await h.settle?.();
        assert.equal(await h.raw('cur'), '3');
        assert.equal(await h.raw('prev'), '7');
        const ttl = await h.pttl('cur');
        assert.ok(ttl > 100_000 && ttl <= 120_000, `current key TTL ${ttl}`);
        const prevTtl = await h.pttl('prev');
        assert.ok(prevTtl > 0 && prevTtl <= 60_000, `previous key keeps its own TTL (${prevTtl})`);
      }));

    test('sliding window: an unreadable previous counter reads saturated', () =>
      withStore(async (h) => {
        await h.plant('prev-bad', 'not a number');
        assert.deepEqual(await exec(h, [sliding('cur-bad', 'prev-bad', 1)]), [{ value: 1, previous: SATURATED_COUNT }]);
      }));

    test('sliding window: many descriptors with distinct keys in one call', () =>
      withStore(async (h) => {
        const ops = Array.from({ length: 40 }, (_v, i) => sliding(`c${i}`, `p${i}`, i + 1));
        await exec(h, Array.from({ length: 40 }, (_v, i) => fixed(`p${i}`, 100 + i)));
        await h.settle?.();
        assert.deepEqual(
          await exec(h, ops),
          ops.map((_o, i) => ({ value: i + 1, previous: 100 + i })),
        );
      }));

    if (!traits.bucket) {
      test('execute refuses a token-bucket op with a clear StoreError', () =>
        withStore(async (h) => {
          await assert.rejects(exec(h, [fixed('tb-f', 1), bucket('tb', 1, { nowUs: T0, emissionUs: 10, toleranceUs: 50 })]), (e: unknown) => e instanceof StoreError && /token_bucket/.test(e.message));
          await h.settle?.();
          assert.equal(await h.raw('tb-f'), undefined, 'nothing of the call ran');
        }));
      return;
    }

    // 1 per 10 s, so the TTLs (Redis's real clock) outlast the test while the caller's clock stands still.
    const E = 10_000_000;
    const burst5 = (nowUs: number): BucketParams => ({ nowUs, emissionUs: E, toleranceUs: 5 * E });

    test('token bucket: a burst of `burst` is admitted, the next hit refused, one emission later one more', () =>
      withStore(async (h) => {
        const t = 1_700_000_000_000_000;
        for (let i = 1; i <= 5; i++) assert.deepEqual(await exec(h, [bucket('tb', 1, burst5(t))]), [{ value: t + i * E, admitted: true }]);
        assert.deepEqual(await exec(h, [bucket('tb', 1, burst5(t))]), [{ value: t + 5 * E, admitted: false }], 'refused: TAT unchanged');
        assert.equal(await h.raw('tb'), String(t + 5 * E));
        assert.deepEqual(await exec(h, [bucket('tb', 1, burst5(t + E - 1))]), [{ value: t + 5 * E, admitted: false }], '1 µs early');
        assert.deepEqual(await exec(h, [bucket('tb', 1, burst5(t + E))]), [{ value: t + 6 * E, admitted: true }]);
        // Long idle: the stored TAT is in the past, so the bucket is full again.
        const later = t + 600_000_000;
        assert.deepEqual(await exec(h, [bucket('tb', 5, burst5(later))]), [{ value: later + 5 * E, admitted: true }]);
      }));

    test('token bucket: addend 0 checks without consuming; an addend over the burst is refused and writes nothing', () =>
      withStore(async (h) => {
        const t = 1_700_000_000_000_000;
        assert.deepEqual(await exec(h, [bucket('tb0', 0, burst5(t))]), [{ value: t, admitted: true }]);
        assert.deepEqual(await exec(h, [bucket('tb-big', 6, burst5(t))]), [{ value: t, admitted: false }]);
        assert.equal(await h.raw('tb-big'), undefined);
        await exec(h, [bucket('tb1', 3, burst5(t))]);
        assert.deepEqual(await exec(h, [bucket('tb1', 0, burst5(t + 10))]), [{ value: t + 3 * E, admitted: true }]);
        assert.equal(await h.raw('tb1'), String(t + 3 * E));
      }));

    test('token bucket: 16-digit TATs stay exact (no %.14g rounding) and the TTL is ceil((next − now) / 1000) ms', () =>
      withStore(async (h) => {
        const b = { nowUs: T0, emissionUs: 1_234_567, toleranceUs: 60_000_000 };
        assert.deepEqual(await exec(h, [bucket('exact', 3, b)]), [{ value: T0 + 3 * 1_234_567, admitted: true }]);
        assert.equal(await h.raw('exact'), String(T0 + 3 * 1_234_567));
        assert.deepEqual(await exec(h, [bucket('exact', 1, { ...b, nowUs: T0 + 1 })]), [{ value: T0 + 4 * 1_234_567, admitted: true }]);
        assert.equal(await h.raw('exact'), String(T0 + 4 * 1_234_567));
        const ttl = await h.pttl('exact');
        const want = Math.ceil((4 * 1_234_567 - 1) / 1000);
        assert.ok(ttl <= want && ttl > want - 1_000, `pttl ${ttl}, want ${want}`);
        // A next 1 µs ahead gets the least TTL, 1 ms (gone, or about to go, by the time it is read).
        await exec(h, [bucket('tiny', 1, { nowUs: T0, emissionUs: 1, toleranceUs: 10 })]);
        const tiny = await h.pttl('tiny');
        assert.ok(tiny === -2 || (tiny >= 0 && tiny <= 1), `pttl ${tiny}`);
      }));

    test('token bucket: an unreadable TAT reads as a full bucket and is left alone; results past 2^53 saturate', () =>
      withStore(async (h) => {
        for (const text of ['abc', 'nan', 'inf', '']) {
          await h.plant('garbage', text);
          assert.deepEqual(await exec(h, [bucket('garbage', 1, burst5(T0))]), [{ value: SATURATED_COUNT, admitted: false }], JSON.stringify(text));
          assert.equal(await h.raw('garbage'), text);
        }
        // next = T0 + 2^53 − 2^40 is past 2^53 − 1: stored and answered saturated.
        const huge = { nowUs: T0, emissionUs: 2 ** 40, toleranceUs: SATURATED_COUNT };
        assert.deepEqual(await exec(h, [bucket('huge', 2 ** 13 - 1, huge)]), [{ value: SATURATED_COUNT, admitted: true }]);
        assert.equal(await h.raw('huge'), String(SATURATED_COUNT));
        assert.deepEqual(await exec(h, [bucket('huge', 2 ** 13 - 1, huge)]), [{ value: SATURATED_COUNT, admitted: false }]);
      }));

    test('token bucket: a refusal leaves value and TTL as they were; a TAT written in another notation still counts exactly', () =>
      withStore(async (h) => {
        const t = 1_700_000_000_000_000;
        for (let i = 1; i <= 5; i++) await exec(h, [bucket('keep', 1, burst5(t))]);
        const before = await h.pttl('keep');
        assert.deepEqual(await exec(h, [bucket('keep', 1, burst5(t + 1))]), [{ value: t + 5 * E, admitted: false }]);
        assert.equal(await h.raw('keep'), String(t + 5 * E));
        const after = await h.pttl('keep');
        assert.ok(after <= before && after > before - 1_000, `TTL kept: ${before} then ${after}`);
        // "1.7e15 + 2E" as a float literal: a number to tonumber, not an integer to INCRBY.
        const planted = t + 2 * E;
        await h.plant('notation', `${planted / 1e15}e15`);
        assert.deepEqual(await exec(h, [bucket('notation', 1, burst5(t))]), [{ value: planted + E, admitted: true }]);
        assert.equal(await h.raw('notation'), String(planted + E));
        const ttl = await h.pttl('notation');
        assert.ok(ttl <= 3 * E / 1000 && ttl > 3 * E / 1000 - 1_000, `pttl ${ttl}`);
        assert.deepEqual(await exec(h, [bucket('notation', 3, burst5(t))]), [{ value: planted + E, admitted: false }]);
        // A plain integer TAT after now goes through INCRBY; one far past now is refused.
        await h.plant('int', String(t + 4 * E));
        assert.deepEqual(await exec(h, [bucket('int', 1, burst5(t))]), [{ value: t + 5 * E, admitted: true }]);
        assert.deepEqual(await exec(h, [bucket('int', 1, burst5(t))]), [{ value: t + 5 * E, admitted: false }]);
        assert.equal(await h.raw('int'), String(t + 5 * E));
      }));

    test('token bucket: parameters that are not exact integers are refused with StoreError; nothing is written', () =>
      withStore(async (h) => {
        for (const [addend, b] of [
          [1, { nowUs: T0, emissionUs: 0, toleranceUs: 10 }],
          [-1, burst5(T0)],
          [1, { nowUs: 1.5, emissionUs: E, toleranceUs: 10 }],
          [1, { nowUs: T0, emissionUs: E, toleranceUs: Number.NaN }],
          [1, { nowUs: 2 ** 60, emissionUs: E, toleranceUs: E }],
        ] as [number, BucketParams][]) {
          await assert.rejects(exec(h, [fixed('not-run', 1), bucket('bad', addend, b)]), (e: unknown) => e instanceof StoreError && /token bucket/.test(e.message), JSON.stringify(b));
        }
        assert.equal(await h.raw('bad'), undefined);
        assert.equal(await h.raw('not-run'), undefined, 'the call was refused before anything was sent');
      }));

    test('a mix of fixed, sliding and bucket ops runs in op order in one call (the same bucket twice sees itself)', () =>
      withStore(async (h) => {
        const t = 1_700_000_000_000_000;
        await exec(h, [fixed('m-prev', 4)]);
        const got = await exec(h, [fixed('m-fixed', 2), bucket('m-tb', 2, burst5(t)), sliding('m-cur', 'm-prev', 1), bucket('m-tb', 3, burst5(t)), bucket('m-tb', 1, burst5(t)), fixed('m-fixed', 1)]);
        assert.deepEqual(got, [
          { value: 2 },
          { value: t + 2 * E, admitted: true },
          { value: 1, previous: 4 },
          { value: t + 5 * E, admitted: true },
          { value: t + 5 * E, admitted: false },
          { value: 3 },
        ]);
      }));

    if (traits.plantWrongType !== undefined) {
      const plantWrongType = traits.plantWrongType;
      test('an error reply rejects the call with StoreError naming it; later calls stay aligned', () =>
        withStore(async (h) => {
          await plantWrongType(h, 'a-list');
          await assert.rejects(exec(h, [fixed('ok', 1), bucket('a-list', 1, burst5(T0))]), (e: unknown) => e instanceof StoreError && /WRONGTYPE/.test(e.message));
          await assert.rejects(exec(h, [sliding('ok2', 'a-list', 1)]), (e: unknown) => e instanceof StoreError && /WRONGTYPE/.test(e.message));
          assert.deepEqual(await exec(h, [fixed('ok', 1), bucket('tb-ok', 1, burst5(T0))]), [{ value: 2 }, { value: T0 + E, admitted: true }]);
        }));
    }

    if (traits.flushScripts !== undefined) {
      const flushScripts = traits.flushScripts;
      test('SCRIPT FLUSH: the next bucket op falls back to EVAL (reloading the script) and answers exactly', () =>
        withStore(async (h) => {
          const t = 1_700_000_000_000_000;
          assert.deepEqual(await exec(h, [bucket('nos', 1, burst5(t))]), [{ value: t + E, admitted: true }]);
          await flushScripts();
          assert.deepEqual(await exec(h, [fixed('nos-f', 1), bucket('nos', 1, burst5(t)), bucket('nos-2', 2, burst5(t)), sliding('nos-c', 'nos-p', 1)]), [
            { value: 1 },
            { value: t + 2 * E, admitted: true },
            { value: t + 2 * E, admitted: true },
            { value: 1, previous: 0 },
          ]);
          assert.deepEqual(await exec(h, [bucket('nos', 1, burst5(t))]), [{ value: t + 3 * E, admitted: true }], 'EVALSHA works again');
          assert.equal(await h.raw('nos-f'), '1', 'the fixed op ran once');
        }));
    }
  });
}
