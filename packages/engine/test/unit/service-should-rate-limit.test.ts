// RateLimitService end to end over the real MemoryStore: overrides, replaces, unlimited, overall code, shadow,
// quota mode, headers; numbered cases follow upstream's test/service/ratelimit_test.go.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Code, MAX_UINT32, MemoryStore, RateLimitError, StoreError, Unit, isPromise, loadRuleSet, type DescriptorEntry, type RateLimitRequest, type RequestDescriptor, type RuleSet } from '@rls/engine';
import { harness, ruleCounters } from '../support/limiter-support.js';

const e = (...pairs: [string, string][]): DescriptorEntry[] => pairs.map(([key, value]) => ({ key, value }));
const d = (entries: DescriptorEntry[], extra: Partial<RequestDescriptor> = {}): RequestDescriptor => ({ entries, ...extra });
const req = (domain: string, descriptors: RequestDescriptor[], hitsAddend = 0): RateLimitRequest => ({ domain, descriptors, hitsAddend });
const C = 'ratelimit.service.';

const RULES = `domain: d
descriptors:
  - {key: over, rate_limit: {unit: minute, requests_per_unit: 0}}
  - {key: ok, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: qover, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 0}}
  - {key: qok, quota_mode: true, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: shadow, shadow_mode: true, rate_limit: {unit: minute, requests_per_unit: 0}}
  - {key: free, rate_limit: {unlimited: true, name: free, replaces: [{name: replaced}]}}
  - {key: replaced, rate_limit: {unit: second, requests_per_unit: 55, name: replaced}}
  - {key: meta1, metadata: {name: service_1}, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: meta2, metadata: {name: service_2}, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: meta2over, metadata: {name: service_2}, rate_limit: {unit: minute, requests_per_unit: 0}}
  - {key: meta3, metadata: {some_other_name: x, nested: {a: 1}}, rate_limit: {unit: minute, requests_per_unit: 10}}
  - {key: meta4, metadata: {nested: {b: 2, a: 9}}, rate_limit: {unit: minute, requests_per_unit: 10}}
`;
const one = (key: string, value = 'v'): RequestDescriptor => d(e([key, value]));

describe('request validation and config state', () => {
  test('59. empty domain / empty descriptors are service errors', () => {
    const h = harness(RULES, {}, 2222);
    // Refused before any store is asked: thrown at once (maybe-promise.ts), never a promise.
    assert.throws(() => h.service.shouldRateLimit(req('', [one('ok')])), (err: unknown) => {
      assert.ok(err instanceof RateLimitError);
      assert.equal(err.code, 'invalid_request');
      assert.equal(err.message, 'rate limit domain must not be empty');
      return true;
    });
    assert.equal(h.stats.counterValue(C + 'call.should_rate_limit.service_error'), 1);
    assert.throws(() => h.service.shouldRateLimit(req('d', [])), { message: 'rate limit descriptor list must not be empty' });
    assert.equal(h.stats.counterValue(C + 'call.should_rate_limit.service_error'), 2);
  });
  test('61. no rules loaded', () => {
    const h = harness(undefined, {}, 2222);
    assert.throws(() => h.service.shouldRateLimit(req('d', [one('ok')])), { code: 'no_config', message: 'no rate limit configuration loaded' });
    assert.equal(h.stats.counterValue(C + 'call.should_rate_limit.service_error'), 1);
  });
  test('55. a failed reload keeps the previous rules', async () => {
    const h = harness(RULES, {}, 2222);
    const first = h.service.currentRuleSet();
    const seen: RuleSet[] = [];
    const off = h.service.onRulesChanged((rs) => seen.push(rs));
    h.service.recordConfigError(new Error('bad'));
    assert.equal(h.service.currentRuleSet(), first);
    const r = await h.service.shouldRateLimit(req('d', [one('ok')]));
    assert.equal(r.statuses[0]?.limitRemaining, 9);
    const next = loadRuleSet([{ name: 'n.yaml', content: 'domain: other\n' }], { mergeDomainConfig: false, stats: h.stats });
    h.service.setRuleSet(next);
    assert.deepEqual(seen, [next]);
    off();
    assert.equal(h.stats.counterValue(C + 'config_load_success'), 2);
    assert.equal(h.stats.counterValue(C + 'config_load_error'), 1);
    assert.equal(h.stats.counterValue(C + 'global_shadow_mode'), 0);
    const unknown = await h.service.shouldRateLimit(req('d', [one('ok'), one('ok')]));
    assert.deepEqual(unknown, { overallCode: Code.OK, statuses: [{ code: Code.OK, limitRemaining: 0 }, { code: Code.OK, limitRemaining: 0 }], responseHeadersToAdd: [] });
    assert.equal(h.stats.counterValue('ratelimit.service.rate_limit.d.domain_not_found'), 2);
  });
  test('60. store failure: StoreError, redis_error, total_hits already counted', async () => {
    const h = harness(RULES, {}, 2222);
    h.store.failNext = new Error('cache error');
    const answer = h.service.shouldRateLimit(req('d', [one('ok')]));
    assert.ok(isPromise(answer), 'a store that waits fails later: the decision is a promise that rejects');
    await assert.rejects(answer, (err: unknown) => {
      assert.ok(err instanceof StoreError);
      assert.equal(err.code, 'store_unavailable');
      assert.equal(err.message, 'cache error');
      return true;
    });
    assert.equal(h.stats.counterValue(C + 'call.should_rate_limit.redis_error'), 1);
    assert.equal(ruleCounters(h.stats, 'd.ok').total, 1);
  });
  test('a store failure surfaces as the store answered: thrown at once, or rejected later (every step, both ways)', async () => {
    for (const stop of [false, true]) {
      // stopCacheKeyIncrementWhenOverlimit: a get before the increment, so both steps can fail.
      for (const step of stop ? ['get', 'increment'] : ['increment']) {
        const h = harness(RULES, { stopCacheKeyIncrementWhenOverlimit: stop }, 2222);
        const fail = (how: 'throw' | 'reject'): void => {
          h.store.failHow = how;
          if (step === 'get') h.store.failNext = new Error(`${how} ${step}`);
          else {
            // Let the get through: fail the increment only.
            const inc = h.store.increment.bind(h.store);
            h.store.increment = (ops) => {
              h.store.increment = inc;
              h.store.failNext = new Error(`${how} ${step}`);
              return inc(ops);
            };
          }
        };
        const isStoreError = (how: string) => (err: unknown) => err instanceof StoreError && err.message === `${how} ${step}`;
        fail('throw');
        assert.throws(() => h.service.shouldRateLimit(req('d', [one('ok')])), isStoreError('throw'), `stop=${stop} ${step}: thrown`);
        fail('reject');
        const later = h.service.shouldRateLimit(req('d', [one('ok')]));
        assert.ok(isPromise(later), `stop=${stop} ${step}: a promise`);
        await assert.rejects(later, isStoreError('reject'));
        assert.equal(h.stats.counterValue(C + 'call.should_rate_limit.redis_error'), 2, `stop=${stop} ${step}: both counted`);
        // And the same service answers at once again once the store does.
        const ok = h.service.shouldRateLimit(req('d', [one('ok')]));
        assert.ok(!isPromise(ok), 'the memory store answers at once');
        assert.equal(ok.overallCode, Code.OK);
      }
    }
  });
  test('the memory store fails at once: a bad op throws StoreError synchronously, changing nothing', () => {
    const store = new MemoryStore({ clock: { now: () => 0 } });
    const op = { key: 'k', addend: 1, expireSeconds: 60, windowSeconds: 60 };
    assert.deepEqual(store.increment([op]), [1]);
    assert.throws(() => store.increment([op, { ...op, addend: 0.5 }]), StoreError);
    assert.throws(() => store.execute([{ ...op, addend: -1 }]), StoreError);
    assert.deepEqual(store.get(['k']), [1]);
  });
  test('an override with unit UNKNOWN or out of range is rejected, not a crash', async () => {
    const h = harness(RULES, {}, 2222);
    for (const unit of [0, 8]) {
      assert.throws(
        () => h.service.shouldRateLimit(req('d', [one('ok'), d(e(['x', 'y']), { limit: { requestsPerUnit: 5, unit } })])),
        (err: unknown) => {
          assert.ok(err instanceof RateLimitError);
          assert.equal(err.code, 'invalid_request');
          assert.match(err.message, new RegExp(`^descriptor 1: rate limit override has invalid unit ${unit} `));
          return true;
        },
      );
    }
    assert.equal(h.store.increments.length, 0);
    assert.equal(h.stats.counterValue(C + 'call.should_rate_limit.service_error'), 2);
    const week = await h.service.shouldRateLimit(req('d', [d(e(['x', 'y']), { limit: { requestsPerUnit: 5, unit: Unit.WEEK } })]));
    assert.deepEqual(week.statuses[0]?.currentLimit, { requestsPerUnit: 5, unit: Unit.WEEK, name: '' });
    assert.equal(h.store.increments.at(-1)?.[0]?.key, 'd_x_y_0');
    assert.equal(h.store.increments.at(-1)?.[0]?.windowSeconds, 604800);
  });
});

describe('statuses, shadow, unlimited, replaces', () => {
  test('all descriptors of a request go to the store in one call', async () => {
    const h = harness(RULES, {}, 2222);
    await h.service.shouldRateLimit(req('d', [one('ok', 'a'), one('ok', 'b'), one('over')]));
    assert.equal(h.store.increments.length, 1);
    assert.deepEqual(h.store.increments[0]?.map((o) => o.key), ['d_ok_a_2220', 'd_ok_b_2220', 'd_over_v_2220']);
  });
  test('56. global shadow: overall OK, statuses unchanged, stat counted', async () => {
    const h = harness(RULES, { shadowMode: true }, 2222);
    const r = await h.service.shouldRateLimit(req('d', [one('over'), one('ok')]));
    assert.equal(r.overallCode, Code.OK);
    assert.deepEqual(r.statuses.map((s) => s.code), [Code.OVER_LIMIT, Code.OK]);
    assert.equal(h.stats.counterValue(C + 'global_shadow_mode'), 1);
    await h.service.shouldRateLimit(req('d', [one('ok')]));
    assert.equal(h.stats.counterValue(C + 'global_shadow_mode'), 1);
  });
  test('57. rule shadow: OK with remaining 0; a regular OVER still fails the request', async () => {
    const h = harness(RULES, {}, 2222);
    const r = await h.service.shouldRateLimit(req('d', [one('shadow')]));
    assert.equal(r.overallCode, Code.OK);
    assert.deepEqual(r.statuses[0], { code: Code.OK, currentLimit: { requestsPerUnit: 0, unit: Unit.MINUTE, name: '' }, limitRemaining: 0, durationUntilReset: 58 });
    assert.equal(ruleCounters(h.stats, 'd.shadow').shadow, 1);
    const mixed = await h.service.shouldRateLimit(req('d', [one('shadow'), one('over')]));
    assert.equal(mixed.overallCode, Code.OVER_LIMIT);
  });
  test('62. unlimited: no store call, no stats, remaining MAX_UINT32', async () => {
    const h = harness(RULES, {}, 2222);
    const r = await h.service.shouldRateLimit(req('d', [one('ok'), one('nothing'), one('free')]));
    assert.deepEqual(h.store.increments.at(-1)?.map((o) => o.key), ['d_ok_v_2220']);
    assert.deepEqual(r.statuses, [
      { code: Code.OK, currentLimit: { requestsPerUnit: 10, unit: Unit.MINUTE, name: '' }, limitRemaining: 9, durationUntilReset: 58 },
      { code: Code.OK, limitRemaining: 0 },
      { code: Code.OK, limitRemaining: MAX_UINT32 },
    ]);
    assert.deepEqual(ruleCounters(h.stats, 'd.free'), { total: 0, over: 0, near: 0, within: 0, local: 0, shadow: 0 });
    const only = await h.service.shouldRateLimit(req('d', [one('free')]));
    assert.equal(h.store.increments.length, 1, 'no store call when nothing is limited');
    assert.equal(only.overallCode, Code.OK);
  });
  test('replaces: the named rule is dropped when its replacer matches in the same request', async () => {
    const h = harness(RULES, {}, 2222);
    const r = await h.service.shouldRateLimit(req('d', [one('replaced'), one('free')]));
    assert.deepEqual(r.statuses, [
      { code: Code.OK, limitRemaining: 0 },
      { code: Code.OK, limitRemaining: MAX_UINT32 },
    ]);
    assert.equal(h.store.increments.length, 0);
    assert.equal(ruleCounters(h.stats, 'd.replaced').total, 0);
    const alone = await h.service.shouldRateLimit(req('d', [one('replaced')]));
    assert.equal(alone.statuses[0]?.currentLimit?.name, 'replaced');
  });
  test('replaces, README example 7', async () => {
    const yaml = `domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors: [{key: user, value: bkthomps, rate_limit: {unit: second, requests_per_unit: 5, name: specific_limit}}]
  - key: key_2
    value: value_2
    descriptors: [{key: user, value: bkthomps, rate_limit: {unit: second, requests_per_unit: 10, replaces: [{name: specific_limit}]}}]
`;
    const h = harness(yaml, {}, 2222);
    const both = await h.service.shouldRateLimit(
      req('example7', [d(e(['key_1', 'value_1'], ['user', 'bkthomps'])), d(e(['key_2', 'value_2'], ['user', 'bkthomps']))]),
    );
    assert.deepEqual(both.statuses.map((s) => s.currentLimit?.requestsPerUnit), [undefined, 10]);
    const first = await h.service.shouldRateLimit(req('example7', [d(e(['key_1', 'value_1'], ['user', 'bkthomps']))]));
    assert.equal(first.statuses[0]?.currentLimit?.requestsPerUnit, 5);
  });
});

describe('response headers', () => {
  const headers = { enabled: true, limitHeader: 'A-Ratelimit-Limit', remainingHeader: 'A-Ratelimit-Remaining', resetHeader: 'A-Ratelimit-Reset' };
  test('58. custom names, clock 2222 => reset 58', async () => {
    const yaml = 'domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: minute, requests_per_unit: 10}}\n';
    const h = harness(yaml, { responseHeaders: headers }, 2222);
    await h.store.preset('d_k_v_2220', 10, 60);
    const r = await h.service.shouldRateLimit(req('d', [one('k')]));
    assert.deepEqual(r.responseHeadersToAdd, [
      { key: 'A-Ratelimit-Limit', value: '10' },
      { key: 'A-Ratelimit-Remaining', value: '0' },
      { key: 'A-Ratelimit-Reset', value: '58' },
    ]);
    const def = harness(yaml, { responseHeaders: { enabled: true, limitHeader: 'RateLimit-Limit', remainingHeader: 'RateLimit-Remaining', resetHeader: 'RateLimit-Reset' } }, 2222);
    await def.store.preset('d_k_v_2220', 10, 60);
    const r2 = await def.service.shouldRateLimit(req('d', [one('k')]));
    assert.deepEqual(r2.responseHeadersToAdd.map((x) => `${x.key}: ${x.value}`), ['RateLimit-Limit: 10', 'RateLimit-Remaining: 0', 'RateLimit-Reset: 58']);
  });
  test('selection: smallest remaining, a non-quota OVER always wins, shadow/quota only by remaining; kept under global shadow', async () => {
    const h = harness(RULES, { responseHeaders: headers, shadowMode: true }, 2222);
    const value = (r: { responseHeadersToAdd: { key: string; value: string }[] }) => r.responseHeadersToAdd.map((x) => x.value);
    // remaining 9 (ok) vs over (limit 0): the OVER descriptor is described even though it comes first
    assert.deepEqual(value(await h.service.shouldRateLimit(req('d', [one('over'), one('ok', 'x')]))), ['0', '0', '58']);
    assert.deepEqual(value(await h.service.shouldRateLimit(req('d', [one('ok', 'y'), one('qok', 'z')]))), ['10', '9', '58']);
    // no limit anywhere: no headers
    assert.deepEqual((await h.service.shouldRateLimit(req('d', [one('nothing'), one('free')]))).responseHeadersToAdd, []);
  });
});

describe('quota mode', () => {
  const cases: [string, string[], boolean, number][] = [
    ['global quota, both over', ['over', 'over'], true, Code.OVER_LIMIT],
    ['regular over + quota ok', ['over', 'qok'], false, Code.OVER_LIMIT],
    ['regular ok + quota over (the only quota failed)', ['ok', 'qover'], false, Code.OVER_LIMIT],
    ['regular ok + quota ok', ['ok', 'qok'], false, Code.OK],
    ['quota over + quota ok', ['qover', 'qok'], false, Code.OK],
    ['quota over + quota over', ['qover', 'qover'], false, Code.OVER_LIMIT],
    ['global quota, no rule matched counts as passing', ['over', 'nothing'], true, Code.OK],
  ];
  for (const [name, keys, globalQuota, expected] of cases) {
    test(name, async () => {
      const h = harness(RULES, { quotaMode: globalQuota }, 2222);
      const r = await h.service.shouldRateLimit(req('d', keys.map((k, i) => one(k, `v${i}`))));
      assert.equal(r.overallCode, expected);
    });
  }
  test('global shadow with everything over', async () => {
    const h = harness(RULES, { shadowMode: true }, 2222);
    const r = await h.service.shouldRateLimit(req('d', [one('over', 'a'), one('qover', 'b')]));
    assert.equal(r.overallCode, Code.OK);
    assert.deepEqual(r.statuses.map((s) => s.code), [Code.OVER_LIMIT, Code.OVER_LIMIT]);
    assert.equal(h.stats.counterValue(C + 'global_shadow_mode'), 1);
  });
});

describe('dynamic metadata', () => {
  const opts = { quotaMode: true, responseDynamicMetadata: true };
  test('66. metadata of passed descriptors only; first wins; keys from both', async () => {
    const h = harness(RULES, opts, 2222);
    const r = await h.service.shouldRateLimit(req('d', [one('meta1'), one('meta2over')]));
    assert.equal(r.overallCode, Code.OK);
    assert.deepEqual(r.dynamicMetadata?.metadata, { name: 'service_1' });
    const both = await h.service.shouldRateLimit(req('d', [one('meta1'), one('meta3')]));
    assert.deepEqual(both.dynamicMetadata?.metadata, { name: 'service_1', some_other_name: 'x', nested: { a: 1 } });
    const same = await h.service.shouldRateLimit(req('d', [one('meta1'), one('meta2')]));
    assert.deepEqual(same.dynamicMetadata?.metadata, { name: 'service_1' });
  });
  test('nested merge does not touch the loaded rules', async () => {
    const h = harness(RULES, opts, 2222);
    const r = await h.service.shouldRateLimit(req('d', [one('meta3'), one('meta4')]));
    assert.deepEqual(r.dynamicMetadata?.metadata, { some_other_name: 'x', nested: { a: 1, b: 2 } });
    const again = await h.service.shouldRateLimit(req('d', [one('meta3')]));
    assert.deepEqual(again.dynamicMetadata?.metadata, { some_other_name: 'x', nested: { a: 1 } });
  });
  test('67. layout', async () => {
    const h = harness(RULES, { responseDynamicMetadata: true }, 2222);
    const r = await h.service.shouldRateLimit(req('d', [d(e(['key1', 'val1']))]));
    assert.deepEqual(r.dynamicMetadata, { domain: 'd', descriptors: [{ entries: ['key1=val1'] }] });
    const r2 = await h.service.shouldRateLimit(
      req('d', [d(e(['meta1', 'v']), { hitsAddend: 2 }), d(e(['x', 'y']), { limit: { requestsPerUnit: 3, unit: Unit.HOUR } })], 5),
    );
    assert.deepEqual(r2.dynamicMetadata, {
      domain: 'd',
      descriptors: [{ entries: ['meta1=v'], hitsAddend: 2 }, { entries: ['x=y'], limit: 'requests_per_unit:3 unit:HOUR' }],
      hitsAddend: 5,
      metadata: { name: 'service_1' },
    });
    const off = harness(RULES, {}, 2222);
    assert.equal((await off.service.shouldRateLimit(req('d', [one('meta1')]))).dynamicMetadata, undefined);
  });
});

describe('decision provenance (LocalDecision)', () => {
  test('only a decision made from the local over-limit cache alone carries one; repeat() counts what deciding again counts', async () => {
    const h = harness(RULES, { localCacheSizeInBytes: 10_000 }, 3_000);
    const r1 = await h.service.shouldRateLimit(req('d', [one('over')]));
    assert.equal(r1.overallCode, Code.OVER_LIMIT);
    assert.equal(r1.localDecision, undefined, 'the store was asked: no local provenance');
    const r2 = await h.service.shouldRateLimit(req('d', [one('over')]));
    const decision = r2.localDecision;
    assert.ok(decision !== undefined, 'the key was remembered: decided locally');
    assert.equal(decision.second, 3_000);
    const mixed = await h.service.shouldRateLimit(req('d', [one('over'), one('ok')]));
    assert.equal(mixed.localDecision, undefined, 'a descriptor needed the store');

    // A twin service decides the same request again in full; the counters must move alike.
    const twin = harness(RULES, { localCacheSizeInBytes: 10_000 }, 3_000);
    for (let i = 0; i < 2; i++) await twin.service.shouldRateLimit(req('d', [one('over')]));
    await twin.service.shouldRateLimit(req('d', [one('over'), one('ok')]));
    assert.equal(decision.repeat(), true);
    await twin.service.shouldRateLimit(req('d', [one('over')]));
    assert.deepEqual(ruleCounters(h.stats, 'd.over'), ruleCounters(twin.stats, 'd.over'));
    h.service.localCache?.refreshGauges();
    twin.service.localCache?.refreshGauges();
    assert.equal(h.stats.gauge('ratelimit.localcache.hitCount').value(), twin.stats.gauge('ratelimit.localcache.hitCount').value());

    // Another second, or other rules: the same request might be answered differently.
    h.clock.advance(1000);
    const before = ruleCounters(h.stats, 'd.over');
    assert.equal(decision.repeat(), false);
    assert.deepEqual(ruleCounters(h.stats, 'd.over'), before, 'a refused repeat counts nothing');
    const r3 = await h.service.shouldRateLimit(req('d', [one('over')]));
    h.service.setRuleSet(loadRuleSet([{ name: 'rules.yaml', content: RULES }], { mergeDomainConfig: false, stats: h.stats }));
    assert.equal(r3.localDecision?.repeat(), false);
  });

  test('without a local cache no decision carries provenance', async () => {
    const h = harness(RULES, {}, 3_000);
    for (let i = 0; i < 3; i++) assert.equal((await h.service.shouldRateLimit(req('d', [one('over')]))).localDecision, undefined);
  });
});
