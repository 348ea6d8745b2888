// Window math, cache keys, counter commands and status/stat arithmetic (numbered cases follow upstream's
// test/limiter and test/redis suites), observed through the service with a recording store over MemoryStore.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Code, LocalOverLimitCache, StatsStore, Unit, buildCacheKey, counterStatus, createRuleStats, expireSeconds, hitsAddendFor, localCacheStatus, nearLimitThreshold, secondsUntilReset, unitDivider, windowStart, type DescriptorEntry, type Limit, type RequestDescriptor } from '@rls/engine';
import { FakeClock } from '@rls/testkit';
import { harness, ruleCounters } from '../support/limiter-support.js';

const e = (...pairs: [string, string][]): DescriptorEntry[] => pairs.map(([key, value]) => ({ key, value }));
const d = (entries: DescriptorEntry[], extra: Partial<RequestDescriptor> = {}): RequestDescriptor => ({ entries, ...extra });

describe('window math', () => {
  test('dividers per unit, including WEEK=7, MONTH and YEAR', () => {
    assert.deepEqual(
      [Unit.UNKNOWN, Unit.SECOND, Unit.MINUTE, Unit.HOUR, Unit.DAY, Unit.WEEK, Unit.MONTH, Unit.YEAR, 8, -1, 1.5].map(unitDivider),
      [0, 1, 60, 3600, 86400, 604800, 2592000, 31536000, 0, 0, 0],
    );
  });
  test('window start and reset', () => {
    assert.equal(windowStart(1234, 1), 1234);
    assert.equal(windowStart(1234, 60), 1200);
    assert.equal(windowStart(1000000, 3600), 997200);
    assert.equal(windowStart(1000000, 86400), 950400);
    assert.equal(windowStart(1000000, 604800), 604800);
    assert.equal(secondsUntilReset(1234, 1), 1);
    assert.equal(secondsUntilReset(1234, 60), 26);
    assert.equal(secondsUntilReset(2222, 60), 58);
    assert.equal(secondsUntilReset(1200, 60), 60);
  });
  test('expire = divider + jitter in [0, max); 0 disables', () => {
    assert.equal(expireSeconds(60, 0, { int: () => 5 }), 60);
    assert.equal(expireSeconds(1, 3600, { int: (max) => (max === 3600 ? 100 : -1) }), 101);
  });
  test('float32 near-limit threshold', () => {
    assert.deepEqual([15, 5, 20, 8, 10, 14].map((l) => nearLimitThreshold(l, 0.8)), [12, 4, 16, 6, 8, 11]);
  });
  test('hits addend: descriptor value wins even when 0, else max(1, request)', () => {
    assert.equal(hitsAddendFor(d([], { hitsAddend: 0 }), 5), 0);
    assert.equal(hitsAddendFor(d([], { hitsAddend: 7 }), 5), 7);
    assert.equal(hitsAddendFor(d([]), 0), 1);
    assert.equal(hitsAddendFor(d([]), 3), 3);
  });
});

describe('cache keys', () => {
  test('formats', () => {
    assert.equal(buildCacheKey('', 'domain', e(['key', 'value']), undefined, 1234), 'domain_key_value_1234');
    assert.equal(buildCacheKey('prefix:', 'domain', e(['key', 'value']), undefined, 1234), 'prefix:domain_key_value_1234');
    assert.equal(buildCacheKey('', 'domain', e(['files', 'files/a.pdf']), ['files/*'], 1234), 'domain_files_files/*_1234');
    assert.equal(
      buildCacheKey('', 'domain', e(['parent', 'value1'], ['files', 'nested/x']), [undefined, 'nested/*'], 1234),
      'domain_parent_value1_files_nested/*_1234',
    );
    assert.equal(
      buildCacheKey('', 'domain', e(['files', 'top/a'], ['files', 'nested/b']), ['top/*', 'nested/*'], 1234),
      'domain_files_top/*_files_nested/*_1234',
    );
    assert.equal(buildCacheKey('', 'domain', e(['key', '']), undefined, 1234), 'domain_key__1234');
  });
  test('through the service: prefix, total_hits, share-threshold counters shared', async () => {
    const yaml = 'domain: domain\ndescriptors:\n  - {key: key, rate_limit: {unit: second, requests_per_unit: 10}}\n  - {key: files, value: "files/*", share_threshold: true, rate_limit: {unit: hour, requests_per_unit: 10}}\n';
    const h = harness(yaml, { cacheKeyPrefix: 'prefix:' }, 1234);
    await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['key', 'value']))], hitsAddend: 0 });
    assert.equal(h.store.increments[0]?.[0]?.key, 'prefix:domain_key_value_1234');
    assert.equal(ruleCounters(h.stats, 'domain.key').total, 1);
    for (let i = 0; i < 10; i++) {
      await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['files', 'files/a.pdf']))], hitsAddend: 0 });
    }
    const r = await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['files', 'files/b.csv']))], hitsAddend: 0 });
    assert.equal(h.store.increments.at(-1)?.[0]?.key, 'prefix:domain_files_files/*_0');
    assert.deepEqual(r.statuses[0], {
      code: Code.OVER_LIMIT,
      currentLimit: { requestsPerUnit: 10, unit: Unit.HOUR, name: '' },
      limitRemaining: 0,
      durationUntilReset: 3600 - 1234,
    });
  });
});

describe('counter commands and arithmetic', () => {
  test('44. OK within limit: INCRBY 1 + EXPIRE 1 (jitter off)', async () => {
    const h = harness('domain: domain\ndescriptors:\n  - {key: key, value: value, rate_limit: {unit: second, requests_per_unit: 10}}\n', {}, 1234);
    await h.store.preset('domain_key_value_1234', 4, 1);
    const r = await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['key', 'value']))], hitsAddend: 0 });
    assert.deepEqual(h.store.increments.at(-1), [{ key: 'domain_key_value_1234', addend: 1, expireSeconds: 1, windowSeconds: 1, limit: 10 }]);
    assert.deepEqual(r.statuses, [
      { code: Code.OK, currentLimit: { requestsPerUnit: 10, unit: Unit.SECOND, name: '' }, limitRemaining: 5, durationUntilReset: 1 },
    ]);
    assert.deepEqual(ruleCounters(h.stats, 'domain.key_value'), { total: 1, over: 0, near: 0, within: 1, local: 0, shadow: 0 });
  });

  test('45. only limited descriptors reach the store; MINUTE window and reset', async () => {
    const yaml = 'domain: domain\ndescriptors:\n  - key: key2\n    value: value2\n    descriptors:\n      - {key: subkey2, value: subvalue2, rate_limit: {unit: minute, requests_per_unit: 10}}\n';
    const h = harness(yaml, {}, 1234);
    await h.store.preset('domain_key2_value2_subkey2_subvalue2_1200', 10, 60);
    const r = await h.service.shouldRateLimit({
      domain: 'domain',
      descriptors: [d(e(['key2', 'value2']), { hitsAddend: 0 }), d(e(['key2', 'value2'], ['subkey2', 'subvalue2']))],
      hitsAddend: 0,
    });
    assert.deepEqual(h.store.increments.at(-1), [
      { key: 'domain_key2_value2_subkey2_subvalue2_1200', addend: 1, expireSeconds: 60, windowSeconds: 60, limit: 10 },
    ]);
    assert.deepEqual(r.statuses, [
      { code: Code.OK, limitRemaining: 0 },
      { code: Code.OVER_LIMIT, currentLimit: { requestsPerUnit: 10, unit: Unit.MINUTE, name: '' }, limitRemaining: 0, durationUntilReset: 26 },
    ]);
    assert.equal(r.overallCode, Code.OVER_LIMIT);
    assert.equal(ruleCounters(h.stats, 'domain.key2_value2.subkey2_subvalue2').over, 1);
  });

  test('46. addend 0 checks without consuming; HOUR and DAY windows', async () => {
    const yaml =
      'domain: domain\ndescriptors:\n  - key: key3\n    value: value3\n    rate_limit: {unit: hour, requests_per_unit: 10}\n    descriptors:\n      - {key: subkey3, value: subvalue3, rate_limit: {unit: day, requests_per_unit: 10}}\n';
    const h = harness(yaml, {}, 1000000);
    await h.store.preset('domain_key3_value3_997200', 11);
    await h.store.preset('domain_key3_value3_subkey3_subvalue3_950400', 12, 86400);
    const r = await h.service.shouldRateLimit({
      domain: 'domain',
      descriptors: [d(e(['key3', 'value3']), { hitsAddend: 0 }), d(e(['key3', 'value3'], ['subkey3', 'subvalue3']))],
      hitsAddend: 0,
    });
    assert.deepEqual(
      h.store.increments.at(-1)?.map((o) => [o.key, o.addend, o.expireSeconds]),
      [
        ['domain_key3_value3_997200', 0, 3600],
        ['domain_key3_value3_subkey3_subvalue3_950400', 1, 86400],
      ],
    );
    assert.deepEqual(r.statuses.map((s) => s.code), [Code.OVER_LIMIT, Code.OVER_LIMIT]);
    assert.deepEqual(ruleCounters(h.stats, 'domain.key3_value3'), { total: 0, over: 0, near: 0, within: 0, local: 0, shadow: 0 });
    assert.deepEqual(ruleCounters(h.stats, 'domain.key3_value3.subkey3_subvalue3'), { total: 1, over: 1, near: 0, within: 0, local: 0, shadow: 0 });
  });

  test('47. near-limit sequence 15/HOUR: 11, 13, 16', async () => {
    const h = harness('domain: domain\ndescriptors:\n  - {key: key4, value: value4, rate_limit: {unit: hour, requests_per_unit: 15}}\n', {}, 1000000);
    const key = 'domain_key4_value4_997200';
    const expected = [
      { before: 10, code: Code.OK, remaining: 4, c: { total: 1, over: 0, near: 0, within: 1 } },
      { before: 12, code: Code.OK, remaining: 2, c: { total: 2, over: 0, near: 1, within: 2 } },
      { before: 15, code: Code.OVER_LIMIT, remaining: 0, c: { total: 3, over: 1, near: 1, within: 2 } },
    ];
    for (const step of expected) {
      await h.store.preset(key, step.before);
      const r = await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['key4', 'value4']))], hitsAddend: 0 });
      assert.equal(r.statuses[0]?.code, step.code);
      assert.equal(r.statuses[0]?.limitRemaining, step.remaining);
      const { total, over, near, within } = ruleCounters(h.stats, 'domain.key4_value4');
      assert.deepEqual({ total, over, near, within }, step.c);
    }
  });

  test('48. addend table', async () => {
    const rows: [number, number, number, number, number, number, number, number][] = [
      // L, unit, a, after, code, remaining, over, near, within (unit fixed per row below)
      [20, Unit.SECOND, 3, 5, Code.OK, 15, 0, 0],
      [8, Unit.SECOND, 2, 7, Code.OK, 1, 0, 1],
      [20, Unit.SECOND, 3, 19, Code.OK, 1, 0, 3],
      [20, Unit.SECOND, 3, 22, Code.OVER_LIMIT, 0, 2, 1],
      [20, Unit.SECOND, 7, 22, Code.OVER_LIMIT, 0, 2, 4],
      [10, Unit.SECOND, 3, 30, Code.OVER_LIMIT, 0, 3, 0],
      [10, Unit.HOUR, 0, 11, Code.OVER_LIMIT, 0, 0, 0],
    ];
    for (const [L, unit, a, after, code, remaining, over, near] of rows) {
      const unitName = unit === Unit.SECOND ? 'second' : 'hour';
      const h = harness(`domain: domain\ndescriptors:\n  - {key: key, value: value, rate_limit: {unit: ${unitName}, requests_per_unit: ${L}}}\n`, {}, 1234);
      const key = unit === Unit.SECOND ? 'domain_key_value_1234' : 'domain_key_value_0';
      await h.store.preset(key, after - a);
      const r = await h.service.shouldRateLimit({
        domain: 'domain',
        descriptors: [d(e(['key', 'value']), a === 0 ? { hitsAddend: 0 } : {})],
        hitsAddend: a,
      });
      const row = `L=${L} a=${a} after=${after}`;
      assert.equal(h.store.increments.at(-1)?.[0]?.addend, a, row);
      assert.equal(r.statuses[0]?.code, code, row);
      assert.equal(r.statuses[0]?.limitRemaining, remaining, row);
      const c = ruleCounters(h.stats, 'domain.key_value');
      const within = code === Code.OK ? a : 0;
      assert.deepEqual(c, { total: a, over, near, within, local: 0, shadow: 0 }, row);
    }
  });

  test('49. jitter: max 3600, random 100 => EXPIRE 101', async () => {
    const h = harness('domain: domain\ndescriptors:\n  - {key: key, value: value, rate_limit: {unit: second, requests_per_unit: 10}}\n', { expirationJitterMaxSeconds: 3600 }, 1234, 100);
    await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['key', 'value']))], hitsAddend: 0 });
    assert.equal(h.store.increments.at(-1)?.[0]?.expireSeconds, 101);
  });
});

describe('local over-limit cache', () => {
  const gauges = (stats: StatsStore) => {
    const g = (n: string) => [...stats.allGauges()].find((x) => x.name === `ratelimit.localcache.${n}`)?.value();
    return [g('hitCount'), g('missCount'), g('lookupCount'), g('expiredCount'), g('entryCount')];
  };
  for (const shadow of [false, true]) {
    test(`${shadow ? '51. shadow rule' : '50. regular rule'}: 4th request is answered locally`, async () => {
      const yaml = `domain: domain\ndescriptors:\n  - {key: key4, value: value4, shadow_mode: ${shadow}, rate_limit: {unit: hour, requests_per_unit: 15}}\n`;
      const h = harness(yaml, { localCacheSizeInBytes: 100 }, 1000000);
      const key = 'domain_key4_value4_997200';
      const expectGauges = [
        [0, 1, 1, 0, 0],
        [0, 2, 2, 0, 0],
        [0, 3, 3, 0, 1],
        [1, 3, 4, 0, 1],
      ];
      const codes = shadow ? [Code.OK, Code.OK, Code.OK, Code.OK] : [Code.OK, Code.OK, Code.OVER_LIMIT, Code.OVER_LIMIT];
      const remaining = [4, 2, 0, 0];
      const presets = [10, 12, 15];
      for (let step = 0; step < 4; step++) {
        const preset = presets[step];
        if (preset !== undefined) await h.store.preset(key, preset);
        const before = h.store.increments.length;
        const r = await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['key4', 'value4']))], hitsAddend: 0 });
        assert.equal(r.statuses[0]?.code, codes[step], `step ${step}`);
        assert.equal(r.statuses[0]?.limitRemaining, remaining[step], `step ${step}`);
        assert.equal(h.store.increments.length - before, step < 3 ? 1 : 0, `store calls at step ${step}`);
        h.service.localCache!.refreshGauges();
        assert.deepEqual(gauges(h.stats), expectGauges[step], `gauges at step ${step}`);
        if (shadow) assert.equal(ruleCounters(h.stats, 'domain.key4_value4').shadow, [0, 0, 1, 2][step]);
      }
      assert.deepEqual(ruleCounters(h.stats, 'domain.key4_value4'), { total: 4, over: 2, near: 1, within: 2, local: 1, shadow: shadow ? 2 : 0 });
      // The next window has a new key, so the store is asked again.
      h.clock.advance(3600 * 1000);
      await h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['key4', 'value4']))], hitsAddend: 0 });
      h.service.localCache!.refreshGauges();
      assert.deepEqual(gauges(h.stats), [1, 4, 5, 0, 1]);
      assert.equal(h.store.increments.at(-1)?.[0]?.key, 'domain_key4_value4_1000800');
    });
  }

  test('entries expire one unit after being written, on the injected clock', () => {
    const clock = new FakeClock();
    clock.setSeconds(1000);
    const stats = new StatsStore();
    const cache = new LocalOverLimitCache(1000, clock, stats);
    cache.add('k', 60);
    clock.advance(59_999);
    assert.equal(cache.has('k'), true);
    clock.advance(1);
    assert.equal(cache.has('k'), false);
    cache.add('k', 60);
    cache.add('k', 60);
    cache.refreshGauges();
    const g = (n: string) => stats.gauge(`ratelimit.localcache.${n}`).value();
    assert.deepEqual([g('hitCount'), g('missCount'), g('expiredCount'), g('entryCount'), g('overwriteCount')], [1, 1, 1, 1, 1]);
  });

  test('the byte budget evicts the oldest entries', async () => {
    const yaml = 'domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: hour, requests_per_unit: 0}}\n';
    // each entry costs 24 + key bytes (`d_k_v1_997200` = 13) = 37 bytes: two fit in 80
    const h = harness(yaml, { localCacheSizeInBytes: 80 }, 1000000);
    for (const v of ['v1', 'v2', 'v3']) await h.service.shouldRateLimit({ domain: 'd', descriptors: [d(e(['k', v]))], hitsAddend: 0 });
    h.service.localCache!.refreshGauges();
    const g = (n: string) => [...h.stats.allGauges()].find((x) => x.name === `ratelimit.localcache.${n}`)?.value();
    assert.equal(g('entryCount'), 2);
    assert.equal(g('evacuateCount'), 1);
    const calls = h.store.increments.length;
    await h.service.shouldRateLimit({ domain: 'd', descriptors: [d(e(['k', 'v1']))], hitsAddend: 0 });
    assert.equal(h.store.increments.length, calls + 1, 'v1 was evicted, so the store is asked');
    await h.service.shouldRateLimit({ domain: 'd', descriptors: [d(e(['k', 'v3']))], hitsAddend: 0 });
    assert.equal(h.store.increments.length, calls + 1, 'v3 is still cached');
  });
});

describe('STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT', () => {
  test('(a)(b)(c) then a local-cache hit freezes the other counter', async () => {
    const yaml = 'domain: domain\ndescriptors:\n  - {key: key4, rate_limit: {unit: hour, requests_per_unit: 15}}\n  - {key: key5, rate_limit: {unit: hour, requests_per_unit: 14}}\n';
    const h = harness(yaml, { stopCacheKeyIncrementWhenOverlimit: true, localCacheSizeInBytes: 1000 }, 1000000);
    const k4 = 'domain_key4_value4_997200';
    const k5 = 'domain_key5_value5_997200';
    await h.store.preset(k4, 10);
    await h.store.preset(k5, 10);
    const req = (a: number) => h.service.shouldRateLimit({ domain: 'domain', descriptors: [d(e(['key4', 'value4'])), d(e(['key5', 'value5']))], hitsAddend: a });
    const summary = (r: Awaited<ReturnType<typeof req>>) => r.statuses.map((s) => [s.code, s.limitRemaining]);

    const a = await req(1);
    assert.deepEqual(h.store.gets.at(-1), [k4, k5]);
    assert.deepEqual(h.store.increments.at(-1)?.map((o) => o.addend), [1, 1]);
    assert.deepEqual(summary(a), [[Code.OK, 4], [Code.OK, 3]]);

    const b = await req(2);
    assert.deepEqual(h.store.increments.at(-1)?.map((o) => o.addend), [2, 2]);
    assert.deepEqual(summary(b), [[Code.OK, 2], [Code.OK, 1]]);
    assert.equal(ruleCounters(h.stats, 'domain.key4').near, 1);
    assert.equal(ruleCounters(h.stats, 'domain.key5').near, 2);

    const c = await req(2);
    assert.deepEqual(h.store.increments.at(-1)?.map((o) => [o.key, o.addend, o.expireSeconds]), [
      [k4, 0, 3600],
      [k5, 2, 3600],
    ]);
    assert.deepEqual(summary(c), [[Code.OK, 2], [Code.OVER_LIMIT, 0]]);
    assert.deepEqual(ruleCounters(h.stats, 'domain.key4'), { total: 5, over: 0, near: 2, within: 5, local: 0, shadow: 0 });
    assert.deepEqual(ruleCounters(h.stats, 'domain.key5'), { total: 5, over: 1, near: 3, within: 3, local: 0, shadow: 0 });
    assert.deepEqual(await h.store.inner.get([k4, k5]), [13, 15]);

    // key5 is now over in the local cache: no GET, and key4 gets INCRBY 0 (+EXPIRE).
    const gets = h.store.gets.length;
    const dd = await req(1);
    assert.equal(h.store.gets.length, gets);
    assert.deepEqual(h.store.increments.at(-1)?.map((o) => [o.key, o.addend]), [[k4, 0]]);
    // statuses use the nominal addend: key4 shows the count it was not given (13 of 15)
    assert.deepEqual(summary(dd), [[Code.OK, 2], [Code.OVER_LIMIT, 0]]);
    assert.equal(ruleCounters(h.stats, 'domain.key5').local, 1);
  });
});

describe('base limiter statuses', () => {
  const limit = (shadowMode: boolean, rpu: number): Limit => ({
    requestsPerUnit: rpu,
    unit: Unit.SECOND,
    windowSeconds: 1,
    unitMultiplier: 1,
    keyTail: '',
    policyParams: `;q=${rpu};w=1`,
    policyName: '',
    name: '',
    unlimited: false,
    shadowMode,
    quotaMode: false,
    replaces: [],
    metadata: undefined,
    algorithm: 'fixed_window',
    burst: 0,
    emissionUs: 0,
    toleranceUs: 0,
    fullKey: 'd.k',
    isOverride: false,
    currentLimit: { requestsPerUnit: rpu, unit: Unit.SECOND, name: '' },
  });
  test('local-cache hit, plain and shadow', () => {
    const stats = new StatsStore();
    const s = createRuleStats(stats, 'd.k');
    assert.equal(localCacheStatus(limit(false, 5), s, 2, 1).code, Code.OVER_LIMIT);
    assert.deepEqual([s.overLimit.value(), s.overLimitWithLocalCache.value(), s.shadowMode.value()], [2, 2, 0]);
    const s2 = createRuleStats(new StatsStore(), 'd.k');
    const st = localCacheStatus(limit(true, 5), s2, 2, 1);
    assert.equal(st.code, Code.OK);
    assert.equal(st.limitRemaining, 0);
    assert.equal(s2.shadowMode.value(), 2);
  });
  test('straddle: limit 5, before 2, after 7', () => {
    for (const shadow of [false, true]) {
      const s = createRuleStats(new StatsStore(), 'd.k');
      const st = counterStatus(limit(shadow, 5), s, 5, 7, 0.8, 1);
      assert.equal(st.code, shadow ? Code.OK : Code.OVER_LIMIT);
      assert.equal(st.limitRemaining, 0);
      assert.deepEqual([s.overLimit.value(), s.nearLimit.value(), s.withinLimit.value(), s.shadowMode.value()], [2, 1, 0, shadow ? 2 : 0]);
    }
  });
  test('under the limit: limit 10, after 6', () => {
    const s = createRuleStats(new StatsStore(), 'd.k');
    const st = counterStatus(limit(false, 10), s, 1, 6, 0.8, 1);
    assert.deepEqual([st.code, st.limitRemaining, s.nearLimit.value(), s.withinLimit.value()], [Code.OK, 4, 0, 1]);
  });
});
