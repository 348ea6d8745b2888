// The burst limit decided at once (embedded engine on its memory store) against the same limit
// decided through promises: same responses, outcomes, counters and refusals, step by step. One
// method per step (shouldRateLimit, check, admit) answers synchronously when it can.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { Account } from '../accounts/account-service.js';
import { isQuotesError } from '../errors.js';
import { BurstLimiter, burstDescriptors } from './burst-limiter.js';
import { shippedRulesDir } from './create-gate.js';
import { EmbeddedDecider } from './embedded-decider.js';
import { RateLimitGate } from './rate-limit-gate.js';
import type { RateLimitDecider } from './decider.js';

/** `decider` answering through a promise, as a remote service would. */
function deferred(decider: RateLimitDecider): RateLimitDecider {
  return { kind: 'remote', shouldRateLimit: (req) => Promise.resolve(decider.shouldRateLimit(req)), close: () => decider.close() };
}

function pair(now: { t: number }): [EmbeddedDecider, EmbeddedDecider] {
  const make = (): EmbeddedDecider => new EmbeddedDecider({ rulesDir: shippedRulesDir(), clock: { now: () => now.t }, random: { int: () => 0 } });
  return [make(), make()];
}

const silent = pino({ level: 'silent' });

test('the embedded decider answers at once, prepared or not, as the promise form would', async () => {
  const now = { t: Date.UTC(2026, 0, 1, 0, 0, 0, 100) };
  const [sync, other] = pair(now);
  const promised = deferred(other);
  const req = { domain: 'quotes', descriptors: burstDescriptors('free', 'tok-1'), hitsAddend: 0 };
  const prepared = sync.prepare(req);
  // free: 2 a second, 60 a minute; 70 requests over 35 seconds cross both limits and windows.
  let over = 0;
  for (let i = 0; i < 70; i++) {
    now.t += 500;
    const a = sync.shouldRateLimit(i % 2 === 0 ? prepared : req);
    assert.ok(!(a instanceof Promise), `request ${i} decided at once`);
    const b = await promised.shouldRateLimit(req);
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
  const ga = new RateLimitGate(deferred(async), 'quotes', 'allow', silent, clock);
  const account = { tokenId: 'tok-2', plan: { id: 'free' } } as unknown as Account;
  const ls = new BurstLimiter(gs);
  const la = new BurstLimiter(ga);
  for (let i = 0; i < 4; i++) {
    let nowOutcome: unknown;
    let asyncOutcome: unknown;
    try {
      nowOutcome = ls.admit(account);
      assert.ok(!(nowOutcome instanceof Promise), `request ${i} decided at once`);
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

test('a decider answering through a promise makes check a promise, counted once', async () => {
  const gate = new RateLimitGate(
    { kind: 'remote', shouldRateLimit: () => Promise.reject(new Error('down')), close: () => Promise.resolve() },
    'quotes',
    'deny',
    silent,
    { now: () => 0 },
  );
  const out = gate.check(burstDescriptors('free', 't'));
  assert.ok(out instanceof Promise);
  await assert.rejects(out, (err: unknown) => isQuotesError(err) && err.code === 'RATE_LIMIT_UNAVAILABLE');
  assert.deepEqual(gate.counters, { calls: 1, overLimit: 0, failures: 1, failedOpen: 0, failedClosed: 1 });
});

test('a failing synchronous decision applies the failure mode at once (deny: 503 thrown)', () => {
  const failing = { kind: 'embedded' as const, shouldRateLimit: () => { throw new Error('store down'); }, close: () => Promise.resolve() };
  const deny = new RateLimitGate(failing, 'quotes', 'deny', silent, { now: () => 0 });
  assert.throws(() => deny.check(burstDescriptors('free', 't')), (err: unknown) => isQuotesError(err) && err.code === 'RATE_LIMIT_UNAVAILABLE');
  assert.deepEqual(deny.counters, { calls: 1, overLimit: 0, failures: 1, failedOpen: 0, failedClosed: 1 });
  const allow = new RateLimitGate(failing, 'quotes', 'allow', silent, { now: () => 0 });
  assert.deepEqual(allow.check(burstDescriptors('free', 't')), { admitted: true, headers: {}, failedOpen: true });
});
