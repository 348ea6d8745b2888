import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { FakeClock, freePort, startRedis, waitFor, type RedisServer } from '@rls/testkit';
import pino from 'pino';
import { Writable } from 'node:stream';
import type { Clock } from '../../src/clock.js';
import type { RateLimitDecider } from '../../src/ratelimit/decider.js';
import { EmbeddedDecider } from '../../src/ratelimit/embedded-decider.js';
import { RateLimitGate, type FailureMode } from '../../src/ratelimit/rate-limit-gate.js';
import { RemoteDecider } from '../../src/ratelimit/remote-decider.js';
import { shippedRulesDir } from '../../src/ratelimit/create-gate.js';
import { makeTestApp, type TestApp } from '../support/helpers.js';
import { rulesTree, startRateLimit, type RateLimitProcess, type RulesTree } from './ratelimit-process.js';

// Small limits so they trip within a few requests; same shape as the shipped quotes.yaml.
const TEST_RULES = `domain: quotes
descriptors:
  - key: plan
    value: startup
    descriptors:
      - key: token
        rate_limits: [{ unit: second, requests_per_unit: 3 }, { unit: minute, requests_per_unit: 5 }]
  - key: plan
    value: pro
    descriptors:
      - key: token
        rate_limits: [{ unit: second, requests_per_unit: 4 }, { unit: minute, requests_per_unit: 100 }]
`;

const HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after', 'x-quota-limit', 'x-quota-remaining'] as const;

interface Step {
  /** Wall-clock ms just before the request (replayed as the embedded engine's clock). */
  at: number;
  plan: 'startup' | 'pro';
  status: number;
  headers: Record<string, string | undefined>;
}

function capture(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

function gate(decider: RateLimitDecider, mode: FailureMode, clock: Clock = { now: () => Date.now() }): { gate: RateLimitGate; lines: string[] } {
  const { logger, lines } = capture();
  return { gate: new RateLimitGate(decider, 'quotes', mode, logger, clock), lines };
}

/** Waits for the start of a wall-clock second (first 250 ms), not in the last 10 s of a minute. */
async function alignToSecond(after = 0): Promise<number> {
  return await waitFor(
    () => {
      const now = Date.now();
      const s = Math.floor(now / 1000);
      return s > after && now % 1000 < 250 && s % 60 < 50 ? s : undefined;
    },
    { what: 'start of a second', timeoutMs: 15_000, intervalMs: 5 },
  );
}

async function runSequence(t: TestApp, plans: Step['plan'][], onStep: (at: number) => void): Promise<Step[]> {
  const out: Step[] = [];
  for (const plan of plans) {
    const at = Date.now();
    onStep(at);
    const res = await t.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${t.tokens[plan]}` } });
    const headers: Record<string, string | undefined> = {};
    for (const h of HEADERS) headers[h] = res.headers[h] === undefined ? undefined : String(res.headers[h]);
    out.push({ at, plan, status: res.statusCode, headers });
  }
  return out;
}

describe('burst limits through the rate limit service', () => {
  let redis: RedisServer;
  let rules: RulesTree;
  let rls: RateLimitProcess;

  before(async () => {
    redis = await startRedis();
    rules = rulesTree({ 'quotes.yaml': { text: TEST_RULES } });
    rls = await startRateLimit(redis.port, rules);
  });
  after(async () => {
    await rls.stop();
    await redis.stop();
    rules.cleanup();
  });

  test('remote: limits trip at the configured counts with RateLimit-* and Retry-After; embedded gives the identical sequence', async () => {
    const remoteDecider = new RemoteDecider({ address: rls.grpcAddress, tls: undefined, timeoutMs: 2000 });
    const remote = gate(remoteDecider, 'deny');
    const r = await makeTestApp({ rateLimit: remote.gate });
    const replay = new FakeClock(0);
    const embedded = gate(new EmbeddedDecider({ rulesDir: rules.dir, clock: replay, random: { int: () => 0 } }), 'deny', replay);
    const e = await makeTestApp({ rateLimit: embedded.gate });
    try {
      // Phase 1 must fit in one second: connect first, and take the route's first-call costs with
      // a request refused before any limit (unknown token), so neither lands inside the phase.
      await remoteDecider.waitForReady(5000);
      assert.equal((await r.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: 'Bearer not-a-token' } })).statusCode, 401);
      // Phase 1 inside one second: startup 3/s trips on the 4th; pro (own counters) is unaffected.
      const s1 = await alignToSecond();
      const phase1 = await runSequence(r, ['startup', 'startup', 'pro', 'startup', 'startup'], () => undefined);
      // Phase 2 in the next second: the per-second window is fresh, the per-minute one (5) is not.
      await alignToSecond(s1);
      const phase2 = await runSequence(r, ['startup', 'startup'], () => undefined);
      const steps = [...phase1, ...phase2];
      assert.equal(Math.floor(steps[4]!.at / 1000), s1, 'phase 1 ran within one second');
      assert.deepEqual(steps.map((s) => s.status), [200, 200, 200, 200, 429, 200, 429]);

      const h = steps.map((s) => s.headers);
      assert.deepEqual([h[0]!['ratelimit-limit'], h[0]!['ratelimit-remaining'], h[0]!['ratelimit-reset']], ['3', '2', '1']);
      assert.deepEqual([h[1]!['ratelimit-remaining'], h[3]!['ratelimit-remaining']], ['1', '0']);
      assert.deepEqual([h[2]!['ratelimit-limit'], h[2]!['ratelimit-remaining']], ['4', '3'], 'pro token counted on its own');
      assert.deepEqual([h[4]!['ratelimit-limit'], h[4]!['ratelimit-remaining'], h[4]!['ratelimit-reset'], h[4]!['retry-after']], ['3', '0', '1', '1']);
      // The 429 did not use monthly quota, and still shows it.
      assert.equal(h[4]!['x-quota-remaining'], h[3]!['x-quota-remaining']);
      assert.equal(h[4]!['x-quota-limit'], '150000');
      // Next second: 5 requests (the refused one included) reached the per-minute limit of 5.
      const minuteReset = String(60 - (Math.floor(steps[5]!.at / 1000) % 60));
      assert.deepEqual([h[5]!['ratelimit-limit'], h[5]!['ratelimit-remaining'], h[5]!['ratelimit-reset']], ['5', '0', minuteReset]);
      assert.deepEqual([h[6]!['ratelimit-limit'], h[6]!['ratelimit-remaining'], h[6]!['retry-after']], ['5', '0', minuteReset]);
      for (const s of steps.filter((x) => x.status === 200)) assert.ok(s.headers['x-quota-remaining'] !== undefined, 'quota headers on every response');

      // The same sequence against the embedded engine, its clock replaying the remote run's times.
      let i = 0;
      const mirrored = await runSequence(e, steps.map((s) => s.plan), () => replay.set(steps[i++]!.at));
      const decisions = (xs: Step[]) => xs.map((x) => ({ plan: x.plan, status: x.status, headers: x.headers }));
      assert.deepEqual(decisions(mirrored), decisions(steps));
    } finally {
      await r.close();
      await e.close();
    }
  });

  test('rate limit service stopped: allow admits and deny answers 503, within the timeout; failures logged (throttled) and counted', async () => {
    const own = await startRateLimit(redis.port, rules);
    // Long enough for the service to decide the first call on a loaded machine (100 ms missed it once
    // under a full parallel suite); the stopped service refuses the connection at once, so the bound
    // below still shows the wait is the deadline's at most.
    const timeoutMs = 1000;
    const allowDecider = new RemoteDecider({ address: own.grpcAddress, tls: undefined, timeoutMs });
    const denyDecider = new RemoteDecider({ address: own.grpcAddress, tls: undefined, timeoutMs });
    // Connected before the first request, so its 100 ms deadline is not spent on the handshake.
    await Promise.all([allowDecider.waitForReady(5000), denyDecider.waitForReady(5000)]);
    const allow = gate(allowDecider, 'allow');
    const deny = gate(denyDecider, 'deny');
    const a = await makeTestApp({ rateLimit: allow.gate });
    const d = await makeTestApp({ rateLimit: deny.gate });
    const get = async (t: TestApp) => {
      const started = performance.now();
      const res = await t.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${t.tokens.startup}` } });
      return { res, ms: performance.now() - started };
    };
    try {
      const up = await get(a);
      assert.equal(up.res.statusCode, 200);
      assert.equal(up.res.headers['ratelimit-limit'], '3', 'decided by the service while it runs');
      assert.equal((await get(d)).res.statusCode, 200);
      await own.stop();

      for (let i = 0; i < 3; i++) {
        const { res, ms } = await get(a);
        assert.equal(res.statusCode, 200, 'allow: admitted unchecked');
        assert.equal(res.headers['ratelimit-limit'], undefined);
        assert.ok(res.headers['x-quota-remaining'] !== undefined, 'monthly quota still applies');
        assert.ok(ms < timeoutMs + 400, `answered in ${ms} ms`);
      }
      assert.equal(allow.gate.counters.failures, 3);
      assert.equal(allow.gate.counters.failedOpen, 3);
      const warned = allow.lines.filter((l) => l.includes('rate limit service unavailable'));
      assert.equal(warned.length, 1, 'one log line for a burst of failures');
      assert.match(warned[0]!, /RATELIMIT_FAILURE_MODE=allow/);

      const { res, ms } = await get(d);
      assert.equal(res.statusCode, 503, 'deny: refused');
      assert.equal(res.headers['retry-after'], '1');
      assert.deepEqual(res.json(), { error: true, message: 'Rate limiting is temporarily unavailable, please retry shortly' });
      assert.ok(ms < timeoutMs + 400, `answered in ${ms} ms`);
      assert.equal(deny.gate.counters.failedClosed, 1);
    } finally {
      await a.close();
      await d.close();
      await own.stop();
    }
  });

  test('a rate limit service that accepts but never answers: the deadline (RATELIMIT_TIMEOUT) bounds the wait', async () => {
    const sockets: Socket[] = [];
    const port = await freePort();
    const blackhole: Server = createServer((sock) => void sockets.push(sock));
    await new Promise<void>((resolve) => blackhole.listen(port, '127.0.0.1', resolve));
    const timeoutMs = 150;
    const deny = gate(new RemoteDecider({ address: `127.0.0.1:${port}`, tls: undefined, timeoutMs }), 'deny');
    const d = await makeTestApp({ rateLimit: deny.gate });
    try {
      const started = performance.now();
      const res = await d.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${d.tokens.pro}` } });
      const ms = performance.now() - started;
      assert.equal(res.statusCode, 503);
      assert.ok(ms >= timeoutMs - 20 && ms < timeoutMs + 400, `waited ${ms} ms for a ${timeoutMs} ms deadline`);
      assert.equal(deny.gate.counters.failures, 1);
    } finally {
      await d.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => blackhole.close(() => resolve()));
    }
  });

  test('the shipped rule file loads in the embedded engine and limits each plan as documented', async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 15, 12, 0, 0));
    const g = gate(new EmbeddedDecider({ rulesDir: shippedRulesDir(), clock, random: { int: () => 0 } }), 'deny', clock);
    const t = await makeTestApp({ rateLimit: g.gate, clock });
    try {
      const statuses = async (plan: string, n: number) => {
        const out: number[] = [];
        for (let i = 0; i < n; i++) out.push((await t.app.inject({ url: '/api/v2/crypto/available', headers: { authorization: `Bearer ${t.tokens[plan]}` } })).statusCode);
        return out;
      };
      const startup = await statuses('startup', 11);
      assert.deepEqual(startup, [...Array<number>(10).fill(200), 429], 'startup: 10 per second');
      const pro = await statuses('pro', 51);
      assert.equal(pro.filter((x) => x === 200).length, 50, 'pro: 50 per second');
      clock.advance(1000);
      assert.deepEqual(await statuses('startup', 1), [200], 'a new second');
    } finally {
      await t.close();
    }
  });
});
