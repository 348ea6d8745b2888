// The burst limit decided at once (embedded engine, CounterStore.now) against the same limit
// decided through promises: same responses, outcomes, counters and refusals, step by step.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { Account } from '../accounts/account-service.js';
import { isQuotesError } from '../errors.js';
import { BurstLimiter, burstDescriptors } from './burst-limiter.js';
import { shippedRulesDir } from './create-gate.js';
import { EmbeddedDecider } from './embedded-decider.js';
import { RateLimitGate } from './rate-limit-gate.js';

function pair(now: { t: number }): [EmbeddedDecider, EmbeddedDecider] {
  const make = (): EmbeddedDecider => new EmbeddedDecider({ rulesDir: shippedRulesDir(), clock: { now: () => now.t }, random: { int: () => 0 } });
  return [make(), make()];
}

const silent = pino({ level: 'silent' });

test('shouldRateLimitNow answers exactly as shouldRateLimit, across windows and over the limit', async () => {
  const now = { t: Date.UTC(2026, 0, 1, 0, 0, 0, 100) };
  const [sync, async] = pair(now);
  const req = { domain: 'quotes', descriptors: burstDescriptors('free', 'tok-1'), hitsAddend: 0 };
  // free: 2 a second, 60 a minute; 70 requests over 35 seconds cross both limits and windows.
  let over = 0;
  for (let i = 0; i < 70; i++) {
    now.t += 500;
    const a = sync.shouldRateLimitNow(req);
    const b = await async.shouldRateLimit(req);
    assert.deepEqual(a, b, `request ${i}`);
    if (b.overallCode === 2) over++;
  }
  assert.ok(over > 0, 'the minute limit was reached');
});

test('the gate and the burst limiter decide at once with the same outcomes and counters', async () => {
  const now = { t: Date.UTC(2026, 0, 1, 0, 0, 0, 0) };
  const [sync, async] = pair(now);
  const clock = { now: () => now.t };
  const gs = new RateLimitGate(sync, 'quotes', 'allow', silent, clock);
  const ga = new RateLimitGate(async, 'quotes', 'allow', silent, clock);
  const account = { tokenId: 'tok-2', plan: { id: 'free' } } as unknown as Account;
  const ls = new BurstLimiter(gs);
  const la = new BurstLimiter(ga);
  for (let i = 0; i < 4; i++) {
    let nowOutcome: unknown;
    let asyncOutcome: unknown;
    try {
      nowOutcome = ls.admitNow(account);
    } catch (err) {
      assert.ok(isQuotesError(err));
      nowOutcome = { code: err.code, details: err.details };
    }
    try {
      asyncOutcome = await la.admit(account);
    } catch (err) {
      assert.ok(isQuotesError(err));
      asyncOutcome = { code: err.code, details: err.details };
    }
    assert.deepEqual(nowOutcome, asyncOutcome, `request ${i}`);
    if (i >= 2) assert.equal((nowOutcome as { code: string }).code, 'RATE_LIMITED');
  }
  assert.deepEqual(gs.counters, ga.counters);
  assert.equal(gs.counters.overLimit, 2);
});

test('a decider without a synchronous form leaves the decision to check (nothing counted)', () => {
  const gate = new RateLimitGate(
    { kind: 'remote', shouldRateLimit: () => Promise.reject(new Error('unused')), close: () => Promise.resolve() },
    'quotes',
    'deny',
    silent,
    { now: () => 0 },
  );
  assert.equal(gate.checkNow(burstDescriptors('free', 't')), undefined);
  assert.equal(gate.counters.calls, 0);
});

test('a failing synchronous decision applies the failure mode at once (deny: 503 thrown)', () => {
  const failing = { kind: 'embedded' as const, shouldRateLimit: () => Promise.reject(new Error('x')), shouldRateLimitNow: () => { throw new Error('store down'); }, close: () => Promise.resolve() };
  const deny = new RateLimitGate(failing, 'quotes', 'deny', silent, { now: () => 0 });
  assert.throws(() => deny.checkNow(burstDescriptors('free', 't')), (err: unknown) => isQuotesError(err) && err.code === 'RATE_LIMIT_UNAVAILABLE');
  assert.deepEqual(deny.counters, { calls: 1, overLimit: 0, failures: 1, failedOpen: 0, failedClosed: 1 });
  const allow = new RateLimitGate(failing, 'quotes', 'allow', silent, { now: () => 0 });
  assert.deepEqual(allow.checkNow(burstDescriptors('free', 't')), { admitted: true, headers: {}, failedOpen: true });
});
