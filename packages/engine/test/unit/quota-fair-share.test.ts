// The fair allocator (fair-share.ts) and the share → strategy conversion (quota-assignment.ts):
// property tests that the shares never sum past the quota, that the division is max-min fair
// (checked against brute force on small cases), that more capacity never takes a share away,
// and that the strategies pushed for one bucket never admit more than its quota per period.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fcOptions } from '@rls/testkit';
import { demandUnits, divideFairly, floorMulDiv, MICROS, quotaCapacity, strategyForShare, type QuotaSpec } from '@rls/engine';
import type { RateLimitStrategyMsg } from '@rls/rls-proto';

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const demandsArb = fc.array(fc.nat({ max: 1_000_000 }), { maxLength: 12 });

describe('divideFairly: properties', () => {
  test('shares sum to at most the capacity; fair sums to min(capacity, Σ demand); fair ≤ demand ≤ …; share ≥ fair', () => {
    fc.assert(
      fc.property(fc.nat({ max: 3_000_000 }), demandsArb, (cap, demands) => {
        const { fair, share } = divideFairly(cap, demands);
        assert.ok(sum(share) <= cap, `Σ share ${sum(share)} > ${cap}`);
        assert.equal(sum(fair), Math.min(cap, sum(demands)));
        fair.forEach((f, i) => {
          assert.ok(Number.isInteger(f) && f >= 0 && f <= demands[i]!);
          assert.ok(share[i]! >= f);
        });
        // Spare is split equally (within one unit) only when every demand is met.
        if (sum(demands) <= cap && demands.length > 0) {
          const extras = share.map((s, i) => s - fair[i]!);
          assert.ok(Math.max(...extras) - Math.min(...extras) <= 1);
          assert.equal(sum(share), cap);
        } else {
          assert.deepEqual(share, fair);
        }
      }),
      fcOptions(2000),
    );
  });

  test('max-min optimal: an instance whose demand is unmet gets no less than any other (up to the one-unit remainder)', () => {
    fc.assert(
      fc.property(fc.nat({ max: 3_000_000 }), demandsArb, (cap, demands) => {
        const { fair } = divideFairly(cap, demands);
        fair.forEach((fi, i) => {
          if (fi < demands[i]!) for (const fj of fair) assert.ok(fj <= fi + 1, `unmet ${i} has ${fi}, another has ${fj}`);
        });
      }),
      fcOptions(2000),
    );
  });

  test('matches brute force on small cases: the lexicographically largest sorted allocation', () => {
    // Every integer allocation x ≤ demand with Σ x = min(cap, Σ d); max-min fairness picks the one
    // whose ascending sort is lexicographically largest. Compare sorted vectors (remainders may land
    // on either of two equal instances).
    const best = (cap: number, d: number[]): number[] => {
      const total = Math.min(cap, sum(d));
      let bestSorted: number[] | undefined;
      const x = new Array<number>(d.length).fill(0);
      const walk = (i: number, left: number): void => {
        if (i === d.length) {
          if (left !== 0) return;
          const s = [...x].sort((a, b) => a - b);
          if (bestSorted === undefined || s.some((v, j) => v !== bestSorted![j]) && lexGreater(s, bestSorted)) bestSorted = s;
          return;
        }
        for (let v = 0; v <= Math.min(d[i]!, left); v++) {
          x[i] = v;
          walk(i + 1, left - v);
        }
      };
      walk(0, total);
      return bestSorted ?? [];
    };
    const lexGreater = (a: number[], b: number[]): boolean => {
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! > b[i]!;
      return false;
    };
    fc.assert(
      fc.property(fc.nat({ max: 14 }), fc.array(fc.nat({ max: 8 }), { minLength: 1, maxLength: 4 }), (cap, demands) => {
        const ours = [...divideFairly(cap, demands).fair].sort((a, b) => a - b);
        assert.deepEqual(ours, best(cap, demands));
      }),
      fcOptions(600),
    );
  });

  test('more capacity never lowers anyone’s fair share; the same inputs always give the same shares', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2_000_000 }), fc.nat({ max: 500_000 }), demandsArb, (cap, more, demands) => {
        const a = divideFairly(cap, demands).fair;
        const b = divideFairly(cap + more, demands).fair;
        // Remainder units may move between equal instances: compare with one unit of slack.
        a.forEach((v, i) => assert.ok(b[i]! >= v - 1, `instance ${i}: ${v} → ${b[i]}`));
        assert.deepEqual(divideFairly(cap, demands), divideFairly(cap, [...demands]));
      }),
      fcOptions(1500),
    );
  });

  test('examples: a quiet instance leaves its part to the busy ones', () => {
    assert.deepEqual(divideFairly(100, [10, 500, 500]).fair, [10, 45, 45]);
    assert.deepEqual(divideFairly(100, [10, 20, 30]), { fair: [10, 20, 30], share: [24, 33, 43] });
    assert.deepEqual(divideFairly(100, [50, 50, 50]).fair, [34, 33, 33]);
    assert.deepEqual(divideFairly(0, [5]).share, [0]);
    assert.deepEqual(divideFairly(7, []), { fair: [], share: [] });
  });
});

// ---- share -> strategy ------------------------------------------------------------------------

const tokenBucket = (rpu: number, unit = 1, mult = 1, burst = rpu): QuotaSpec => ({
  strategy: 'token_bucket',
  unit: unit as QuotaSpec['unit'],
  requestsPerUnit: rpu,
  unitMultiplier: mult,
  periodSeconds: [0, 1, 60, 3600, 86400, 2592000, 31536000, 604800][unit]! * mult,
  burst,
  onStoreFailure: 'keep_last',
});
const rptu = (rpu: number, unit = 1, mult = 1): QuotaSpec => ({ ...tokenBucket(rpu, unit, mult), strategy: 'requests_per_time_unit', burst: 0 });

/** Requests per second a strategy admits in the long run (blanket allow: Infinity). */
function rateOf(s: RateLimitStrategyMsg): number {
  switch (s.kind) {
    case 'blanket_rule':
      return s.blanketRule === 0 ? Infinity : 0;
    case 'token_bucket':
      return (s.tokenBucket.tokensPerFill ?? 1) / s.tokenBucket.fillInterval!;
    case 'requests_per_time_unit':
      return s.requestsPerTimeUnit / [0, 1, 60, 3600, 86400, 2592000, 31536000][s.timeUnit]!;
    case 'none':
      return Infinity;
  }
}

describe('strategyForShare', () => {
  test('examples: token buckets in whole seconds, stretched for resolution; below one per period, one token per ⌈period / share⌉', () => {
    const q = tokenBucket(100);
    assert.deepEqual(strategyForShare(q, 33 * MICROS), { kind: 'token_bucket', tokenBucket: { maxTokens: 33, tokensPerFill: 132, fillInterval: 4 } });
    assert.deepEqual(strategyForShare(q, 1.5 * MICROS), { kind: 'token_bucket', tokenBucket: { maxTokens: 1, tokensPerFill: 15, fillInterval: 10 } });
    assert.deepEqual(strategyForShare(q, MICROS / 3), { kind: 'token_bucket', tokenBucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: 3 } });
    assert.deepEqual(strategyForShare(tokenBucket(7200, 3), 3600 * MICROS), { kind: 'token_bucket', tokenBucket: { maxTokens: 3600, tokensPerFill: 3600, fillInterval: 3600 } });
    assert.deepEqual(strategyForShare(q, 0), { kind: 'blanket_rule', blanketRule: 1 });
  });

  test('examples: requests_per_time_unit in the shortest unit holding one whole request; WEEK goes out per day', () => {
    assert.deepEqual(strategyForShare(rptu(10), 5 * MICROS), { kind: 'requests_per_time_unit', requestsPerTimeUnit: 5, timeUnit: 1 });
    assert.deepEqual(strategyForShare(rptu(10), MICROS / 2), { kind: 'requests_per_time_unit', requestsPerTimeUnit: 30, timeUnit: 2 });
    assert.deepEqual(strategyForShare(rptu(70, 7), 70 * MICROS), { kind: 'requests_per_time_unit', requestsPerTimeUnit: 10, timeUnit: 4 });
    assert.deepEqual(strategyForShare(rptu(10, 2, 3), 9 * MICROS), { kind: 'requests_per_time_unit', requestsPerTimeUnit: 3, timeUnit: 2 });
  });

  test('blanket strategies ignore the share', () => {
    const allow: QuotaSpec = { ...tokenBucket(1), strategy: 'allow_all' };
    const deny: QuotaSpec = { ...tokenBucket(1), strategy: 'deny_all' };
    assert.deepEqual(strategyForShare(allow, 0), { kind: 'blanket_rule', blanketRule: 0 });
    assert.deepEqual(strategyForShare(deny, 5 * MICROS), { kind: 'blanket_rule', blanketRule: 1 });
  });

  const quotaArb = fc
    .record({
      strategy: fc.constantFrom('token_bucket', 'requests_per_time_unit'),
      rpu: fc.integer({ min: 1, max: 1_000_000 }),
      unit: fc.constantFrom(1, 2, 3, 4, 7),
      mult: fc.integer({ min: 1, max: 5 }),
      burst: fc.integer({ min: 1, max: 2_000_000 }),
    })
    .map((r) => (r.strategy === 'token_bucket' ? tokenBucket(r.rpu, r.unit, r.mult, r.burst) : rptu(r.rpu, r.unit, r.mult)));

  test('the strategies of one division never admit more than the quota per period, and token capacities stay within burst + instances', () => {
    fc.assert(
      fc.property(quotaArb, fc.array(fc.double({ min: 0, max: 5e5, noNaN: true }), { minLength: 1, maxLength: 10 }), (q, rates) => {
        const { share } = divideFairly(quotaCapacity(q), rates.map((r) => demandUnits(q, r)));
        const strategies = share.map((s) => strategyForShare(q, s));
        const admitted = sum(strategies.map(rateOf));
        const quotaRate = q.requestsPerUnit / q.periodSeconds;
        assert.ok(admitted <= quotaRate * (1 + 1e-12), `admits ${admitted}/s over a quota of ${quotaRate}/s`);
        if (q.strategy === 'token_bucket') {
          const tokens = sum(strategies.map((s) => (s.kind === 'token_bucket' ? s.tokenBucket.maxTokens : 0)));
          assert.ok(tokens <= q.burst + share.length);
          for (const s of strategies) if (s.kind === 'token_bucket') assert.ok(Number.isInteger(s.tokenBucket.fillInterval) && s.tokenBucket.fillInterval! >= 1);
        }
      }),
      fcOptions(1500),
    );
  });

  test('floorMulDiv is exact past 2^53', () => {
    assert.equal(floorMulDiv(4_294_967_295, 4_000_000_000_000_000, 3), Number((4_294_967_295n * 4_000_000_000_000_000n) / 3n));
    assert.equal(floorMulDiv(7, 3, 2), 10);
  });
});
