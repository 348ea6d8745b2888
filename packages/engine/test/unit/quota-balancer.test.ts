// The RLQS balancer without a transport: streams, reports and ticks on a fake clock, one or two
// replicas sharing a memory QuotaShareStore. Checks the assignments pushed (watch → assignment,
// max-min division, hysteresis, TTL refresh), abandon, bounds, store failure fallbacks, rule
// reloads and statistics, and, as a property, that two replicas under shifting demand never
// grant more than the quota and converge to the max-min division.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FakeClock, fcOptions } from '@rls/testkit';
import {
  DEFAULT_BALANCER_TUNING,
  MemoryShareStore,
  QuotaBalancer,
  RateLimitError,
  StatsStore,
  StoreError,
  divideFairly,
  loadQuotaRules,
  quotaShareKey,
  type BalancerStream,
  type QuotaBalancerOptions,
  type QuotaRuleSet,
  type QuotaShareStore,
} from '@rls/engine';
import { bucketKey, type BucketActionMsg, type RateLimitQuotaResponseMsg, type RateLimitStrategyMsg } from '@rls/rls-proto';

const RULES = `domain: edge
quota_buckets:
  - bucket_id: { name: api }
    quota: { unit: second, requests_per_unit: 100 }
  - bucket_id: { name: closed }
    quota: { strategy: deny_all, on_store_failure: deny_all }
  - bucket_id: { name: open }
    quota: { unit: second, requests_per_unit: 10, on_store_failure: allow_all }
default_quota: { strategy: allow_all }
`;
const API = [{ key: 'name', value: 'api' }];

function rules(text = RULES): QuotaRuleSet {
  return loadQuotaRules([{ name: 'edge.yaml', content: text }], { mergeDomainConfig: false });
}

interface Replica {
  balancer: QuotaBalancer;
  stats: StatsStore;
  open(): { stream: BalancerStream; got: BucketActionMsg[][] };
}

function replica(id: string, clock: FakeClock, store: QuotaShareStore, over: Partial<QuotaBalancerOptions> = {}, ruleSet: () => QuotaRuleSet = () => rules()): Replica {
  const stats = new StatsStore();
  const cached = ruleSet();
  const balancer = new QuotaBalancer({
    ...DEFAULT_BALANCER_TUNING,
    replicaId: id,
    clock,
    store,
    rules: over.rules ?? (() => cached),
    stats,
    keyPrefix: 'p:',
    idleAbandonMs: 0,
    ...over,
  });
  return {
    balancer,
    stats,
    open() {
      const got: BucketActionMsg[][] = [];
      const stream = balancer.openStream((m: RateLimitQuotaResponseMsg) => got.push(m.bucketAction));
      return { stream, got };
    },
  };
}

/** requests per second a pushed strategy admits. */
function rateOf(s: RateLimitStrategyMsg | undefined): number {
  if (s === undefined) return Infinity;
  if (s.kind === 'token_bucket') return (s.tokenBucket.tokensPerFill ?? 1) / s.tokenBucket.fillInterval!;
  if (s.kind === 'blanket_rule') return s.blanketRule === 0 ? Infinity : 0;
  return NaN;
}
const lastStrategy = (got: BucketActionMsg[][]): RateLimitStrategyMsg | undefined => {
  for (let i = got.length - 1; i >= 0; i--) {
    for (const a of got[i]!) if (a.action?.kind === 'quota_assignment') return a.action.rateLimitStrategy;
  }
  return undefined;
};
const usage = (rps: number, elapsed = 1) => ({ bucketId: API, timeElapsed: elapsed, numRequestsAllowed: Math.round(rps * elapsed), numRequestsDenied: 0 });

describe('QuotaBalancer: one replica', () => {
  test('a watch gets an assignment at the next tick: the whole quota for a lone instance, with the TTL', async () => {
    const clock = new FakeClock();
    const r = replica('a', clock, new MemoryShareStore());
    const { stream, got } = r.open();
    assert.equal(r.balancer.report(stream, { domain: 'edge', bucketQuotaUsages: [{ ...usage(1), timeElapsed: 0 }] }), 1);
    await r.balancer.tick();
    assert.equal(got.length, 1);
    const action = got[0]![0]!;
    assert.deepEqual(action.bucketId, API);
    assert.deepEqual(action.action, {
      kind: 'quota_assignment',
      assignmentTimeToLive: 10,
      rateLimitStrategy: { kind: 'token_bucket', tokenBucket: { maxTokens: 100, tokensPerFill: 100, fillInterval: 1 } },
    });
  });

  test('two instances with demands of 10/s and 300/s share 100/s as 10 and 90; the quiet one’s rise is taken at once', async () => {
    const clock = new FakeClock();
    const r = replica('a', clock, new MemoryShareStore());
    const quiet = r.open();
    const busy = r.open();
    r.balancer.report(quiet.stream, { domain: 'edge', bucketQuotaUsages: [usage(10)] });
    r.balancer.report(busy.stream, { domain: 'edge', bucketQuotaUsages: [usage(300)] });
    await r.balancer.tick();
    assert.equal(rateOf(lastStrategy(quiet.got)), 10);
    assert.equal(rateOf(lastStrategy(busy.got)), 90);
    clock.advance(1000);
    r.balancer.report(quiet.stream, { domain: 'edge', bucketQuotaUsages: [usage(300)] });
    r.balancer.report(busy.stream, { domain: 'edge', bucketQuotaUsages: [usage(300)] });
    await r.balancer.tick();
    // The busy one's decrease is granted at once; the quiet one grows into it after the hold.
    assert.equal(rateOf(lastStrategy(busy.got)), 50);
    assert.equal(rateOf(lastStrategy(quiet.got)), 10);
    clock.advance(1000);
    await r.balancer.tick();
    assert.equal(rateOf(lastStrategy(quiet.got)), 50);
  });

  test('a small change keeps the pushed assignment (hysteresis); the same strategy is re-pushed when half its TTL is gone', async () => {
    const clock = new FakeClock();
    const r = replica('a', clock, new MemoryShareStore(), { holdMs: 0 });
    const a = r.open();
    const b = r.open();
    r.balancer.report(a.stream, { domain: 'edge', bucketQuotaUsages: [usage(60)] });
    r.balancer.report(b.stream, { domain: 'edge', bucketQuotaUsages: [usage(60)] });
    await r.balancer.tick();
    const pushes = a.got.length;
    clock.advance(1000);
    r.balancer.report(a.stream, { domain: 'edge', bucketQuotaUsages: [usage(60)] });
    r.balancer.report(b.stream, { domain: 'edge', bucketQuotaUsages: [usage(58)] });
    await r.balancer.tick();
    assert.equal(a.got.length, pushes, 'a 51/49 split instead of 50/50 is not worth a new token bucket');
    clock.advance(4000);
    await r.balancer.tick();
    assert.equal(a.got.length, pushes + 1, 'refreshed at half the 10 s TTL');
    assert.deepEqual(a.got.at(-1)![0]!.action, a.got[0]![0]!.action);
  });

  test('blanket rules need no store: deny_all and the default allow_all are pushed as such', async () => {
    const clock = new FakeClock();
    const r = replica('a', clock, new MemoryShareStore());
    const s = r.open();
    r.balancer.report(s.stream, {
      domain: 'edge',
      bucketQuotaUsages: [
        { ...usage(1), bucketId: [{ key: 'name', value: 'closed' }] },
        { ...usage(1), bucketId: [{ key: 'name', value: 'unmatched' }] },
      ],
    });
    await r.balancer.tick();
    assert.deepEqual(
      s.got[0]!.map((a) => [a.bucketId![0]!.value, a.action?.kind === 'quota_assignment' ? a.action.rateLimitStrategy : undefined]),
      [
        ['closed', { kind: 'blanket_rule', blanketRule: 1 }],
        ['unmatched', { kind: 'blanket_rule', blanketRule: 0 }],
      ],
    );
  });

  test('an instance that stops reporting is abandoned and its grant released; so is one idle for idleAbandonMs', async () => {
    const clock = new FakeClock();
    const store = new MemoryShareStore();
    const r = replica('a', clock, store, { abandonAfterMs: 5000, idleAbandonMs: 20_000 });
    const silent = r.open();
    const idle = r.open();
    r.balancer.report(silent.stream, { domain: 'edge', bucketQuotaUsages: [usage(50)] });
    r.balancer.report(idle.stream, { domain: 'edge', bucketQuotaUsages: [usage(50)] });
    await r.balancer.tick();
    for (let t = 1; t <= 5; t++) {
      clock.advance(1000);
      r.balancer.report(idle.stream, { domain: 'edge', bucketQuotaUsages: [usage(0)] });
      await r.balancer.tick();
    }
    assert.deepEqual(silent.got.at(-1), [{ bucketId: API, action: { kind: 'abandon' } }]);
    const key = quotaShareKey('p:', 'edge', bucketKey(API));
    const [live] = await store.exchange([{ bucket: key, updates: [] }], { nowMs: clock.now(), entryTtlMs: 60_000 });
    assert.deepEqual(
      live!.map((e) => e.instance),
      [idle.stream.instance],
    );
    for (let t = 6; t <= 20; t++) {
      clock.advance(1000);
      r.balancer.report(idle.stream, { domain: 'edge', bucketQuotaUsages: [usage(0)] });
      await r.balancer.tick();
    }
    assert.deepEqual(idle.got.at(-1), [{ bucketId: API, action: { kind: 'abandon' } }]);
    assert.equal(r.balancer.bucketCount, 0);
    assert.equal(r.stats.counterValue('ratelimit.rlqs.edge.name=api.abandoned'), 2);
  });

  test('bounds: streams per process, buckets per stream and per domain; bad usages are skipped and counted', () => {
    const clock = new FakeClock();
    const r = replica('a', clock, new MemoryShareStore(), { maxStreams: 2, maxBucketsPerStream: 2, maxBucketsPerDomain: 3 });
    const a = r.open();
    const b = r.open();
    assert.throws(() => r.open(), (e: unknown) => e instanceof RateLimitError && e.code === 'resource_exhausted' && e.message === 'more than 2 RLQS streams on this process');
    const u = (v: string) => ({ ...usage(1), bucketId: [{ key: 'k', value: v }] });
    r.balancer.report(a.stream, { domain: 'edge', bucketQuotaUsages: [u('1'), u('2')] });
    assert.throws(() => r.balancer.report(a.stream, { domain: 'edge', bucketQuotaUsages: [u('3')] }), /more than 2 buckets on one RLQS stream/);
    r.balancer.report(b.stream, { domain: 'edge', bucketQuotaUsages: [u('1'), u('3')] });
    assert.throws(() => r.balancer.report(b.stream, { domain: 'edge', bucketQuotaUsages: [u('4')] }), /more than 3 RLQS buckets in domain 'edge' on this process/);
    r.balancer.report(b.stream, {
      domain: 'edge',
      bucketQuotaUsages: [
        { ...usage(1), bucketId: undefined },
        { ...usage(1), bucketId: [] },
        { ...usage(1), bucketId: [{ key: '', value: 'x' }] },
      ],
    });
    assert.equal(r.stats.counterValue('ratelimit.rlqs.invalid_usage'), 3);
    assert.equal(r.stats.counterValue('ratelimit.rlqs.streams_refused'), 1);
    assert.equal(r.stats.counterValue('ratelimit.rlqs.buckets_refused'), 2);
    // Closing a stream frees its slots.
    r.balancer.closeStream(a.stream);
    r.open();
  });

  test('the domain: required on the first report, fixed for the stream', () => {
    const r = replica('a', new FakeClock(), new MemoryShareStore());
    const s = r.open();
    assert.throws(() => r.balancer.report(s.stream, { domain: '', bucketQuotaUsages: [] }), (e: unknown) => e instanceof RateLimitError && e.code === 'invalid_request');
    r.balancer.report(s.stream, { domain: 'edge', bucketQuotaUsages: [] });
    r.balancer.report(s.stream, { domain: '', bucketQuotaUsages: [] });
    assert.throws(() => r.balancer.report(s.stream, { domain: 'other', bucketQuotaUsages: [] }), /changed domain from 'edge' to 'other'/);
  });

  test('store failure: keep_last re-pushes the last strategy, allow_all / deny_all push their blanket rule, and it is counted', async () => {
    const clock = new FakeClock();
    const inner = new MemoryShareStore();
    let down = false;
    const flaky: QuotaShareStore = {
      kind: 'flaky',
      exchange: (b, t) => (down ? Promise.reject(new StoreError('redis unavailable')) : inner.exchange(b, t)),
      reserve: (b, t) => (down ? Promise.reject(new StoreError('redis unavailable')) : inner.reserve(b, t)),
      release: (b, i) => inner.release(b, i),
      close: () => inner.close(),
    };
    const r = replica('a', clock, flaky);
    const s = r.open();
    r.balancer.report(s.stream, { domain: 'edge', bucketQuotaUsages: [usage(20), { ...usage(5), bucketId: [{ key: 'name', value: 'open' }] }] });
    await r.balancer.tick();
    const before = lastStrategy(s.got);
    down = true;
    clock.advance(6000);
    await r.balancer.tick();
    const actions = s.got.at(-1)!;
    assert.deepEqual(actions.find((a) => a.bucketId![0]!.value === 'api')!.action, { kind: 'quota_assignment', assignmentTimeToLive: 10, rateLimitStrategy: before });
    assert.deepEqual(actions.find((a) => a.bucketId![0]!.value === 'open')!.action, { kind: 'quota_assignment', assignmentTimeToLive: 10, rateLimitStrategy: { kind: 'blanket_rule', blanketRule: 0 } });
    assert.equal(r.stats.counterValue('ratelimit.rlqs.store_error'), 1);
    assert.equal(r.stats.counterValue('ratelimit.rlqs.edge.name=api.store_fallback'), 1);
  });

  test('a rule reload applies to known buckets at the next tick; statistics per rule count what was reported', async () => {
    const clock = new FakeClock();
    let current = rules();
    const r = replica('a', clock, new MemoryShareStore(), { rules: () => current });
    const s = r.open();
    r.balancer.report(s.stream, { domain: 'edge', bucketQuotaUsages: [{ ...usage(30), numRequestsDenied: 7 }] });
    await r.balancer.tick();
    assert.equal(rateOf(lastStrategy(s.got)), 100);
    current = rules(RULES.replace('requests_per_unit: 100', 'requests_per_unit: 40'));
    clock.advance(1000);
    await r.balancer.tick();
    assert.equal(rateOf(lastStrategy(s.got)), 40);
    assert.equal(r.stats.counterValue('ratelimit.rlqs.edge.name=api.allowed'), 30);
    assert.equal(r.stats.counterValue('ratelimit.rlqs.edge.name=api.denied'), 7);
    assert.equal(r.stats.counterValue('ratelimit.rlqs.edge.name=api.assignments'), 2);
  });
});

describe('QuotaBalancer: two replicas on one store', () => {
  test('property: under shifting demand the grants never pass the quota, and within three ticks of each replica after a change each instance holds its max-min share', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1000 }),
        fc.array(fc.tuple(fc.constantFrom(0, 1), fc.integer({ min: 0, max: 1500 }), fc.integer({ min: 0, max: 1500 })), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 999 }),
        async (quota, instances, offset) => {
          const clock = new FakeClock();
          const store = new MemoryShareStore();
          const text = RULES.replace('requests_per_unit: 100', `requests_per_unit: ${quota}`);
          const set = rules(text);
          // demandDecay 1 and no hysteresis: the mechanism itself, without smoothing.
          const tuning = { rules: () => set, demandDecay: 1, hysteresis: 0, holdMs: 500 };
          const reps = [replica('r0', clock, store, tuning), replica('r1', clock, store, tuning)];
          const streams = instances.map(([rep]) => reps[rep]!.open());
          const cap = quota * 1_000_000;
          const key = quotaShareKey('p:', 'edge', bucketKey(API));
          const checkSum = async (): Promise<{ instance: string; demand: number; grant: number }[]> => {
            const [live] = await store.exchange([{ bucket: key, updates: [] }], { nowMs: clock.now(), entryTtlMs: 60_000 });
            const total = live!.reduce((n, e) => n + e.grant, 0);
            assert.ok(total <= cap, `granted ${total} > ${cap}`);
            return live!;
          };
          for (const phase of [1, 2] as const) {
            for (let t = 0; t < 3; t++) {
              // Replica 0 ticks on the second, replica 1 `offset` ms later.
              clock.advance(1000 - offset);
              instances.forEach(([rep, d1, d2], i) => reps[rep]!.balancer.report(streams[i]!.stream, { domain: 'edge', bucketQuotaUsages: [usage(phase === 1 ? d1 : d2)] }));
              await reps[0]!.balancer.tick();
              await checkSum();
              clock.advance(offset);
              await reps[1]!.balancer.tick();
              await checkSum();
            }
            const live = await checkSum();
            const demands = live.map((e) => e.demand);
            const expected = divideFairly(cap, demands).share;
            live.forEach((e, i) => assert.equal(e.grant, expected[i], `phase ${phase}: ${e.instance} holds ${e.grant}, max-min says ${expected[i]}`));
          }
        },
      ),
      fcOptions(150),
    );
  });
});
