// The simulated Envoy RLQS data plane against a scripted server (a recording transport and a
// fake clock): the watch on the first request, the reports per interval, each strategy enforced,
// TTL expiry with and without expired_assignment_behavior, abandon, purge, stream loss, and the
// protocol violations it records.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ALLOW_ALL,
  DENY_ALL,
  FakeClock,
  SimulatedEnvoy,
  simBucketKey,
  type SimBucketEntry,
  type SimBucketSettings,
  type SimResponse,
  type SimStrategy,
  type SimStreamCallbacks,
  type SimUsageReports,
} from '../../src/index.js';

const API: SimBucketEntry[] = [{ key: 'name', value: 'api' }];
const WEB: SimBucketEntry[] = [{ key: 'name', value: 'web' }];

function harness(settings: Partial<SimBucketSettings> = {}) {
  const clock = new FakeClock(0);
  const sent: SimUsageReports[] = [];
  let callbacks: SimStreamCallbacks | undefined;
  let closedByClient = 0;
  const envoy = new SimulatedEnvoy({
    domain: 'edge',
    clock,
    settings: () => ({ reportingIntervalMs: 1000, ...settings }),
    open: (cb) => {
      callbacks = cb;
      return { send: (m) => sent.push(structuredClone(m)), close: () => closedByClient++ };
    },
  });
  const push = (actions: SimResponse['bucketAction']): void => callbacks!.onResponse({ bucketAction: actions });
  const assign = (id: SimBucketEntry[], strategy: SimStrategy | undefined, ttlSeconds?: number): void =>
    push([{ bucketId: id, action: { kind: 'quota_assignment', assignmentTimeToLive: ttlSeconds, rateLimitStrategy: strategy } }]);
  const tick = (ms: number): void => {
    clock.advance(ms);
    envoy.advance();
  };
  const burst = (id: SimBucketEntry[], n: number): number => {
    let ok = 0;
    for (let i = 0; i < n; i++) if (envoy.request(id)) ok++;
    return ok;
  };
  return { clock, envoy, sent, push, assign, tick, burst, closeStream: () => callbacks!.onClosed('gone'), closedByClient: () => closedByClient };
}

const tokenBucket = (maxTokens: number, tokensPerFill: number | undefined, fillInterval: number | undefined): SimStrategy => ({
  kind: 'token_bucket',
  tokenBucket: { maxTokens, tokensPerFill, fillInterval },
});

describe('simulated Envoy: reports', () => {
  test('the first request is reported at once (the watch), then every interval with the counts and elapsed time', () => {
    const h = harness();
    assert.equal(h.envoy.request(API), true);
    assert.deepEqual(h.sent, [{ domain: 'edge', bucketQuotaUsages: [{ bucketId: API, timeElapsed: 0, numRequestsAllowed: 1, numRequestsDenied: 0 }] }]);
    h.burst(API, 4);
    h.tick(999);
    assert.equal(h.sent.length, 1);
    h.tick(1);
    assert.deepEqual(h.sent[1], { domain: 'edge', bucketQuotaUsages: [{ bucketId: API, timeElapsed: 1, numRequestsAllowed: 4, numRequestsDenied: 0 }] });
    h.tick(1000);
    assert.deepEqual(h.sent[2]!.bucketQuotaUsages[0]!.numRequestsAllowed, 0, 'an idle bucket still reports, with zero counts');
  });

  test('buckets due together go in one message; bucket id order does not split a bucket', () => {
    const h = harness();
    h.envoy.request(API);
    h.envoy.request(WEB);
    h.envoy.request([{ key: 'b', value: '2' }, { key: 'a', value: '1' }]);
    h.envoy.request([{ key: 'a', value: '1' }, { key: 'b', value: '2' }]);
    assert.equal(h.envoy.trackedBuckets, 3);
    h.tick(1000);
    assert.equal(h.sent.length, 4);
    assert.equal(h.sent[3]!.bucketQuotaUsages.length, 3);
  });
});

describe('simulated Envoy: enforcement', () => {
  test('no_assignment_behavior applies until the first assignment (allow all by default, or the fallback given)', () => {
    assert.equal(harness().burst(API, 50), 50);
    const h = harness({ noAssignment: DENY_ALL });
    assert.equal(h.burst(API, 5), 0);
    assert.deepEqual(h.sent[0]!.bucketQuotaUsages[0], { bucketId: API, timeElapsed: 0, numRequestsAllowed: 0, numRequestsDenied: 1 });
  });

  test('a token bucket starts full, refills continuously at tokens_per_fill / fill_interval, and is capped at max_tokens', () => {
    const h = harness();
    h.envoy.request(API);
    h.assign(API, tokenBucket(5, 2, 1));
    assert.equal(h.envoy.stateOf(API), 'active');
    assert.equal(h.burst(API, 10), 5);
    h.tick(500);
    assert.equal(h.burst(API, 10), 1);
    h.tick(10_000);
    assert.equal(h.burst(API, 10), 5);
  });

  test('requests_per_time_unit allows that many per unit; zero denies all; blanket rules', () => {
    const h = harness();
    h.envoy.request(API);
    h.assign(API, { kind: 'requests_per_time_unit', requestsPerTimeUnit: 60, timeUnit: 2 });
    assert.equal(h.burst(API, 100), 60);
    h.tick(1000);
    assert.equal(h.burst(API, 100), 1);
    h.assign(API, { kind: 'requests_per_time_unit', requestsPerTimeUnit: 0, timeUnit: 0 });
    assert.equal(h.burst(API, 5), 0);
    h.assign(API, ALLOW_ALL);
    assert.equal(h.burst(API, 500), 500);
    h.assign(API, DENY_ALL);
    assert.equal(h.burst(API, 5), 0);
    h.assign(API, undefined);
    assert.equal(h.burst(API, 5), 5, 'an assignment without a strategy allows all');
  });

  test('the same strategy only extends the TTL (bucket state kept); a different one replaces it and reports at once', () => {
    const h = harness();
    h.envoy.request(API);
    h.assign(API, tokenBucket(3, 1, 10), 5);
    const afterFirst = h.sent.length;
    assert.equal(afterFirst, 2, 'the first assignment makes the bucket report at once');
    assert.equal(h.burst(API, 10), 3);
    h.assign(API, tokenBucket(3, 1, 10), 5);
    assert.equal(h.burst(API, 10), 0, 'an extension keeps the emptied bucket');
    assert.equal(h.envoy.counters.extended, 1);
    assert.equal(h.sent.length, afterFirst);
    h.tick(4000);
    h.assign(API, tokenBucket(4, 1, 10), 5);
    assert.equal(h.burst(API, 10), 4, 'a replacement starts full');
    assert.equal(h.sent.length, afterFirst + 2, 'one interval report plus the report on replacement');
    assert.equal(h.envoy.counters.replaced, 1);
  });
});

describe('simulated Envoy: expiry, abandon, purge, stream loss', () => {
  test('without expired_assignment_behavior the bucket is abandoned when its TTL runs out; a zero TTL expires at once', () => {
    const h = harness();
    h.envoy.request(API);
    h.assign(API, DENY_ALL, 2);
    h.tick(1999);
    assert.equal(h.envoy.stateOf(API), 'active');
    h.tick(1);
    assert.equal(h.envoy.stateOf(API), undefined);
    assert.equal(h.envoy.counters.abandonedOnExpiry, 1);
    // The next request starts over with a watch.
    const before = h.sent.length;
    assert.equal(h.envoy.request(API), true);
    assert.equal(h.sent.length, before + 1);
    h.assign(API, DENY_ALL, 0);
    assert.equal(h.envoy.stateOf(API), undefined);
  });

  test('expired_assignment_behavior: a fallback for its timeout, then abandon; reuse_last keeps the bucket', () => {
    const h = harness({ expiredAssignment: { timeoutMs: 3000, behavior: { fallback: DENY_ALL } } });
    h.envoy.request(API);
    h.assign(API, ALLOW_ALL, 1);
    h.tick(1000);
    assert.equal(h.envoy.stateOf(API), 'expired');
    assert.equal(h.burst(API, 3), 0);
    h.assign(API, ALLOW_ALL, 1);
    assert.equal(h.envoy.stateOf(API), 'active', 'a new assignment ends the expired state');
    h.tick(1000);
    h.tick(2999);
    assert.equal(h.envoy.stateOf(API), 'expired');
    h.tick(1);
    assert.equal(h.envoy.stateOf(API), undefined);

    const r = harness({ expiredAssignment: { timeoutMs: 5000, behavior: 'reuse_last' } });
    r.envoy.request(API);
    r.assign(API, tokenBucket(2, 1, 100), 1);
    assert.equal(r.burst(API, 1), 1);
    r.tick(1000);
    assert.equal(r.envoy.stateOf(API), 'expired');
    assert.equal(r.burst(API, 5), 1, 'the last token bucket goes on, with its state');
  });

  test('an abandon action erases the bucket; a bucket without assignment is purged after its wait', () => {
    const h = harness({ initialAssignmentTimeoutMs: 5000 });
    h.envoy.request(API);
    h.envoy.request(WEB);
    h.push([{ bucketId: API, action: { kind: 'abandon' } }]);
    assert.equal(h.envoy.stateOf(API), undefined);
    assert.equal(h.envoy.counters.abandonedByServer, 1);
    h.tick(5000);
    assert.equal(h.envoy.stateOf(WEB), undefined);
    assert.equal(h.envoy.counters.purged, 1);
  });

  test('a broken stream is reopened at the next report; usage of the gap is not resent', () => {
    let opened = 0;
    const clock = new FakeClock(0);
    const sent: SimUsageReports[][] = [];
    const envoy = new SimulatedEnvoy({
      domain: 'edge',
      clock,
      settings: () => ({ reportingIntervalMs: 1000 }),
      open: (cb) => {
        const mine: SimUsageReports[] = [];
        sent.push(mine);
        opened++;
        if (opened === 1) queueMicrotask(() => cb.onClosed('reset'));
        return { send: (m) => mine.push(m), close: () => undefined };
      },
    });
    envoy.request(API);
    return Promise.resolve().then(() => {
      assert.equal(envoy.connected, false);
      clock.advance(1000);
      envoy.advance();
      assert.equal(opened, 2);
      assert.equal(envoy.connected, true);
      assert.equal(sent[1]![0]!.bucketQuotaUsages[0]!.timeElapsed, 1);
    });
  });

  test('protocol violations are recorded, not applied', () => {
    const h = harness();
    h.envoy.request(API);
    h.push([{ bucketId: undefined, action: { kind: 'abandon' } }]);
    h.push([{ bucketId: [{ key: 'name', value: 'never' }], action: { kind: 'abandon' } }]);
    h.assign(API, tokenBucket(0, 1, 1));
    h.assign(API, tokenBucket(1, 1, undefined));
    h.assign(API, { kind: 'blanket_rule', blanketRule: 7 });
    h.push([{ bucketId: API, action: undefined }]);
    assert.deepEqual(h.envoy.violations, [
      'bucket action without bucket_id',
      `action for bucket ${simBucketKey([{ key: 'name', value: 'never' }])} that was never reported`,
      `${simBucketKey(API)}: token_bucket.max_tokens must be above 0`,
      `${simBucketKey(API)}: token_bucket.fill_interval must be set and above 0`,
      `${simBucketKey(API)}: blanket_rule 7 is not ALLOW_ALL or DENY_ALL`,
      `bucket action for ${simBucketKey(API)} without an action`,
    ]);
    assert.equal(h.envoy.stateOf(API), 'no_assignment');
    h.envoy.close();
    assert.equal(h.closedByClient(), 1);
  });
});
