// Counters on the debug port (docs/ratelimit.md, "Counters on the debug port"): GET /counters explains a
// descriptor's limits from the configured store (fixed, multiplied, sliding, bucket, rate_limits),
// POST /counters/reset deletes them — only with COUNTERS_RESET_ENABLED=true, only as JSON from a
// loopback origin, logged with the remote address and counted — and the bounds on what a caller sends.
// The app is built in-process on a real Redis (and the memory store for the refusals).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock, startRedis, tempDir, type RedisServer } from '@rls/testkit';
import { buildRateLimitApp, type RateLimitApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';
import type { CountersAnswer } from '../../src/operator/counters-routes.js';

const T0 = 1_800_000_000;
const RULES = `domain: c
descriptors:
  - key: api_key
    rate_limits:
      - {unit: second, requests_per_unit: 2, name: burst}
      - {unit: minute, requests_per_unit: 10, unit_multiplier: 5}
  - {key: sw, rate_limit: {unit: minute, requests_per_unit: 10, algorithm: sliding_window}}
  - {key: tb, rate_limit: {unit: hour, requests_per_unit: 360, algorithm: token_bucket, burst: 3}}
  - {key: ip, cidr: 10.0.0.0/8, share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 5}}
  - {key: open, rate_limit: {unlimited: true}}
`;

interface Fixture {
  app: RateLimitApp;
  debug: string;
  http: string;
  clock: FakeClock;
  logs: string[];
  close: () => Promise<void>;
}

async function startApp(env: Record<string, string>): Promise<Fixture> {
  const dir = tempDir('rls-counters-');
  const rulesDir = join(dir.path, 'rl', 'config');
  mkdirSync(rulesDir, { recursive: true });
  writeFileSync(join(rulesDir, 'c.yaml'), RULES);
  const { settings } = loadSettings({
    RUNTIME_ROOT: dir.path,
    RUNTIME_SUBDIRECTORY: 'rl',
    RUNTIME_WATCH_ROOT: 'false',
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: '0',
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: '0',
    EXPIRATION_JITTER_MAX_SECONDS: '0',
    ...env,
  });
  const clock = new FakeClock();
  clock.setSeconds(T0 + 10);
  const logs: string[] = [];
  const logger = createLogger({ level: 'info', format: 'json', destination: { write: (l: string) => logs.push(l) } });
  const app = buildRateLimitApp(settings, { logger, clock });
  app.loadRules();
  const addr = await app.start();
  return {
    app,
    debug: `http://127.0.0.1:${addr.debug.port}`,
    http: `http://127.0.0.1:${addr.http.port}`,
    clock,
    logs,
    close: async () => {
      await app.stop();
      dir.cleanup();
    },
  };
}

async function decide(f: Fixture, entries: { key: string; value: string }[]): Promise<string> {
  const r = await fetch(`${f.http}/json`, { method: 'POST', body: JSON.stringify({ domain: 'c', descriptors: [{ entries }] }) });
  return ((await r.json()) as { overallCode: string }).overallCode;
}

const lookup = async (f: Fixture, query: string): Promise<{ status: number; body: CountersAnswer & { error?: string } }> => {
  const r = await fetch(`${f.debug}/counters?${query}`);
  return { status: r.status, body: (await r.json()) as CountersAnswer & { error?: string } };
};

const reset = (f: Fixture, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<Response> =>
  fetch(`${f.debug}/counters/reset`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('counters on Redis', () => {
  let redis: RedisServer;
  let f: Fixture;
  before(async () => {
    redis = await startRedis();
    f = await startApp({ BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url, COUNTERS_RESET_ENABLED: 'true', CACHE_KEY_PREFIX: 'cnt:', LocalCacheSizeInBytes: '100000' });
  });
  after(async () => {
    await f.close();
    await redis.stop();
  });

  test('a rate_limits descriptor: every limit with its key, count, remaining and reset', async () => {
    for (let i = 0; i < 3; i++) await decide(f, [{ key: 'api_key', value: 'alice' }]);
    const { status, body } = await lookup(f, 'domain=c&entry=api_key%3Dalice');
    assert.equal(status, 200);
    assert.equal(body.store, 'redis');
    assert.deepEqual(
      body.limits.map((l) => [l.name, l.limit, l.key, l.value, l.count, l.remaining, l.resetSeconds]),
      [
        ['burst', '2/SECOND', `cnt:c_api_key_alice_${T0 + 10}_w1`, 3, 3, 0, 1],
        ['', '10/5 × MINUTE', `cnt:c_api_key_alice_${T0}_w300`, 3, 3, 7, 290],
      ],
    );
    assert.equal(await redis.call('GET', `cnt:c_api_key_alice_${T0}_w300`), '3', 'the keys are the ones the limiter counts in');
  });

  test('sliding window, token bucket and a shared CIDR block are explained by the engine\'s arithmetic', async () => {
    for (let i = 0; i < 4; i++) await decide(f, [{ key: 'sw', value: 'x' }]);
    await decide(f, [{ key: 'tb', value: 'x' }]);
    await decide(f, [{ key: 'ip', value: '10.1.2.3' }]);
    await decide(f, [{ key: 'ip', value: '10.9.9.9' }]);
    const sw = (await lookup(f, 'domain=c&entry=sw=x')).body.limits[0]!;
    assert.deepEqual([sw.key, sw.previousKey, sw.value, sw.previous, sw.count, sw.remaining, sw.resetSeconds], [`cnt:c_sw_x_${T0}_sw`, `cnt:c_sw_x_${T0 - 60}_sw`, 4, 0, 4, 6, 50]);
    const tb = (await lookup(f, 'domain=c&entry=tb=x')).body.limits[0]!;
    assert.deepEqual([tb.key, tb.value, tb.count, tb.remaining, tb.resetSeconds], [`cnt:c_tb_x_tb`, (T0 + 20) * 1_000_000, 1, 2, 10]);
    const ip = (await lookup(f, 'domain=c&entry=ip=10.200.0.1')).body.limits[0]!;
    assert.deepEqual([ip.key, ip.count], [`cnt:c_ip_10.0.0.0/8_${T0}`, 2], 'the block shares one counter');
  });

  test('reset deletes the keys and this process forgets them locally; logged with the remote address and counted', async () => {
    for (let i = 0; i < 3; i++) await decide(f, [{ key: 'api_key', value: 'bob' }]);
    assert.equal(await decide(f, [{ key: 'api_key', value: 'bob' }]), 'OVER_LIMIT');
    const r = await reset(f, { domain: 'c', entries: [{ key: 'api_key', value: 'bob' }] });
    assert.equal(r.status, 200);
    assert.deepEqual(((await r.json()) as { reset: string[] }).reset, [`cnt:c_api_key_bob_${T0 + 10}_w1`, `cnt:c_api_key_bob_${T0}_w300`]);
    assert.equal(await redis.call('EXISTS', `cnt:c_api_key_bob_${T0}_w300`), 0);
    assert.equal(await decide(f, [{ key: 'api_key', value: 'bob' }]), 'OK', 'the local over-limit cache forgot the key too');
    const line = f.logs.find((l) => l.includes('counters reset by an operator'));
    assert.ok(line !== undefined);
    assert.match(line, /"remote":"(::ffff:)?127\.0\.0\.1"/);
    assert.equal(f.app.stats.counter('ratelimit.operator.counters_reset').value(), 1);
  });

  test('bad lookups: no rule, no entries, bounds, unlimited rules', async () => {
    assert.equal((await lookup(f, 'domain=c&entry=nope=1')).status, 404);
    assert.equal((await lookup(f, 'domain=c')).status, 400);
    assert.equal((await lookup(f, 'entry=a=b')).status, 400);
    assert.match((await lookup(f, 'domain=c&entry=novalue')).body.error ?? '', /must be key=value/);
    assert.match((await lookup(f, `domain=c&entry=k=${'x'.repeat(5000)}`)).body.error ?? '', /longer than 4096 bytes \(MAX_DESCRIPTOR_ENTRY_BYTES\)/);
    assert.match((await lookup(f, `domain=c&${Array.from({ length: 33 }, (_v, i) => `entry=k${i}=v`).join('&')}`)).body.error ?? '', /more than 32 entries/);
    const open = await lookup(f, 'domain=c&entry=open=1');
    assert.deepEqual([open.status, open.body.unlimited, open.body.limits], [200, true, []]);
  });

  test('resets that are refused: wrong method, not JSON, a foreign origin, a body over 16 KiB', async () => {
    const before = f.app.stats.counter('ratelimit.operator.counters_reset_refused').value();
    assert.equal((await fetch(`${f.debug}/counters/reset`)).status, 405);
    assert.equal((await reset(f, 'domain=c', { 'content-type': 'application/x-www-form-urlencoded' })).status, 415);
    assert.equal((await reset(f, { domain: 'c', entries: [] }, { 'content-type': 'application/json', origin: 'https://evil.example' })).status, 403);
    assert.equal((await reset(f, { domain: 'c', entries: [{ key: 'k', value: 'x'.repeat(20_000) }] })).status, 413);
    assert.equal((await reset(f, '{nope')).status, 400);
    assert.equal(f.app.stats.counter('ratelimit.operator.counters_reset_refused').value(), before + 5);
    const okOrigin = await reset(f, { domain: 'c', entries: [{ key: 'sw', value: 'x' }] }, { 'content-type': 'application/json', origin: f.debug });
    assert.equal(okOrigin.status, 200, 'the operator page itself may reset');
  });
});

describe('counters on the memory store', () => {
  test('reset is refused unless COUNTERS_RESET_ENABLED=true; OPERATOR_PAGE=off removes the routes', async () => {
    const f = await startApp({ BACKEND_TYPE: 'memory' });
    try {
      await decide(f, [{ key: 'sw', value: 'y' }]);
      assert.equal((await lookup(f, 'domain=c&entry=sw=y')).body.limits[0]!.count, 1);
      const r = await reset(f, { domain: 'c', entries: [{ key: 'sw', value: 'y' }] });
      assert.equal(r.status, 403);
      assert.match(((await r.json()) as { error: string }).error, /COUNTERS_RESET_ENABLED=true/);
      assert.equal((await lookup(f, 'domain=c&entry=sw=y')).body.limits[0]!.count, 1, 'nothing was reset');
      assert.match(await (await fetch(`${f.debug}/`)).text(), /^\/counters: counters of one descriptor/m);
    } finally {
      await f.close();
    }
    const off = await startApp({ BACKEND_TYPE: 'memory', OPERATOR_PAGE: 'off', COUNTERS_RESET_ENABLED: 'true' });
    try {
      assert.equal((await fetch(`${off.debug}/counters?domain=c&entry=sw=y`)).status, 404);
    } finally {
      await off.close();
    }
  });
});
