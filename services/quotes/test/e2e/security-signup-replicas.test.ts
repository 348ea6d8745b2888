// Sign-up throttling shared by replicas: two quotes servers (built in-process) ask one real
// `ratelimit` service (a separate process on a real Redis) loaded with the shipped quotes.yaml, so
// the per-address and the global sign-up limits hold across both, as in a multi-replica deployment.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startRedis, waitFor, type RedisServer } from '@rls/testkit';
import pino from 'pino';
import { shippedRulesDir } from '../../src/ratelimit/create-gate.js';
import { RateLimitGate } from '../../src/ratelimit/rate-limit-gate.js';
import { RemoteDecider } from '../../src/ratelimit/remote-decider.js';
import { makeTestApp, type TestApp } from '../support/helpers.js';
import { rulesTree, startRateLimit, type RateLimitProcess, type RulesTree } from './ratelimit-process.js';

async function signup(t: TestApp, ip: string, email: string, password: string): Promise<number> {
  const s = await t.app.inject({ url: '/dashboard/api/session', headers: { host: 'localhost', 'x-forwarded-for': ip } });
  const res = await t.app.inject({
    method: 'POST',
    url: '/dashboard/api/signup',
    headers: {
      host: 'localhost',
      cookie: String(s.headers['set-cookie']).split(';')[0]!,
      'x-csrf-token': s.json<{ csrfToken: string }>().csrfToken,
      'content-type': 'application/json',
      'x-forwarded-for': ip,
    },
    payload: JSON.stringify({ email, password }),
  });
  return res.statusCode;
}

describe('sign-up limits across replicas (remote rate limit service, shipped rules)', () => {
  let redis: RedisServer;
  let rules: RulesTree;
  let rls: RateLimitProcess;
  const apps: TestApp[] = [];

  before(async () => {
    redis = await startRedis();
    rules = rulesTree({ 'quotes.yaml': { copyFrom: join(shippedRulesDir(), 'quotes.yaml') } });
    rls = await startRateLimit(redis.port, rules);
    for (let i = 0; i < 2; i++) {
      const gate = new RateLimitGate(new RemoteDecider({ address: rls.grpcAddress, tls: undefined, timeoutMs: 2000 }), 'quotes', 'deny', pino({ level: 'silent' }), { now: () => Date.now() });
      apps.push(await makeTestApp({ logLevel: 'warn', rateLimit: gate, settings: { QUOTES_TRUST_PROXY: 'true' } }));
    }
  });
  after(async () => {
    for (const t of apps) await t.close();
    await rls?.stop();
    await redis?.stop();
    rules?.cleanup();
  });

  test('3 an hour per address and 100 an hour in all, counted once for both servers', async () => {
    const [a, b] = [apps[0]!, apps[1]!];
    // The service counts in wall-clock hour windows: keep the test out of an hour's last 30 s.
    await waitFor(() => Date.now() % 3_600_000 < 3_570_000, { what: 'not the end of an hour', timeoutMs: 40_000, intervalMs: 100 });
    // Invalid forms count too (and skip the password hashing): 400 until a limit trips.
    assert.equal(await signup(a, '10.9.0.1', 'x1@example.com', 'short'), 400);
    assert.equal(await signup(b, '10.9.0.1', 'x2@example.com', 'short'), 400);
    assert.equal(await signup(a, '10.9.0.1', 'x3@example.com', 'short'), 400);
    assert.equal(await signup(b, '10.9.0.1', 'x4@example.com', 'correct horse battery staple'), 429, 'the 4th from one address, on the other server');
    assert.equal(await signup(a, '10.9.0.1', 'x5@example.com', 'correct horse battery staple'), 429);
    assert.equal(await signup(b, '10.9.0.2', 'y@example.com', 'correct horse battery staple'), 202);
    // 6 counted in the global window so far (refusals count, as with any rate limit): 94 more fill it.
    for (let i = 0; i < 94; i++) assert.equal(await signup(i % 2 === 0 ? a : b, `10.8.${i >> 8}.${i & 255}`, `z${i}@example.com`, 'short'), 400, `attempt ${i}`);
    assert.equal(await signup(a, '10.7.0.1', 'late@example.com', 'correct horse battery staple'), 429, 'the global limit is shared');
    assert.equal(await signup(b, '10.7.0.2', 'late2@example.com', 'correct horse battery staple'), 429);
  });
});
