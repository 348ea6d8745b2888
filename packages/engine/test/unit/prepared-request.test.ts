// RateLimitService.prepare + shouldRateLimitPrepared against shouldRateLimit: two services
// with the same rules, options and clock, each over its own MemoryStore and StatsStore, decide the
// same request sequence; responses, statistics and errors must be identical, whatever the prepared
// request keeps (rule matches per rule set, counter keys per window).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@rls/testkit';
import {
  Code,
  DEFAULT_LIMITER_OPTIONS,
  MemoryStore,
  RateLimitError,
  RateLimitService,
  StatsStore,
  Unit,
  loadRuleSet,
  isPromise,
  type DecidedResponse,
  type DescriptorEntry,
  type LimiterOptions,
  type MaybePromise,
  type RateLimitRequest,
  type RequestDescriptor,
} from '@rls/engine';
import { ruleCounters } from '../support/limiter-support.js';

const e = (...pairs: [string, string][]): DescriptorEntry[] => pairs.map(([key, value]) => ({ key, value }));
const d = (entries: DescriptorEntry[], extra: Partial<RequestDescriptor> = {}): RequestDescriptor => ({ entries, ...extra });
const one = (key: string, value = 'v'): RequestDescriptor => d(e([key, value]));
const req = (domain: string, descriptors: RequestDescriptor[], hitsAddend = 0): RateLimitRequest => ({ domain, descriptors, hitsAddend });

/** 12:00:00.100 on 1 Jan 2026: not on a second boundary, so 250 ms steps cross windows mid-sequence. */
const START_MS = Date.UTC(2026, 0, 1, 12, 0, 0, 100);

const RULES = `domain: d
descriptors:
  - {key: f, rate_limit: {unit: second, requests_per_unit: 5}}
  - {key: fm, rate_limit: {unit: minute, requests_per_unit: 8}}
  - {key: s, rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window}}
  - {key: t, rate_limit: {unit: second, requests_per_unit: 4, algorithm: token_bucket, burst: 3}}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 30}
    descriptors:
      - {key: path, rate_limit: {unit: second, requests_per_unit: 2, algorithm: sliding_window}}
  - {key: quota, quota_mode: true, rate_limit: {unit: second, requests_per_unit: 2}}
  - {key: shadow, shadow_mode: true, rate_limit: {unit: second, requests_per_unit: 1, algorithm: token_bucket}}
  - {key: free, rate_limit: {unlimited: true, name: free, replaces: [{name: replaced}]}}
  - {key: replaced, rate_limit: {unit: second, requests_per_unit: 1, name: replaced}}
  - {key: meta, metadata: {name: m}, rate_limit: {unit: second, requests_per_unit: 3}}
`;

/** Per-value statistics and share_threshold: `root.dynamic`, so matches are looked up on every call. */
const DYNAMIC_RULES = `domain: dyn
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: wild
    value: "foo*"
    share_threshold: true
    rate_limit: {unit: second, requests_per_unit: 4, algorithm: sliding_window}
  - key: vm
    value_to_metric: true
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: token_bucket}
  - {key: plain, rate_limit: {unit: second, requests_per_unit: 3}}
`;

interface Side {
  service: RateLimitService;
  stats: StatsStore;
}

interface Twins {
  clock: FakeClock;
  /** Decided with prepare + shouldRateLimitPrepared. */
  prepared: Side;
  /** Decided with shouldRateLimit. */
  plain: Side;
  /** Loads `yaml` into both services (each with its own RuleSet on its own StatsStore). */
  load(yaml: string): void;
}

function twins(yaml: string | undefined, options: Partial<LimiterOptions> = {}): Twins {
  const clock = new FakeClock(START_MS);
  const side = (): Side => {
    const stats = new StatsStore();
    const service = new RateLimitService({
      store: new MemoryStore({ clock }),
      stats,
      clock,
      random: { int: () => 0 },
      options: { ...DEFAULT_LIMITER_OPTIONS, expirationJitterMaxSeconds: 0, ...options },
    });
    return { service, stats };
  };
  const t: Twins = {
    clock,
    prepared: side(),
    plain: side(),
    load(text: string): void {
      for (const s of [t.prepared, t.plain]) s.service.setRuleSet(loadRuleSet([{ name: 'rules.yaml', content: text }], { mergeDomainConfig: false, stats: s.stats }));
    },
  };
  if (yaml !== undefined) t.load(yaml);
  return t;
}

/** Every counter and gauge of a stats store by name (and tags). */
function statsOf(stats: StatsStore): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of stats.allCounters()) out[`counter ${c.name} ${JSON.stringify(c.tags)}`] = c.total;
  for (const g of stats.allGauges()) out[`gauge ${g.name} ${JSON.stringify(g.tags)}`] = g.value();
  return out;
}

/** The response itself: on the memory store every decision is made at once (never a promise). */
function settled(r: MaybePromise<DecidedResponse>): DecidedResponse {
  assert.ok(!isPromise(r), 'the memory store decides synchronously');
  return r;
}

/** A response without its LocalDecision (an object bound to its own service), which is compared by its second. */
function comparable(r: MaybePromise<DecidedResponse>): unknown {
  const { localDecision, ...rest } = settled(r);
  return { ...rest, localSecond: localDecision?.second };
}

/**
 * Decides every request of `requests` on both sides, `rounds` times, advancing the clock by
 * `stepMs` before each round; asserts equal responses after each call and equal statistics at the
 * end. Each request is prepared once, before the first round. Returns the prepared side's responses.
 */
function decideBoth(t: Twins, requests: readonly RateLimitRequest[], rounds: number, stepMs: number | ((round: number) => number)): DecidedResponse[] {
  const prepared = requests.map((r) => t.prepared.service.prepare(r));
  const out: DecidedResponse[] = [];
  for (let round = 0; round < rounds; round++) {
    t.clock.advance(typeof stepMs === 'number' ? stepMs : stepMs(round));
    requests.forEach((r, i) => {
      const a = t.prepared.service.shouldRateLimitPrepared(prepared[i]!);
      const b = t.plain.service.shouldRateLimit(r);
      assert.deepEqual(comparable(a), comparable(b), `round ${round} (t=${t.clock.now()}), request ${i}`);
      out.push(settled(a));
    });
  }
  assert.deepEqual(statsOf(t.prepared.stats), statsOf(t.plain.stats));
  return out;
}

describe('prepared requests decide as shouldRateLimit', () => {
  const options: [string, Partial<LimiterOptions>][] = [
    ['defaults', {}],
    ['local over-limit cache', { localCacheSizeInBytes: 1 << 20 }],
    ['stop increment when over limit', { stopCacheKeyIncrementWhenOverlimit: true }],
    ['cache key prefix, headers, dynamic metadata', { cacheKeyPrefix: 'pfx:', responseDynamicMetadata: true, responseHeaders: { enabled: true, limitHeader: 'L', remainingHeader: 'R', resetHeader: 'X' } }],
    ['global shadow and quota mode', { shadowMode: true, quotaMode: true }],
  ];
  for (const algorithm of ['fixed_window', 'sliding_window', 'token_bucket'] as const) {
    const key = { fixed_window: 'f', sliding_window: 's', token_bucket: 't' }[algorithm];
    test(`${algorithm}: same responses and statistics across window boundaries`, () => {
      const t = twins(RULES);
      // 40 rounds of 3 hits, 150 ms apart: 6 s, every second over the limit, then a pause.
      const requests = [req('d', [one(key, 'a')]), req('d', [one(key, 'b')], 2), req('d', [one(key, 'a')])];
      const out = decideBoth(t, requests, 40, (round) => (round === 30 ? 3000 : 150));
      const c = ruleCounters(t.prepared.stats, `d.${key}`);
      assert.equal(c.total, 40 * 4, 'total_hits: 1 + 2 + 1 per round');
      assert.ok((c.over ?? 0) > 0 && (c.within ?? 0) > 0, `over and within limit both reached: ${JSON.stringify(c)}`);
      if (algorithm !== 'token_bucket') assert.ok((c.near ?? 0) > 0, `near_limit reached: ${JSON.stringify(c)}`);
      assert.ok(out.some((r) => r.overallCode === Code.OVER_LIMIT) && out.some((r) => r.overallCode === Code.OK));
      assert.deepEqual(ruleCounters(t.prepared.stats, `d.${key}`), ruleCounters(t.plain.stats, `d.${key}`));
    });
  }

  for (const [name, opts] of options) {
    test(`every algorithm in one request, nested, quota, shadow, unlimited, replaces: ${name}`, () => {
      const t = twins(RULES, opts);
      const requests = [
        req('d', [one('f'), one('s'), one('t'), one('fm'), one('nothing'), one('free')]),
        req('d', [d(e(['user', 'u1'], ['path', '/x'])), one('quota'), one('shadow'), one('meta')]),
        req('d', [one('replaced'), one('f', 'other')], 3),
        req('d', [one('replaced')]),
      ];
      decideBoth(t, requests, 50, 120);
      for (const k of ['f', 's', 't', 'fm', 'user.path', 'quota', 'shadow', 'meta', 'replaced']) {
        assert.deepEqual(ruleCounters(t.prepared.stats, `d.${k}`), ruleCounters(t.plain.stats, `d.${k}`), k);
      }
      assert.ok((ruleCounters(t.prepared.stats, 'd.f').over ?? 0) > 0);
    });
  }

  test('a clock that moves backwards and jumps whole windows', () => {
    const t = twins(RULES);
    const requests = [req('d', [one('f'), one('s'), one('t'), one('fm')])];
    const steps = [0, 400, 400, -900, 200, 61_000, -61_000, 1, 999, 3_600_000, 10, -5];
    decideBoth(t, requests, steps.length, (round) => steps[round]!);
  });

  test('many requests prepared at once keep their own keys (no sharing between prepared requests)', () => {
    const t = twins(RULES);
    const requests: RateLimitRequest[] = [];
    for (let i = 0; i < 12; i++) requests.push(req('d', [one(['f', 's', 't'][i % 3]!, `v${i % 5}`)]));
    decideBoth(t, requests, 20, 333);
  });
});

describe('what a prepared request keeps follows the service', () => {
  test('a rule set swapped with setRuleSet is used at once (the limit changes)', () => {
    for (const algorithm of ['fixed_window', 'sliding_window', 'token_bucket']) {
      const t = twins(`domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: minute, requests_per_unit: 5, algorithm: ${algorithm}}}\n`);
      const r = req('d', [one('k')]);
      const p = t.prepared.service.prepare(r);
      const call = (): DecidedResponse => {
        const a = settled(t.prepared.service.shouldRateLimitPrepared(p));
        assert.deepEqual(comparable(a), comparable(t.plain.service.shouldRateLimit(r)), algorithm);
        return a;
      };
      assert.equal(call().statuses[0]?.currentLimit?.requestsPerUnit, 5);
      assert.equal(call().statuses[0]?.code, Code.OK);
      // 1 a minute (a token bucket of 1: two hits at 5 a minute left it 24 s ahead, 60 s per token now).
      t.load(`domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: minute, requests_per_unit: 1, algorithm: ${algorithm}}}\n`);
      const third = call();
      assert.equal(third.statuses[0]?.currentLimit?.requestsPerUnit, 1, `${algorithm}: the new limit at once`);
      assert.equal(third.overallCode, Code.OVER_LIMIT, `${algorithm}: third hit over the new limit of 1`);
      // The rule is gone: nothing limits the descriptor any more.
      t.load('domain: d\ndescriptors:\n  - {key: other, rate_limit: {unit: minute, requests_per_unit: 1}}\n');
      assert.deepEqual(call(), { overallCode: Code.OK, statuses: [{ code: Code.OK, limitRemaining: 0 }], responseHeadersToAdd: [] });
      // The domain is gone: domain_not_found on every call.
      t.load('domain: elsewhere\n');
      call();
      call();
      assert.equal(t.prepared.stats.counterValue('ratelimit.service.rate_limit.d.domain_not_found'), 2);
      // And back, now unlimited.
      t.load('domain: d\ndescriptors:\n  - {key: k, rate_limit: {unlimited: true}}\n');
      assert.equal(call().statuses[0]?.limitRemaining, 4294967295);
      assert.deepEqual(statsOf(t.prepared.stats), statsOf(t.plain.stats), algorithm);
    }
  });

  test('a domain swapped from stable to dynamic and back counts per value as unprepared', () => {
    const t = twins('domain: dyn\ndescriptors:\n  - {key: user, rate_limit: {unit: second, requests_per_unit: 3}}\n');
    const requests = [req('dyn', [one('user', 'alice')]), req('dyn', [one('user', 'bob')])];
    const prepared = requests.map((r) => t.prepared.service.prepare(r));
    const round = (): void => {
      requests.forEach((r, i) => {
        assert.deepEqual(comparable(t.prepared.service.shouldRateLimitPrepared(prepared[i]!)), comparable(t.plain.service.shouldRateLimit(r)));
      });
    };
    round();
    t.load('domain: dyn\ndescriptors:\n  - {key: user, detailed_metric: true, rate_limit: {unit: second, requests_per_unit: 3}}\n');
    round();
    round();
    assert.equal(ruleCounters(t.prepared.stats, 'dyn.user_alice').total, 2, 'per-value statistics after the swap');
    t.load('domain: dyn\ndescriptors:\n  - {key: user, rate_limit: {unit: second, requests_per_unit: 3}}\n');
    round();
    assert.equal(ruleCounters(t.prepared.stats, 'dyn.user').total, 4);
    assert.deepEqual(statsOf(t.prepared.stats), statsOf(t.plain.stats));
  });

  test('an unknown domain counts domain_not_found on every call', () => {
    const t = twins(RULES);
    const r = req('nope', [one('f'), one('s')]);
    decideBoth(t, [r], 5, 10);
    assert.equal(t.prepared.stats.counterValue('ratelimit.service.rate_limit.nope.domain_not_found'), 10, 'two descriptors, five calls');
    assert.equal(t.prepared.service.currentRuleSet()?.hasStableMatches('nope'), false);
  });

  test('a dynamic domain (per-value statistics, share_threshold) gives the same answers and per-value counters', () => {
    const t = twins(DYNAMIC_RULES);
    assert.equal(t.prepared.service.currentRuleSet()?.hasStableMatches('dyn'), false);
    const requests = [
      req('dyn', [one('user', 'alice')]),
      req('dyn', [one('user', 'bob')], 2),
      req('dyn', [one('wild', 'foo1')]),
      req('dyn', [one('wild', 'foo2')]),
      req('dyn', [one('vm', 'x1'), one('plain'), one('user', 'alice')]),
    ];
    decideBoth(t, requests, 30, 200);
    for (const k of ['dyn.user_alice', 'dyn.user_bob', 'dyn.wild_foo*', 'dyn.vm_x1', 'dyn.plain']) {
      const c = ruleCounters(t.prepared.stats, k);
      assert.ok((c.total ?? 0) > 0, `${k} counted`);
      assert.deepEqual(c, ruleCounters(t.plain.stats, k), k);
    }
  });

  test('a descriptor with a limit override gives the same answers (and its algorithm follows the rule)', () => {
    const t = twins(RULES);
    const requests = [
      req('d', [d(e(['f', 'o']), { limit: { requestsPerUnit: 2, unit: Unit.SECOND } })]),
      req('d', [one('s'), d(e(['t', 'o']), { limit: { requestsPerUnit: 3, unit: Unit.MINUTE } })]),
      req('d', [d(e(['nothing', 'o']), { limit: { requestsPerUnit: 1, unit: Unit.SECOND } }), one('f')]),
      req('d', [d(e(['s', 'o']), { limit: { requestsPerUnit: 0, unit: Unit.HOUR } })]),
    ];
    const out = decideBoth(t, requests, 25, 150);
    assert.ok(out.some((r) => r.statuses[0]?.currentLimit?.requestsPerUnit === 2 && r.statuses[0].code === Code.OVER_LIMIT));
    assert.ok((ruleCounters(t.prepared.stats, 'd.f_o').total ?? 0) > 0);
  });

  test('a prepared request with an override is not kept across a rule swap either', () => {
    const t = twins('domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: minute, requests_per_unit: 5}}\n');
    const r = req('d', [one('k'), d(e(['k', 'o']), { limit: { requestsPerUnit: 4, unit: Unit.MINUTE } })]);
    const p = t.prepared.service.prepare(r);
    const both = (): DecidedResponse => {
      const a = settled(t.prepared.service.shouldRateLimitPrepared(p));
      assert.deepEqual(comparable(a), comparable(t.plain.service.shouldRateLimit(r)));
      return a;
    };
    both();
    t.load('domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: minute, requests_per_unit: 1, algorithm: token_bucket}}\n');
    const after = both();
    assert.equal(after.statuses[0]?.currentLimit?.requestsPerUnit, 1);
    assert.deepEqual(statsOf(t.prepared.stats), statsOf(t.plain.stats));
  });
  test('the kept matches are used where they are exact, and only there (so the tests above compare the kept path)', () => {
    const t = twins(`${RULES}---\n${DYNAMIC_RULES}`);
    const kept = (r: RateLimitRequest): boolean => {
      const p = t.prepared.service.prepare(r);
      settled(t.prepared.service.shouldRateLimitPrepared(p));
      return p.matched !== undefined;
    };
    assert.equal(kept(req('d', [one('f'), one('s'), one('t')])), true, 'stable domain');
    assert.equal(kept(req('dyn', [one('plain')])), false, 'dynamic domain');
    assert.equal(kept(req('nope', [one('f')])), false, 'unknown domain');
    assert.equal(kept(req('d', [one('f'), d(e(['f', 'o']), { limit: { requestsPerUnit: 2, unit: Unit.SECOND } })])), false, 'override');
  });
});

describe('errors are thrown as by shouldRateLimit (at once: the memory store answers synchronously)', () => {
  const SERVICE_ERROR = 'ratelimit.service.call.should_rate_limit.service_error';
  /** Runs `r` prepared and unprepared, returning what each threw. */
  function thrown(t: Twins, r: RateLimitRequest): [unknown, unknown] {
    const p = t.prepared.service.prepare(r);
    let a: unknown;
    let b: unknown;
    assert.throws(() => t.prepared.service.shouldRateLimitPrepared(p), (err: unknown) => ((a = err), true));
    assert.throws(() => t.plain.service.shouldRateLimit(r), (err: unknown) => ((b = err), true));
    return [a, b];
  }
  const cases: [string, string | undefined, RateLimitRequest, string, RegExp][] = [
    ['empty domain', RULES, req('', [one('f')]), 'invalid_request', /^rate limit domain must not be empty$/],
    ['empty descriptors', RULES, req('d', []), 'invalid_request', /^rate limit descriptor list must not be empty$/],
    ['no config', undefined, req('d', [one('f')]), 'no_config', /^no rate limit configuration loaded$/],
    ['override with unit UNKNOWN', RULES, req('d', [one('f'), d(e(['x', 'y']), { limit: { requestsPerUnit: 5, unit: 0 } })]), 'invalid_request', /^descriptor 1: rate limit override has invalid unit 0 /],
  ];
  for (const [name, yaml, r, code, message] of cases) {
    test(name, () => {
      const t = twins(yaml);
      for (let i = 1; i <= 3; i++) {
        const [a, b] = thrown(t, r);
        for (const err of [a, b]) {
          assert.ok(err instanceof RateLimitError);
          assert.equal(err.code, code);
          assert.match(err.message, message);
        }
        assert.equal((a as Error).constructor, (b as Error).constructor);
        assert.equal((a as Error).message, (b as Error).message);
        assert.equal(t.prepared.stats.counterValue(SERVICE_ERROR), i);
      }
      assert.deepEqual(statsOf(t.prepared.stats), statsOf(t.plain.stats));
    });
  }

  test('a request prepared before any rules decides once they are loaded', () => {
    const t = twins(undefined);
    const r = req('d', [one('f')]);
    const p = t.prepared.service.prepare(r);
    assert.throws(() => t.prepared.service.shouldRateLimitPrepared(p), { code: 'no_config' });
    t.load(RULES);
    assert.equal(settled(t.prepared.service.shouldRateLimitPrepared(p)).statuses[0]?.limitRemaining, 4);
  });
});
