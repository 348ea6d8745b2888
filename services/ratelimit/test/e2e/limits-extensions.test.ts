// The extensions of issue 25 through the real process on a real Redis, over gRPC and /json
// (docs/ratelimit.md): several limits on one descriptor, windows of several units, values matched
// by CIDR block and prefix (allow and deny lists), and the RateLimit-Policy / RateLimit headers
// (LIMIT_RESPONSE_POLICY_HEADERS_ENABLED) beside upstream's RateLimit-* headers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRateLimitClient, RlsCode, RlsUnit, type RateLimitClient } from '@rls/rls-proto';
import { clearOfWindowEdge, startRedis, type RedisServer } from '@rls/testkit';
import { postJson, startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const RULES = `domain: ext
descriptors:
  - key: api_key
    rate_limits:
      - { unit: hour, requests_per_unit: 3, name: per_hour }
      - { unit: day, requests_per_unit: 1000, name: per_day }
  - key: report
    rate_limit: { unit: minute, unit_multiplier: 5, requests_per_unit: 2 }
  - { key: ip, cidr: 10.20.0.0/16, rate_limit: { unlimited: true } }
  - { key: ip, cidr: "2001:db8:bad::/48", share_threshold: true, rate_limit: { unit: second, requests_per_unit: 0 } }
  - { key: ip, cidr: [198.51.100.0/24, "2001:db8:feed::/48", 203.0.113.0/25], share_threshold: true, rate_limit: { unit: second, requests_per_unit: 0, name: denylist } }
  - { key: ip, rate_limit: { unit: hour, requests_per_unit: 100 } }
  - { key: team, prefix: "team-", rate_limit: { unit: hour, requests_per_unit: 50, name: teams } }
  - { key: team, prefix: "team-batch-", rate_limit: { unit: hour, requests_per_unit: 5, name: batch } }
`;

const one = (key: string, value: string) => ({ domain: 'ext', descriptors: [{ entries: [{ key, value }] }], hitsAddend: 0 });
type JsonAnswer = { overallCode: string; statuses: { code: string; currentLimit?: { requestsPerUnit: number; unit: string; name?: string }; limitRemaining?: number; durationUntilReset?: string }[]; responseHeadersToAdd?: { key: string; value: string }[] };

describe('rule extensions through the real process on Redis', () => {
  let redis: RedisServer;
  let svc: ServiceProcess;
  let client: RateLimitClient;
  let rules: ReturnType<typeof writeRules>;

  before(async () => {
    redis = await startRedis();
    rules = writeRules({ 'ext.yaml': RULES });
    svc = await startService({
      ...rules.env,
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      USE_STATS_PUSH: 'false',
      LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
      LIMIT_RESPONSE_POLICY_HEADERS_ENABLED: 'true',
      LocalCacheSizeInBytes: '100000',
      EXPIRATION_JITTER_MAX_SECONDS: '0',
    });
    client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000 });
  });

  after(async () => {
    client.close();
    await svc.stop();
    await redis.stop();
    rules.cleanup();
  });

  test('gRPC: rate_limits counts every limit in Redis; the status and headers describe the one that decides', async () => {
    await clearOfWindowEdge(3600, 3000);
    for (let i = 1; i <= 3; i++) {
      const res = await client.shouldRateLimit(one('api_key', 'alice'));
      assert.equal(res.overallCode, RlsCode.OK);
      assert.deepEqual(res.statuses[0]!.currentLimit, { requestsPerUnit: 3, unit: RlsUnit.HOUR, name: 'per_hour' });
      assert.equal(res.statuses[0]!.limitRemaining, 3 - i);
      const h = Object.fromEntries(res.responseHeadersToAdd.map((x) => [x.key, x.value]));
      assert.equal(h['RateLimit-Limit'], '3');
      assert.equal(h['RateLimit-Policy'], '"per_hour";q=3;w=3600, "per_day";q=1000;w=86400');
      assert.match(h.RateLimit ?? '', new RegExp(`^"per_hour";r=${3 - i};t=\\d+$`));
    }
    const over = await client.shouldRateLimit(one('api_key', 'alice'));
    assert.equal(over.overallCode, RlsCode.OVER_LIMIT);
    const keys = (await redis.call('KEYS', 'ext_api_key_alice_*')) as string[];
    assert.equal(keys.length, 2);
    const day = keys.find((k) => /^ext_api_key_alice_\d+_w86400$/.test(k));
    assert.ok(day !== undefined && keys.some((k) => /^ext_api_key_alice_\d+_w3600$/.test(k)), keys.join(' '));
    assert.equal(await redis.call('GET', day), '4', 'the day limit counted every request, the refused one too');
  });

  test('a client cycling 1,500 values of a rate_limits key: counts exact, every key with its TTL, EXPIRE once per key; keys reset behind the service get it again', async () => {
    await clearOfWindowEdge(3600, 20_000);
    const values = Array.from({ length: 1500 }, (_v, i) => `cyc${i}`);
    const send = async (vs: readonly string[]): Promise<void> => {
      for (let i = 0; i < vs.length; i += 50) {
        const answers = await Promise.all(vs.slice(i, i + 50).map((v) => client.shouldRateLimit(one('api_key', v))));
        for (const a of answers) assert.equal(a.overallCode, RlsCode.OK);
      }
    };
    const expireCalls = async (): Promise<number> => Number(/cmdstat_expire:calls=(\d+)/.exec(String(await redis.call('INFO', 'commandstats')))?.[1] ?? 0);
    const before = await expireCalls();
    await send(values);
    await send(values);
    const keys = (await redis.call('KEYS', 'ext_api_key_cyc*')) as string[];
    assert.equal(keys.length, 2 * values.length, 'an hour and a day key per value');
    // The memo (a fixed table) may have forgotten some keys and sent their EXPIRE again, never fewer than one per key.
    const sent = (await expireCalls()) - before;
    assert.ok(sent >= keys.length && sent < 1.5 * keys.length, `${sent} EXPIREs for ${keys.length} keys and ${2 * keys.length} counted hits`);
    for (const k of keys) {
      assert.equal(await redis.call('GET', k), '2', k);
      assert.ok(Number(await redis.call('TTL', k)) > 0, `${k} has a TTL`);
    }
    // Reset behind the service's back (another operator, a flush): counted again from 1, with a TTL again.
    const reset = keys.filter((_k, i) => i % 7 === 0);
    await redis.call('DEL', ...reset);
    await send(values);
    for (const k of reset) {
      assert.equal(await redis.call('GET', k), '1', k);
      assert.ok(Number(await redis.call('TTL', k)) > 0, `${k} got its TTL again`);
    }
  });

  test('/json: a five-minute window, aligned to the epoch, with a tagged key and an exact reset', async () => {
    await clearOfWindowEdge(300, 3000);
    const r = await postJson(svc.httpUrl, one('report', 'q1'));
    assert.equal(r.status, 200);
    const body = r.json as JsonAnswer;
    const reset = Number(String(body.statuses[0]!.durationUntilReset).replace(/s$/, ''));
    const nowS = Math.floor(Date.now() / 1000);
    assert.ok(Math.abs(reset - (300 - (nowS % 300))) <= 1, `reset ${reset}`);
    assert.deepEqual(body.statuses[0]!.currentLimit, { requestsPerUnit: 2, unit: 'MINUTE' });
    assert.equal(body.responseHeadersToAdd?.find((h) => h.key === 'RateLimit-Policy')?.value, '"0";q=2;w=300');
    const keys = (await redis.call('KEYS', 'ext_report_q1_*')) as string[];
    assert.equal(keys.length, 1);
    const start = Number(/_(\d+)_w300$/.exec(keys[0]!)?.[1]);
    assert.equal(start % 300, 0, 'the window starts at a multiple of 300 s since the epoch');
    const ttl = (await redis.call('TTL', keys[0]!)) as number;
    assert.ok(ttl > 0 && ttl <= 300, `ttl ${ttl}`);
    await postJson(svc.httpUrl, one('report', 'q1'));
    assert.equal(((await postJson(svc.httpUrl, one('report', 'q1'))).json as JsonAnswer).overallCode, 'OVER_LIMIT');
  });

  test('CIDR allow and deny lists over gRPC and /json; a deny block and a deny list (cidr: [..]) each share one counter; prefixes by longest match', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await client.shouldRateLimit(one('ip', '10.20.3.4'));
      assert.equal(res.overallCode, RlsCode.OK);
      assert.equal(res.statuses[0]!.currentLimit, undefined, 'allow list: unlimited');
    }
    const denied = await postJson(svc.httpUrl, one('ip', '2001:db8:bad:1::9'));
    assert.equal(denied.status, 429);
    assert.deepEqual((denied.json as JsonAnswer).statuses[0]!.currentLimit, { unit: 'SECOND' }, 'requests_per_unit 0 (proto3 JSON leaves zeros out)');
    const denied2 = await client.shouldRateLimit(one('ip', '2001:DB8:BAD::1'));
    assert.equal(denied2.overallCode, RlsCode.OVER_LIMIT);
    assert.equal(((await redis.call('KEYS', 'ext_ip_2001:db8:bad::/48_*')) as string[]).length, 1, 'one key for the whole block');
    // A list is one rule: every block of it denied, one counter and one set of statistics for all.
    const listed = await postJson(svc.httpUrl, one('ip', '203.0.113.100'));
    assert.equal(listed.status, 429);
    assert.equal((listed.json as JsonAnswer).statuses[0]!.currentLimit?.name, 'denylist');
    for (const ip of ['198.51.100.7', '2001:db8:feed:2::1']) assert.equal((await client.shouldRateLimit(one('ip', ip))).overallCode, RlsCode.OVER_LIMIT, ip);
    assert.equal((await client.shouldRateLimit(one('ip', '203.0.113.200'))).overallCode, RlsCode.OK, 'outside the /25');
    assert.equal(((await redis.call('KEYS', 'ext_ip_198.51.100.0/24+2_*')) as string[]).length, 1, 'one key for the whole list');
    const stats = await (await fetch(`${svc.debugUrl}/stats`)).text();
    // (statistics names have upstream's '.' -> '_' in descriptor values)
    assert.match(stats, /^ratelimit\.service\.rate_limit\.ext\.ip_198_51_100_0\/24\+2\.total_hits: 3$/m);
    const other = await client.shouldRateLimit(one('ip', '192.0.2.1'));
    assert.deepEqual([other.overallCode, other.statuses[0]!.currentLimit?.requestsPerUnit], [RlsCode.OK, 100]);
    const batch = await client.shouldRateLimit(one('team', 'team-batch-7'));
    assert.equal(batch.statuses[0]!.currentLimit?.name, 'batch');
    const team = (await postJson(svc.httpUrl, one('team', 'team-red'))).json as JsonAnswer;
    assert.equal(team.statuses[0]!.currentLimit?.name, 'teams');
  });
});
