// The sliding-window and token-bucket arithmetic (limiter/algorithms.ts) on exact integers, and the
// keys and ops the limiter sends for them (the rest is the contract in services/ratelimit/test/support/algorithm-contract.ts).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Code, SATURATED_COUNT, Unit, bucketOutcome, bucketWouldRefuse, mulDivFloor, slidingAdmitsAgainAtMs, slidingEstimate, type Limit } from '@rls/engine';
import { harness } from '../support/limiter-support.js';

const bucketLimit = (rpu: number, windowSeconds: number, burst: number): Limit => {
  const emissionUs = Math.max(1, Math.round((windowSeconds * 1e6) / rpu));
  return {
    requestsPerUnit: rpu,
    unit: Unit.SECOND,
    windowSeconds,
    unitMultiplier: 1,
    keyTail: 'tb',
    policyParams: `;q=${burst};w=${Math.ceil((burst * emissionUs) / 1e6)}`,
    policyName: '',
    name: '',
    unlimited: false,
    shadowMode: false,
    quotaMode: false,
    replaces: [],
    metadata: undefined,
    fullKey: 'd.k',
    isOverride: false,
    currentLimit: { requestsPerUnit: rpu, unit: Unit.SECOND, name: '' },
    algorithm: 'token_bucket',
    burst,
    emissionUs,
    toleranceUs: burst * emissionUs,
  };
};

describe('sliding-window arithmetic', () => {
  test('mulDivFloor is exact past 2^53 and where a double quotient would round up', () => {
    assert.equal(mulDivFloor(11, 45_000, 60_000), 8);
    assert.equal(mulDivFloor(2 ** 52, 3, 4), 3 * 2 ** 50);
    const big = 9_007_199_254_740_000;
    assert.equal(mulDivFloor(big, 31_536_000_000 - 1, 31_536_000_000), Number((BigInt(big) * 31_535_999_999n) / 31_536_000_000n));
    assert.equal(mulDivFloor(0, 5, 7), 0);
    for (let a = 1; a < 200; a += 7) for (let b = 0; b < 3000; b += 113) assert.equal(mulDivFloor(a, b, 997), Math.floor((a * b) / 997));
  });

  test('the estimate weighs the previous window linearly and saturates', () => {
    assert.equal(slidingEstimate(11, 1, 0, 60_000), 12);
    assert.equal(slidingEstimate(11, 1, 15_000, 60_000), 9);
    assert.equal(slidingEstimate(11, 1, 59_999, 60_000), 1);
    assert.equal(slidingEstimate(SATURATED_COUNT, 0, 59_999, 60_000), SATURATED_COUNT);
    assert.equal(slidingEstimate(0, SATURATED_COUNT, 0, 60_000), SATURATED_COUNT);
    assert.equal(slidingEstimate(SATURATED_COUNT - 1, SATURATED_COUNT - 1, 0, 1000), SATURATED_COUNT);
  });

  test('admits-again instant: first ms at which one more hit fits, else the window end', () => {
    const start = 1_000_000;
    // limit 10, current 1, previous 11: floor(11 × (60000 − e)/60000) ≤ 8 from e = 10910
    assert.equal(slidingAdmitsAgainAtMs(11, 1, 10, start, 60_000), start + 10_910);
    assert.ok(slidingEstimate(11, 2, 10_909, 60_000) > 10);
    assert.equal(slidingEstimate(11, 2, 10_910, 60_000), 10);
    assert.equal(slidingAdmitsAgainAtMs(5, 11, 10, start, 60_000), start + 60_000, 'current alone over: window end');
    assert.equal(slidingAdmitsAgainAtMs(5, 10, 10, start, 60_000), start + 60_000, 'current at the limit: no room for one more');
    assert.equal(slidingAdmitsAgainAtMs(SATURATED_COUNT, 0, 10, start, 60_000), start + 60_000);
    assert.equal(slidingAdmitsAgainAtMs(3, 2, 10, start, 60_000), start, 'already admits');
  });
});

describe('token-bucket arithmetic', () => {
  const L = bucketLimit(360, 3600, 3); // E = 10 s, tau = 30 s
  const now = 1_800_000_000_000_000;
  test('outcomes: remaining whole tokens, time until full, time until one token', () => {
    assert.deepEqual(bucketOutcome(L, now + 10e6, true, now), { admitted: true, remaining: 2, durationUntilReset: 10, refuseOneUntilMs: 0 });
    assert.deepEqual(bucketOutcome(L, now + 25e6, true, now), { admitted: true, remaining: 0, durationUntilReset: 25, refuseOneUntilMs: 0 });
    assert.deepEqual(bucketOutcome(L, now, true, now), { admitted: true, remaining: 3, durationUntilReset: 0, refuseOneUntilMs: 0 });
    assert.deepEqual(bucketOutcome(L, now + 30e6, false, now), { admitted: false, remaining: 0, durationUntilReset: 10, refuseOneUntilMs: now / 1000 + 10_000 });
    assert.deepEqual(bucketOutcome(L, now + 20e6, false, now), { admitted: false, remaining: 0, durationUntilReset: 0, refuseOneUntilMs: 0 });
    assert.equal(bucketOutcome(L, SATURATED_COUNT, true, now).admitted, false, 'a saturated TAT is refused');
  });
  test('would-refuse check (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT) matches the store rule', () => {
    assert.equal(bucketWouldRefuse(L, 0, 3, now), false);
    assert.equal(bucketWouldRefuse(L, 0, 4, now), true);
    assert.equal(bucketWouldRefuse(L, now + 20e6, 1, now), false);
    assert.equal(bucketWouldRefuse(L, now + 21e6, 1, now), true);
    assert.equal(bucketWouldRefuse(L, now - 50e6, 3, now), false, 'a TAT in the past is a full bucket');
  });
});

describe('what the limiter sends', () => {
  const RULES = `domain: d
descriptors:
  - {key: f, rate_limit: {unit: minute, requests_per_unit: 5}}
  - {key: s, rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}}
  - {key: b, rate_limit: {unit: second, requests_per_unit: 4, algorithm: token_bucket, burst: 2}}
  - {key: z, rate_limit: {unit: second, requests_per_unit: 4, algorithm: token_bucket}}
`;
  test('keys of the three algorithms for the same entries never collide; TTLs and bucket parameters', async () => {
    const h = harness(RULES, { cacheKeyPrefix: 'p:' }, 1_800_000_030);
    const send = (key: string, hitsAddend = 0) => h.service.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key, value: 'x' }] }], hitsAddend });
    await send('f');
    assert.deepEqual(h.store.increments.at(-1), [{ key: 'p:d_f_x_1800000000', addend: 1, expireSeconds: 60, windowSeconds: 60, limit: 5 }]);
    await send('s');
    await send('b', 9);
    assert.deepEqual(h.store.executes, [
      [{ key: 'p:d_s_x_1800000000_sw', addend: 1, expireSeconds: 120, windowSeconds: 60, previousKey: 'p:d_s_x_1799999940_sw', limit: 5 }],
      // addend 9 > burst + 1 is sent as 3 (refused either way)
      [{ key: 'p:d_b_x_tb', addend: 3, expireSeconds: 1, windowSeconds: 1, bucket: { nowUs: 1_800_000_030_000_000, emissionUs: 250_000, toleranceUs: 500_000 } }],
    ]);
  });

  test('an override of 0 on a token-bucket rule counts in a fixed window (nothing to refill at)', async () => {
    const h = harness(RULES, {}, 1_800_000_030);
    const r = await h.service.shouldRateLimit({ domain: 'd', descriptors: [{ entries: [{ key: 'z', value: 'x' }], limit: { requestsPerUnit: 0, unit: Unit.SECOND } }], hitsAddend: 0 });
    assert.equal(r.statuses[0]!.code, Code.OVER_LIMIT);
    assert.deepEqual(h.store.increments.at(-1)?.map((o) => o.key), ['d_z_x_1800000030']);
  });
});
