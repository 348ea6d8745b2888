// The one backoff formula: growth and cap, each jitter range, and exact delays from a scripted
// RandomSource (every service's copy now calls this, so their delays are pinned here too).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RandomSource } from '@rls/engine';
import { backoffDelayMs, baseDelayMs, type ExponentialBackoff } from '../../src/backoff.js';

/** `int(n)` returns floor(fraction × n): 0 picks the low end of a range, 0.999 the high end. */
const fraction = (f: number): RandomSource => ({ int: (n) => Math.floor(f * n) });

test('base grows by the multiplier from the initial wait and stops at the cap', () => {
  const p: ExponentialBackoff = { initialMs: 50, maxMs: 2000, jitter: 'none' };
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 100, 5000].map((n) => baseDelayMs(p, n)), [50, 100, 200, 400, 800, 1600, 2000, 2000, 2000]);
  assert.deepEqual([0, 1, 2].map((n) => baseDelayMs({ ...p, multiplier: 3 }, n)), [50, 150, 450]);
});

test('a cap below the initial wait: the first wait is the initial one, later ones the cap', () => {
  const p: ExponentialBackoff = { initialMs: 1000, maxMs: 300, jitter: 'none' };
  assert.deepEqual([0, 1, 2].map((n) => baseDelayMs(p, n)), [1000, 300, 300]);
});

test('jitter ranges', () => {
  const p = (jitter: ExponentialBackoff['jitter']): ExponentialBackoff => ({ initialMs: 100, maxMs: 10_000, jitter });
  // base(2) = 400
  assert.equal(backoffDelayMs(p('none'), 2, fraction(0.999)), 400);
  assert.deepEqual([0, 0.5, 0.999].map((f) => backoffDelayMs(p('full'), 2, fraction(f))), [0, 200, 399]);
  assert.deepEqual([0, 0.5, 0.999].map((f) => backoffDelayMs(p('equal'), 2, fraction(f))), [200, 300, 399]);
  assert.deepEqual([0, 0.5, 0.999].map((f) => backoffDelayMs(p('from-initial'), 2, fraction(f))), [100, 250, 399]);
  assert.deepEqual([0, 0.5, 0.999].map((f) => backoffDelayMs(p({ spread: 0.25 }), 2, fraction(f))), [300, 400, 500]);
  // At the initial wait there is nothing to spread for from-initial.
  assert.equal(backoffDelayMs(p('from-initial'), 0, fraction(0.999)), 100);
});

test('a zero initial wait never divides into NaN', () => {
  assert.equal(backoffDelayMs({ initialMs: 0, maxMs: 100, jitter: 'equal' }, 40, fraction(0.5)), 0);
});
