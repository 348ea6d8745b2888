// The behaviour of the rate limit algorithms beyond upstream's fixed window (sliding_window,
// token_bucket; docs/ratelimit.md, "Algorithms (extension)"), driven through the engine's decision
// service on an injected clock, so every expected number below is exact. One suite, run against
// every CounterStore that claims the algorithms (memory store in test/unit/algorithm-memory-store.test.ts,
// Redis single / Sentinel / Cluster / memcached in integration files).
//
// Clock and store time: the service's clock is a FakeClock; window keys and bucket timestamps come
// from it. A networked store applies TTLs in real time, so the cases use windows and refill
// intervals of seconds to minutes (a TTL never runs out while a case runs) and every case uses
// its own key prefix (no state leaks between cases sharing one server).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, ruleCounters, type RuleCounters } from '@rls/testkit';
import {
  Code,
  DEFAULT_LIMITER_OPTIONS,
  RateLimitService,
  StatsStore,
  Unit,
  loadRuleSet,
  type Algorithm,
  type CounterOp,
  type CounterStore,
  type DescriptorStatus,
  type LimiterOptions,
  type MaybePromise,
  type OpResult,
  type RateLimitResponse,
  type RequestDescriptor,
} from '@rls/engine';

export interface AlgorithmHarness {
  store: CounterStore;
  cleanup: () => Promise<void>;
}

export interface AlgorithmContractTraits {
  /**
   * Algorithms the store runs (default both). For one left out, the suite checks instead that
   * rules using it are refused when loaded, naming the store.
   */
  algorithms?: readonly Exclude<Algorithm, 'fixed_window'>[];
  /** Called after every request, for stores whose writes land after the call resolves. */
  settle?: (store: CounterStore) => Promise<void>;
}

/** Start of a minute and of an hour (1_800_000_000 is a multiple of 3600). */
const T0 = 1_800_000_000;
const DOMAIN = 'alg';

const RULES = `domain: ${DOMAIN}
descriptors:
  - {key: fw, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: sw, rate_limit: {unit: minute, requests_per_unit: 10, algorithm: sliding_window}}
  - {key: sws, shadow_mode: true, rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_window}}
  - {key: swshare, value: 'user*', share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 3, algorithm: sliding_window}}
  - {key: tb, rate_limit: {unit: hour, requests_per_unit: 360, algorithm: token_bucket, burst: 3}}
  - {key: tbd, rate_limit: {unit: minute, requests_per_unit: 4, algorithm: token_bucket}}
  - {key: tbs, shadow_mode: true, rate_limit: {unit: hour, requests_per_unit: 360, algorithm: token_bucket, burst: 1}}
  - {key: tbshare, value: 'user*', share_threshold: true, rate_limit: {unit: hour, requests_per_unit: 360, algorithm: token_bucket, burst: 2}}
  - {key: tbnear, rate_limit: {unit: hour, requests_per_unit: 3600, algorithm: token_bucket, burst: 10}}
  - {key: multi, rate_limits: [{unit: second, requests_per_unit: 2, name: per_second}, {unit: minute, requests_per_unit: 5}]}
  - {key: multis, shadow_mode: true, rate_limits: [{unit: second, requests_per_unit: 1}, {unit: minute, requests_per_unit: 5}]}
  - {key: rep, rate_limits: [{unit: second, requests_per_unit: 1, name: rep_sec}, {unit: minute, requests_per_unit: 100, name: rep_min}]}
  - {key: repl, rate_limit: {unit: minute, requests_per_unit: 50, replaces: [{name: rep_sec}]}}
  - {key: m5, rate_limit: {unit: minute, requests_per_unit: 3, unit_multiplier: 5}}
  - {key: m5sw, rate_limit: {unit: minute, requests_per_unit: 10, unit_multiplier: 5, algorithm: sliding_window}}
  - {key: m30tb, rate_limit: {unit: second, requests_per_unit: 3, unit_multiplier: 30, algorithm: token_bucket}}
  - {key: mixsw, rate_limits: [{unit: second, requests_per_unit: 2}, {unit: minute, requests_per_unit: 10, unit_multiplier: 5, algorithm: sliding_window}]}
  - {key: mixtb, rate_limits: [{unit: minute, requests_per_unit: 5}, {unit: hour, requests_per_unit: 360, algorithm: token_bucket, burst: 3}]}
`;

/** Forwards to the store under test and records what the service asks of it. */
class RecordingStore implements CounterStore {
  readonly kind: string;
  readonly algorithms?: ReadonlySet<Algorithm>;
  readonly execute?: (ops: readonly CounterOp[]) => MaybePromise<OpResult[]>;
  readonly calls = { increment: 0, execute: 0, get: 0 };
  readonly ops: CounterOp[][] = [];
  constructor(private readonly inner: CounterStore) {
    this.kind = inner.kind;
    if (inner.algorithms !== undefined) this.algorithms = inner.algorithms;
    const exec = inner.execute?.bind(inner);
    if (exec !== undefined) {
      this.execute = (ops) => {
        this.calls.execute++;
        this.ops.push(ops.map((o) => ({ ...o })));
        return exec(ops);
      };
    }
  }
  increment(ops: readonly CounterOp[]): MaybePromise<number[]> {
    this.calls.increment++;
    this.ops.push(ops.map((o) => ({ ...o })));
    return this.inner.increment(ops);
  }
  get(keys: readonly string[]): MaybePromise<number[]> {
    this.calls.get++;
    return this.inner.get(keys);
  }
  isConnected(): boolean {
    return this.inner.isConnected();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  get totalCalls(): number {
    return this.calls.increment + this.calls.execute + this.calls.get;
  }
}

interface Ctx {
  clock: FakeClock;
  stats: StatsStore;
  store: RecordingStore;
  service: RateLimitService;
  prefix: string;
  /** One request; `descriptors` as `key` or `key=value` strings or full descriptors. */
  ask(descriptors: (string | RequestDescriptor)[], hitsAddend?: number): Promise<RateLimitResponse>;
  /** One descriptor: [code, remaining, durationUntilReset]. */
  one(descriptor: string | RequestDescriptor, hitsAddend?: number): Promise<[number, number, number | undefined]>;
  counters(key: string): RuleCounters;
}

let seq = 0;

const desc = (d: string | RequestDescriptor): RequestDescriptor => {
  if (typeof d !== 'string') return d;
  const eq = d.indexOf('=');
  return { entries: [eq < 0 ? { key: d, value: 'v' } : { key: d.slice(0, eq), value: d.slice(eq + 1) }] };
};
const triple = (s: DescriptorStatus): [number, number, number | undefined] => [s.code, s.limitRemaining, s.durationUntilReset];

export function runAlgorithmContract(name: string, makeStore: (clock: FakeClock) => Promise<AlgorithmHarness>, traits: AlgorithmContractTraits = {}): void {
  const supported = new Set<Algorithm>(traits.algorithms ?? ['sliding_window', 'token_bucket']);

  const withCtx = async (options: Partial<LimiterOptions>, fn: (c: Ctx) => Promise<void>): Promise<void> => {
    const clock = new FakeClock();
    clock.setSeconds(T0);
    const h = await makeStore(clock);
    try {
      const stats = new StatsStore();
      const store = new RecordingStore(h.store);
      const prefix = `algc${++seq}_${Math.random().toString(36).slice(2, 10)}:`;
      const service = new RateLimitService({
        store,
        stats,
        clock,
        random: { int: () => 0 },
        options: { ...DEFAULT_LIMITER_OPTIONS, expirationJitterMaxSeconds: 0, cacheKeyPrefix: prefix, ...options },
      });
      // Only the rules of algorithms the store runs: a rule set with any other is refused whole.
      const rules = RULES.split('\n').filter((l) => !/algorithm: (\w+)/.test(l) || supported.has(/algorithm: (\w+)/.exec(l)![1] as Algorithm)).join('\n');
      service.setRuleSet(loadRuleSet([{ name: 'algorithms.yaml', content: rules }], { mergeDomainConfig: false, stats }));
      const ask = async (descriptors: (string | RequestDescriptor)[], hitsAddend = 0): Promise<RateLimitResponse> => {
        const r = await service.shouldRateLimit({ domain: DOMAIN, descriptors: descriptors.map(desc), hitsAddend });
        await traits.settle?.(h.store);
        return r;
      };
      const ctx: Ctx = {
        clock,
        stats,
        store,
        service,
        prefix,
        ask,
        one: async (d, hitsAddend = 0) => triple((await ask([d], hitsAddend)).statuses[0]!),
        counters: (key) => ruleCounters(stats, `${DOMAIN}.${key}`),
      };
      await fn(ctx);
    } finally {
      await h.cleanup();
    }
  };
  const run = (fn: (c: Ctx) => Promise<void>, options: Partial<LimiterOptions> = {}) => () => withCtx(options, fn);
  const { OK, OVER_LIMIT: OVER } = Code;

  describe(`algorithm contract: ${name}`, () => {
    for (const algorithm of ['sliding_window', 'token_bucket'] as const) {
      if (supported.has(algorithm)) continue;
      test(`rules using ${algorithm} are refused when loaded, naming the store`, async () => {
        const clock = new FakeClock();
        const h = await makeStore(clock);
        try {
          const service = new RateLimitService({ store: h.store, stats: new StatsStore(), clock, random: { int: () => 0 }, options: DEFAULT_LIMITER_OPTIONS });
          const rules = loadRuleSet([{ name: 'r.yaml', content: `domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: 5, algorithm: ${algorithm}}}\n` }], {
            mergeDomainConfig: false,
          });
          assert.throws(() => service.setRuleSet(rules), (err: Error) => {
            assert.match(err.message, new RegExp(`^r\\.yaml: descriptor 'd\\.k': algorithm ${algorithm} is not supported by the ${h.store.kind} store: `));
            return true;
          });
          assert.equal(service.currentRuleSet(), undefined);
        } finally {
          await h.cleanup();
        }
      });
    }

    if (supported.has('sliding_window')) {
      describe('sliding_window', () => {
        test('partial windows: the previous window weighs by the part of it still inside the last window', run(async (c) => {
          c.clock.setSeconds(T0 - 30);
          for (let i = 1; i <= 10; i++) assert.deepEqual(await c.one('sw'), [OK, 10 - i, 30]);
          assert.deepEqual(await c.one('sw'), [OVER, 0, 30]); // counted like a fixed window: current = 11
          c.clock.setSeconds(T0 + 15); // floor(11 × 45/60) = 8
          assert.deepEqual(await c.one('sw'), [OK, 1, 45]); // 8 + 1
          assert.deepEqual(await c.one('sw'), [OK, 0, 45]); // 8 + 2
          assert.deepEqual(await c.one('sw'), [OVER, 0, 45]); // 8 + 3
          c.clock.setSeconds(T0 + 30); // floor(11 × 30/60) = 5
          assert.deepEqual(await c.one('sw'), [OK, 1, 30]); // 5 + 4
          c.clock.set((T0 + 59) * 1000 + 999); // floor(11 × 1/60000) = 0
          assert.deepEqual(await c.one('sw'), [OK, 5, 1]); // 0 + 5
          assert.deepEqual(c.counters('sw'), { total: 16, over: 2, near: 5, within: 14, local: 0, shadow: 0 });
        }));

        test('boundary burst: the fixed window admits 2N within one second, the sliding window N', run(async (c) => {
          c.clock.setSeconds(T0 - 1);
          for (let i = 0; i < 10; i++) {
            const r = await c.ask(['fw', 'sw']);
            assert.deepEqual(r.statuses.map((s) => s.code), [OK, OK]);
          }
          c.clock.setSeconds(T0);
          let fixed = 0;
          let sliding = 0;
          for (let i = 0; i < 10; i++) {
            const r = await c.ask(['fw', 'sw']);
            if (r.statuses[0]!.code === OK) fixed++;
            if (r.statuses[1]!.code === OK) sliding++;
          }
          assert.equal(fixed, 10);
          assert.equal(sliding, 0); // floor(10 × 60/60) + k > 10
          c.clock.setSeconds(T0 + 30); // floor(10 × 30/60) = 5, current 10 + 1
          assert.deepEqual(await c.one('sw'), [OVER, 0, 30]);
          c.clock.setSeconds(T0 + 60); // a new window: floor(11 × 60/60) = 11 > 10
          assert.deepEqual(await c.one('sw'), [OVER, 0, 60]);
          c.clock.setSeconds(T0 + 60 + 54); // floor(11 × 6/60) = 1, + 2
          assert.deepEqual(await c.one('sw'), [OK, 7, 6]);
        }));

        test('hits_addend at request and descriptor level; near and over statistics straddle like a fixed window', run(async (c) => {
          assert.deepEqual(await c.one('sw', 4), [OK, 6, 60]);
          assert.deepEqual(await c.one({ entries: [{ key: 'sw', value: 'v' }], hitsAddend: 5 }, 1), [OK, 1, 60]);
          assert.deepEqual(await c.one('sw', 2), [OVER, 0, 60]);
          // within 4 + 5; near: 9 − 8 (ratio 0.8 of 10), then the straddle's 10 − 9; over: 11 − 10
          assert.deepEqual(c.counters('sw'), { total: 11, over: 1, near: 2, within: 9, local: 0, shadow: 0 });
          assert.deepEqual(await c.one({ entries: [{ key: 'sw', value: 'v' }], hitsAddend: 0 }), [OVER, 0, 60]); // 0 checks: 11 > 10
        }));

        test('a request override counts in a sliding window at its own limit', run(async (c) => {
          const o: RequestDescriptor = { entries: [{ key: 'sw', value: 'v' }], limit: { requestsPerUnit: 2, unit: Unit.MINUTE } };
          c.clock.setSeconds(T0 - 30);
          assert.deepEqual(await c.one(o), [OK, 1, 30]);
          assert.deepEqual(await c.one(o), [OK, 0, 30]);
          assert.deepEqual(await c.one(o), [OVER, 0, 30]);
          c.clock.setSeconds(T0 + 30); // floor(3 × 30/60) = 1, + 1
          const r = await c.ask([o]);
          assert.deepEqual(triple(r.statuses[0]!), [OK, 0, 30]);
          assert.deepEqual(r.statuses[0]!.currentLimit, { requestsPerUnit: 2, unit: Unit.MINUTE, name: '' });
          const last = c.store.ops.at(-1)![0]!;
          assert.equal(last.key, `${c.prefix}${DOMAIN}_sw_v_${T0}_sw`);
          assert.equal(last.previousKey, `${c.prefix}${DOMAIN}_sw_v_${T0 - 60}_sw`);
        }));

        test('shadow mode: over the limit is answered OK and counted as shadow_mode', run(async (c) => {
          assert.deepEqual(await c.one('sws'), [OK, 1, 60]);
          assert.deepEqual(await c.one('sws'), [OK, 0, 60]);
          const r = await c.ask(['sws']);
          assert.equal(r.overallCode, OK);
          assert.deepEqual(triple(r.statuses[0]!), [OK, 0, 60]);
          assert.equal(c.counters('sws').shadow, 1);
          assert.equal(c.counters('sws').over, 1);
        }));

        test('share_threshold: every value matching the wildcard shares one sliding window', run(async (c) => {
          assert.deepEqual(await c.one('swshare=user1'), [OK, 2, 60]);
          assert.deepEqual(await c.one('swshare=user2'), [OK, 1, 60]);
          assert.deepEqual(await c.one('swshare=user3'), [OK, 0, 60]);
          assert.deepEqual(await c.one('swshare=user4'), [OVER, 0, 60]);
        }));

        test('local over-limit cache: remembered until the estimate admits one more hit or the window ends', run(async (c) => {
          c.clock.setSeconds(T0 - 30);
          for (let i = 0; i < 10; i++) await c.one('sw');
          assert.deepEqual(await c.one('sw'), [OVER, 0, 30]); // current alone is over: until the window ends
          const calls = c.store.totalCalls;
          c.clock.setSeconds(T0 - 1);
          assert.deepEqual(await c.one('sw'), [OVER, 0, 1]);
          assert.equal(c.store.totalCalls, calls, 'answered locally');
          c.clock.setSeconds(T0); // floor(11 × 60/60) + 1 = 12: over; admits again once floor(11 × (60 − e)/60) ≤ 8, e ≥ 10.910 s
          assert.deepEqual(await c.one('sw'), [OVER, 0, 60]);
          const calls2 = c.store.totalCalls;
          c.clock.set((T0 + 10) * 1000 + 909);
          assert.deepEqual(await c.one('sw'), [OVER, 0, 50]);
          assert.equal(c.store.totalCalls, calls2, 'answered locally');
          c.clock.set((T0 + 10) * 1000 + 910); // floor(11 × 49090/60000) = 8, + 2
          assert.deepEqual(await c.one('sw'), [OK, 0, 50]);
          assert.equal(c.store.totalCalls, calls2 + 1);
          assert.equal(c.counters('sw').local, 2);
        }, { localCacheSizeInBytes: 1_000_000 }));

        test('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: a sliding window is not charged when another descriptor would go over', run(async (c) => {
          for (let i = 0; i < 10; i++) await c.one('fw');
          const r = await c.ask(['sw', 'fw']);
          assert.deepEqual(r.statuses.map(triple), [[OK, 10, 60], [OVER, 0, 60]]);
          assert.deepEqual(await c.one('sw'), [OK, 9, 60]); // the first request was not counted
          // and a sliding window that would go over stops the others
          for (let i = 0; i < 8; i++) await c.one('sw');
          if (supported.has('token_bucket')) {
            assert.deepEqual((await c.ask(['sw', 'tbnear'], 2)).statuses.map((s) => s.code), [OVER, OK]);
            assert.deepEqual(await c.one('tbnear'), [OK, 9, 1]); // tbnear had not been charged
          }
        }, { stopCacheKeyIncrementWhenOverlimit: true }));
      });
    }

    if (supported.has('token_bucket')) {
      describe('token_bucket', () => {
        // tb: 360 per hour = one token every 10 s, burst 3 (a full bucket refills in 30 s)
        test('burst, then one token per emission interval; reset = until full, or until one token when refused', run(async (c) => {
          assert.deepEqual(await c.one('tb'), [OK, 2, 10]);
          assert.deepEqual(await c.one('tb'), [OK, 1, 20]);
          assert.deepEqual(await c.one('tb'), [OK, 0, 30]);
          assert.deepEqual(await c.one('tb'), [OVER, 0, 10]);
          c.clock.setSeconds(T0 + 9);
          assert.deepEqual(await c.one('tb'), [OVER, 0, 1]);
          c.clock.setSeconds(T0 + 10);
          assert.deepEqual(await c.one('tb'), [OK, 0, 30]);
          assert.deepEqual(await c.one('tb'), [OVER, 0, 10]);
          c.clock.setSeconds(T0 + 35); // TAT T0+40: 25 s of the 30 s tolerance left = 2 whole tokens
          assert.deepEqual(await c.one('tb', 2), [OK, 0, 25]);
          c.clock.setSeconds(T0 + 3600); // long idle: full again, never more than burst
          assert.deepEqual(await c.one('tb'), [OK, 2, 10]);
          // near: hits leaving more than floor(3 × 0.8) = 2 tokens in use
          assert.deepEqual(c.counters('tb'), { total: 10, over: 3, near: 3, within: 7, local: 0, shadow: 0 });
        }));

        test('hits_addend: all of a request is taken or none; 0 checks without consuming', run(async (c) => {
          assert.deepEqual(await c.one('tb', 2), [OK, 1, 20]);
          assert.deepEqual(await c.one('tb', 2), [OVER, 0, 0]); // one hit would pass now: reset 0
          assert.deepEqual(await c.one({ entries: [{ key: 'tb', value: 'v' }], hitsAddend: 0 }), [OK, 1, 20]);
          assert.deepEqual(await c.one({ entries: [{ key: 'tb', value: 'v' }], hitsAddend: 1 }, 5), [OK, 0, 30]);
          assert.deepEqual(await c.one('tb', 4_294_967_295), [OVER, 0, 10]);
          c.clock.setSeconds(T0 + 3600);
          assert.deepEqual(await c.one('tb', 4), [OVER, 0, 0]); // more than burst never passes
          assert.deepEqual(await c.one('tb', 3), [OK, 0, 30]);
        }));

        test('burst defaults to requests_per_unit', run(async (c) => {
          for (let i = 3; i >= 0; i--) assert.deepEqual((await c.one('tbd')).slice(0, 2), [OK, i]);
          assert.deepEqual(await c.one('tbd'), [OVER, 0, 15]);
        }));

        test('a request override refills at its own rate with a burst of its requests_per_unit', run(async (c) => {
          const o: RequestDescriptor = { entries: [{ key: 'tb', value: 'v' }], limit: { requestsPerUnit: 720, unit: Unit.HOUR }, hitsAddend: 720 };
          assert.deepEqual(await c.one(o), [OK, 0, 3600]);
          assert.deepEqual(await c.one({ ...o, hitsAddend: 1 }), [OVER, 0, 5]);
          c.clock.setSeconds(T0 + 5);
          const r = await c.ask([{ ...o, hitsAddend: 1 }]);
          assert.deepEqual(triple(r.statuses[0]!), [OK, 0, 3600]);
          assert.deepEqual(r.statuses[0]!.currentLimit, { requestsPerUnit: 720, unit: Unit.HOUR, name: '' });
          const last = c.store.ops.at(-1)![0]!;
          assert.equal(last.key, `${c.prefix}${DOMAIN}_tb_v_tb`);
          assert.deepEqual(last.bucket, { nowUs: (T0 + 5) * 1_000_000, emissionUs: 5_000_000, toleranceUs: 3_600_000_000 });
        }));

        test('shadow mode: a refused hit is answered OK and counted as shadow_mode', run(async (c) => {
          assert.deepEqual(await c.one('tbs'), [OK, 0, 10]);
          const r = await c.ask(['tbs']);
          assert.equal(r.overallCode, OK);
          assert.deepEqual(triple(r.statuses[0]!), [OK, 0, 10]);
          assert.deepEqual(c.counters('tbs'), { total: 2, over: 1, near: 1, within: 1, local: 0, shadow: 1 });
        }));

        test('share_threshold: every value matching the wildcard shares one bucket', run(async (c) => {
          assert.deepEqual(await c.one('tbshare=userA'), [OK, 1, 10]);
          assert.deepEqual(await c.one('tbshare=userB'), [OK, 0, 20]);
          assert.deepEqual(await c.one('tbshare=userC'), [OVER, 0, 10]);
        }));

        test('near_limit: hits that leave more than NEAR_LIMIT_RATIO × burst tokens in use', run(async (c) => {
          for (let i = 0; i < 10; i++) assert.equal((await c.one('tbnear'))[0], OK);
          assert.equal((await c.one('tbnear'))[0], OVER);
          assert.deepEqual(c.counters('tbnear'), { total: 11, over: 1, near: 2, within: 10, local: 0, shadow: 0 });
        }));

        test('local over-limit cache: remembered until one token is back', run(async (c) => {
          for (let i = 0; i < 3; i++) await c.one('tb');
          assert.deepEqual(await c.one('tb'), [OVER, 0, 10]);
          const calls = c.store.totalCalls;
          c.clock.set((T0 + 5) * 1000 + 500);
          assert.deepEqual(await c.one('tb'), [OVER, 0, 5]);
          c.clock.set((T0 + 9) * 1000 + 999);
          assert.deepEqual(await c.one('tb'), [OVER, 0, 1]);
          assert.equal(c.store.totalCalls, calls, 'answered locally');
          assert.equal(c.counters('tb').local, 2);
          c.clock.setSeconds(T0 + 10);
          assert.deepEqual(await c.one('tb'), [OK, 0, 30]);
          assert.equal(c.store.totalCalls, calls + 1);
        }, { localCacheSizeInBytes: 1_000_000 }));

        test('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: a bucket is only checked when another descriptor would go over', run(async (c) => {
          for (let i = 0; i < 10; i++) await c.one('fw');
          const r = await c.ask(['tb', 'fw']);
          assert.deepEqual(r.statuses.map(triple), [[OK, 3, 0], [OVER, 0, 60]]);
          assert.deepEqual(await c.one('tb'), [OK, 2, 10]);
          await c.one('tb');
          await c.one('tb');
          const r2 = await c.ask(['fw2', 'tb']); // fw2 has no rule; tb refuses (a refused hit takes no token either way)
          assert.deepEqual(triple(r2.statuses[1]!), [OVER, 0, 10]);
        }, { stopCacheKeyIncrementWhenOverlimit: true }));

        test('RateLimit-* headers: Limit = requests_per_unit, Remaining = whole tokens, Reset = seconds until full', run(async (c) => {
          const r = await c.ask(['tb']);
          assert.deepEqual(r.responseHeadersToAdd.map((h) => [h.key, h.value]), [['RateLimit-Limit', '360'], ['RateLimit-Remaining', '2'], ['RateLimit-Reset', '10']]);
        }, { responseHeaders: { ...DEFAULT_LIMITER_OPTIONS.responseHeaders, enabled: true } }));
      });
    }

    describe('rate_limits (several limits on one descriptor)', () => {
      test('every hit counts against every limit in one store call; the most constraining limit decides', run(async (c) => {
        const second = { requestsPerUnit: 2, unit: Unit.SECOND, name: 'per_second' };
        const minute = { requestsPerUnit: 5, unit: Unit.MINUTE, name: '' };
        const r1 = await c.ask(['multi']);
        assert.deepEqual(triple(r1.statuses[0]!), [OK, 1, 1]);
        assert.deepEqual(r1.statuses[0]!.currentLimit, second);
        assert.deepEqual(await c.one('multi'), [OK, 0, 1]);
        assert.deepEqual(await c.one('multi'), [OVER, 0, 1]); // 3 > 2 a second; 3 of 5 a minute
        c.clock.setSeconds(T0 + 1);
        const r4 = await c.ask(['multi']); // 1 of 2, 4 of 5: both have 1 left, the minute resets later
        assert.deepEqual(triple(r4.statuses[0]!), [OK, 1, 59]);
        assert.deepEqual(r4.statuses[0]!.currentLimit, minute);
        assert.deepEqual(await c.one('multi'), [OK, 0, 59]);
        const r6 = await c.ask(['multi']); // both over: the one whose reset is furthest away decides
        assert.deepEqual(triple(r6.statuses[0]!), [OVER, 0, 59]);
        assert.deepEqual(r6.statuses[0]!.currentLimit, minute);
        assert.equal(r6.overallCode, OVER);
        assert.deepEqual(c.counters('multi.per_second'), { total: 6, over: 2, near: 2, within: 4, local: 0, shadow: 0 });
        assert.deepEqual(c.counters('multi.1'), { total: 6, over: 1, near: 1, within: 5, local: 0, shadow: 0 });
        assert.equal(c.store.totalCalls, 6, 'one store call per request');
        assert.deepEqual(c.store.ops[0]!.map((o) => [o.key, o.expireSeconds, o.windowSeconds]), [
          [`${c.prefix}${DOMAIN}_multi_v_${T0}_w1`, 1, 1],
          [`${c.prefix}${DOMAIN}_multi_v_${T0}_w60`, 60, 60],
        ]);
      }));

      test('with other descriptors: statuses stay one per descriptor, in request order', run(async (c) => {
        const r = await c.ask(['fw', 'multi', 'none']);
        assert.deepEqual(r.statuses.map(triple), [[OK, 9, 60], [OK, 1, 1], [OK, 0, undefined]]);
        assert.deepEqual(c.store.ops[0]!.map((o) => o.key), [`${c.prefix}${DOMAIN}_fw_v_${T0}`, `${c.prefix}${DOMAIN}_multi_v_${T0}_w1`, `${c.prefix}${DOMAIN}_multi_v_${T0}_w60`]);
      }));

      test('shadow mode applies to every limit of the list', run(async (c) => {
        assert.deepEqual(await c.one('multis'), [OK, 0, 1]);
        const r = await c.ask(['multis']);
        assert.equal(r.overallCode, OK);
        assert.deepEqual(triple(r.statuses[0]!), [OK, 0, 1]);
        assert.equal(c.counters('multis.0').shadow, 1);
        assert.equal(c.counters('multis.1').shadow, 0);
      }));

      test('replaces drops one limit of a list by its name; the others still count', run(async (c) => {
        const r = await c.ask(['rep', 'repl']);
        assert.deepEqual(r.statuses.map(triple), [[OK, 99, 60], [OK, 49, 60]]);
        const r2 = await c.ask(['rep', 'repl']); // rep_sec (1 a second) would refuse this one
        assert.deepEqual(r2.statuses.map(triple), [[OK, 98, 60], [OK, 48, 60]]);
        assert.equal(c.counters('rep.rep_sec').total, 0);
        assert.deepEqual(await c.one('rep'), [OK, 0, 1], 'alone, rep_sec counts again');
        assert.deepEqual(await c.one('rep'), [OVER, 0, 1]);
      }));

      test('a request override replaces the whole list with its one limit (plain key)', run(async (c) => {
        const o: RequestDescriptor = { entries: [{ key: 'multi', value: 'v' }], limit: { requestsPerUnit: 1, unit: Unit.MINUTE } };
        assert.deepEqual(await c.one(o), [OK, 0, 60]);
        assert.deepEqual(await c.one(o), [OVER, 0, 60]);
        assert.deepEqual(c.store.ops.at(-1)!.map((o2) => o2.key), [`${c.prefix}${DOMAIN}_multi_v_${T0}`]);
      }));

      test('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: a request refused by one limit is not charged to the others', run(async (c) => {
        await c.one('multi');
        await c.one('multi');
        assert.deepEqual(await c.one('multi'), [OVER, 0, 1]);
        assert.deepEqual(c.store.ops.at(-1)!.map((o) => o.addend), [1, 0], 'only the per-second limit, which refused it, counts it');
        c.clock.setSeconds(T0 + 1);
        assert.deepEqual(await c.one('multi'), [OK, 1, 1]); // the minute counted 3 of 5, not 4
        assert.deepEqual(await c.one('multi'), [OK, 0, 1]);
        c.clock.setSeconds(T0 + 2);
        assert.deepEqual(await c.one('multi'), [OK, 0, 58], 'the 5th hit of the minute: the refused one was not charged');
        c.clock.setSeconds(T0 + 3);
        assert.deepEqual(await c.one('multi'), [OVER, 0, 57]);
      }, { stopCacheKeyIncrementWhenOverlimit: true }));

      test('local over-limit cache: a limit known to be over is answered locally, the others still count', run(async (c) => {
        for (let i = 0; i < 3; i++) await c.one('multi');
        const calls = c.store.totalCalls;
        assert.deepEqual(await c.one('multi'), [OVER, 0, 1]);
        assert.equal(c.store.totalCalls, calls + 1, 'the minute limit still went to the store');
        assert.deepEqual(c.store.ops.at(-1)!.map((o) => o.key), [`${c.prefix}${DOMAIN}_multi_v_${T0}_w60`]);
        assert.equal(c.counters('multi.per_second').local, 1);
        assert.equal(c.counters('multi.1').total, 4);
      }, { localCacheSizeInBytes: 1_000_000 }));

      test('RateLimit-* headers describe the limit that decides', run(async (c) => {
        const r = await c.ask(['multi']);
        assert.deepEqual(r.responseHeadersToAdd.map((h) => [h.key, h.value]), [['RateLimit-Limit', '2'], ['RateLimit-Remaining', '1'], ['RateLimit-Reset', '1']]);
      }, { responseHeaders: { ...DEFAULT_LIMITER_OPTIONS.responseHeaders, enabled: true } }));
    });

    describe('unit_multiplier (windows of several units)', () => {
      test('fixed window: aligned to the epoch, counted under a tagged key, reset exact', run(async (c) => {
        c.clock.setSeconds(T0 + 100); // T0 is a multiple of 300: this 5-minute window started at T0
        assert.deepEqual(await c.one('m5'), [OK, 2, 200]);
        assert.deepEqual(await c.one('m5'), [OK, 1, 200]);
        assert.deepEqual(await c.one('m5'), [OK, 0, 200]);
        assert.deepEqual(await c.one('m5'), [OVER, 0, 200]);
        c.clock.set((T0 + 299) * 1000 + 999);
        assert.deepEqual(await c.one('m5'), [OVER, 0, 1]);
        c.clock.setSeconds(T0 + 300);
        const r = await c.ask(['m5']);
        assert.deepEqual(triple(r.statuses[0]!), [OK, 2, 300]);
        assert.deepEqual(r.statuses[0]!.currentLimit, { requestsPerUnit: 3, unit: Unit.MINUTE, name: '' }, 'current_limit has no multiplier field');
        assert.deepEqual(c.store.ops.map((o) => [o[0]!.key, o[0]!.expireSeconds]).slice(-2), [
          [`${c.prefix}${DOMAIN}_m5_v_${T0}_w300`, 300],
          [`${c.prefix}${DOMAIN}_m5_v_${T0 + 300}_w300`, 300],
        ]);
      }));

      if (supported.has('sliding_window')) {
        test('sliding window: the previous 5-minute window weighs by its part still inside the last 5 minutes', run(async (c) => {
          c.clock.setSeconds(T0 - 150);
          for (let i = 0; i < 10; i++) await c.one('m5sw');
          assert.deepEqual(await c.one('m5sw'), [OVER, 0, 150]);
          c.clock.setSeconds(T0 + 75); // floor(11 × 225/300) = 8
          assert.deepEqual(await c.one('m5sw'), [OK, 1, 225]);
          assert.deepEqual(await c.one('m5sw'), [OK, 0, 225]);
          assert.deepEqual(await c.one('m5sw'), [OVER, 0, 225]);
          const last = c.store.ops.at(-1)![0]!;
          assert.deepEqual([last.key, last.previousKey, last.expireSeconds], [`${c.prefix}${DOMAIN}_m5sw_v_${T0}_sw300`, `${c.prefix}${DOMAIN}_m5sw_v_${T0 - 300}_sw300`, 600]);
        }));
      }

      if (supported.has('token_bucket')) {
        test('token bucket: 3 per 30 seconds refills one token every 10 s', run(async (c) => {
          assert.deepEqual(await c.one('m30tb'), [OK, 2, 10]);
          assert.deepEqual(await c.one('m30tb'), [OK, 1, 20]);
          assert.deepEqual(await c.one('m30tb'), [OK, 0, 30]);
          assert.deepEqual(await c.one('m30tb'), [OVER, 0, 10]);
          c.clock.setSeconds(T0 + 10);
          assert.deepEqual(await c.one('m30tb'), [OK, 0, 30]);
          assert.equal(c.store.ops.at(-1)![0]!.key, `${c.prefix}${DOMAIN}_m30tb_v_tb30r3`);
        }));
      }
    });

    if (supported.has('sliding_window') && supported.has('token_bucket')) {
      test('one store round trip for a request mixing fixed, sliding and bucket; a fixed-only request keeps increment', run(async (c) => {
        const r = await c.ask(['fw', 'sw', 'tb']);
        assert.deepEqual(r.statuses.map(triple), [[OK, 9, 60], [OK, 9, 60], [OK, 2, 10]]);
        assert.deepEqual(c.store.calls, { increment: 0, execute: 1, get: 0 });
        const ops = c.store.ops[0]!;
        assert.deepEqual(ops.map((o) => o.key), [`${c.prefix}${DOMAIN}_fw_v_${T0}`, `${c.prefix}${DOMAIN}_sw_v_${T0}_sw`, `${c.prefix}${DOMAIN}_tb_v_tb`]);
        assert.deepEqual(ops.map((o) => o.expireSeconds), [60, 120, 3600]);
        await c.ask(['fw']);
        assert.deepEqual(c.store.calls, { increment: 1, execute: 1, get: 0 });
        assert.equal((await c.one('fw'))[1], 7, 'the fixed counter is shared by both paths');
      }));

      test('rate_limits mixing algorithms: one store round trip, each limit with its own algorithm', run(async (c) => {
        const r = await c.ask(['mixsw', 'mixtb']);
        assert.deepEqual(r.statuses.map(triple), [[OK, 1, 1], [OK, 2, 10]]);
        assert.deepEqual(c.store.calls, { increment: 0, execute: 1, get: 0 });
        assert.deepEqual(c.store.ops[0]!.map((o) => o.key), [
          `${c.prefix}${DOMAIN}_mixsw_v_${T0}_w1`,
          `${c.prefix}${DOMAIN}_mixsw_v_${T0}_sw300`,
          `${c.prefix}${DOMAIN}_mixtb_v_${T0}_w60`,
          `${c.prefix}${DOMAIN}_mixtb_v_tb3600r360`,
        ]);
        for (let i = 0; i < 2; i++) await c.ask(['mixtb']);
        assert.deepEqual(await c.one('mixtb'), [OVER, 0, 10], 'the bucket (burst 3) refuses the 4th hit; the window has 1 left');
      }));

      test('RateLimit-* headers describe the most constraining descriptor whatever its algorithm', run(async (c) => {
        c.clock.setSeconds(T0 + 15);
        const r = await c.ask(['sw', 'tb']);
        assert.deepEqual(r.responseHeadersToAdd.map((h) => h.value), ['360', '2', '10']);
        for (let i = 0; i < 8; i++) await c.one('sw');
        const r2 = await c.ask(['sw', 'tb']);
        assert.deepEqual(r2.responseHeadersToAdd.map((h) => h.value), ['10', '0', '45']);
      }, { responseHeaders: { ...DEFAULT_LIMITER_OPTIONS.responseHeaders, enabled: true } }));
    }
  });
}
