// The whole service as a process, against a real redis-server: gRPC and /json decisions, the
// Redis keys and TTLs it writes, error statuses, and recovery after Redis comes back.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRateLimitClient, RateLimitRpcError, RlsCode, RlsUnit, type RateLimitClient } from '@rls/rls-proto';
import { clearOfWindowEdge, startRedis, waitFor, type RedisServer } from '@rls/testkit';
import { postJson, startService, writeRules, type ServiceProcess } from '../support/service-process.js';

const RULES = `
domain: e2e
descriptors:
  - key: key2
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: key3
    rate_limit: { unit: hour, requests_per_unit: 10, name: hourly }
  - key: unl
    rate_limit: { unlimited: true }
  - key: shadow
    shadow_mode: true
    rate_limit: { unit: day, requests_per_unit: 1 }
  - key: path
    value: "files/*"
    share_threshold: true
    rate_limit: { unit: hour, requests_per_unit: 2 }
`;

describe('ratelimit process with Redis', () => {
  let redis: RedisServer;
  let svc: ServiceProcess;
  let client: RateLimitClient;
  let rules: ReturnType<typeof writeRules>;

  before(async () => {
    redis = await startRedis();
    rules = writeRules({ 'e2e.yaml': RULES });
    svc = await startService({
      ...rules.env,
      BACKEND_TYPE: 'redis',
      KVSTORE_SOCKET_TYPE: 'tcp',
      KVSTORE_URL: redis.url,
      KVSTORE_TIMEOUT: '500ms',
      EXPIRATION_JITTER_MAX_SECONDS: '0',
      CACHE_KEY_PREFIX: 'p:',
      LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
    });
    client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000 });
    await client.waitForReady(5000);
  });

  after(async () => {
    client.close();
    await svc.stop();
    await redis.stop();
    rules.cleanup();
  });

  test('counts down over gRPC, then OVER_LIMIT, with Redis keys as upstream writes them', async () => {
    const v = `u${Date.now()}`;
    const req = { domain: 'e2e', descriptors: [{ entries: [{ key: 'key2', value: v }] }], hitsAddend: 0 };
    // The service's clock is the wall clock: keep the 22 requests inside one minute window.
    const minute = await clearOfWindowEdge(60, 10_000);
    for (let i = 1; i <= 22; i++) {
      const res = await client.shouldRateLimit(req);
      const st = res.statuses[0]!;
      if (i <= 20) {
        assert.equal(res.overallCode, RlsCode.OK, `request ${i}`);
        assert.equal(st.limitRemaining, 20 - i);
      } else {
        assert.equal(res.overallCode, RlsCode.OVER_LIMIT, `request ${i}`);
        assert.equal(st.limitRemaining, 0);
      }
      assert.deepEqual(st.currentLimit, { requestsPerUnit: 20, unit: RlsUnit.MINUTE, name: '' });
      assert.ok(st.durationUntilReset! >= 1 && st.durationUntilReset! <= 60);
      assert.deepEqual(res.responseHeadersToAdd.map((h) => h.key), ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
    }
    const keys = (await redis.call('KEYS', `p:e2e_key2_${v}_*`)) as string[];
    assert.equal(keys.length, 1);
    const windowStart = Number(keys[0]!.split('_').pop());
    assert.equal(windowStart, minute, 'MINUTE windows are aligned to the minute');
    assert.equal(await redis.call('GET', keys[0]!), '22');
    const ttl = (await redis.call('TTL', keys[0]!)) as number;
    assert.ok(ttl > 0 && ttl <= 60, `TTL ${ttl} is one unit (jitter disabled)`);
  });

  test('named rule, unlimited, shadow and share_threshold over gRPC', async () => {
    const v = `n${Date.now()}`;
    await clearOfWindowEdge(3600, 5000);
    const res = await client.shouldRateLimit({
      domain: 'e2e',
      descriptors: [
        { entries: [{ key: 'key3', value: v }] },
        { entries: [{ key: 'unl', value: v }] },
        { entries: [{ key: 'shadow', value: v }] },
      ],
      hitsAddend: 0,
    });
    assert.equal(res.overallCode, RlsCode.OK);
    assert.equal(res.statuses[0]!.currentLimit!.name, 'hourly');
    assert.equal(res.statuses[1]!.limitRemaining, 4294967295);
    assert.equal(res.statuses[1]!.currentLimit, undefined);
    const again = await client.shouldRateLimit({ domain: 'e2e', descriptors: [{ entries: [{ key: 'shadow', value: v }] }], hitsAddend: 0 });
    assert.equal(again.overallCode, RlsCode.OK, 'shadow rule never blocks');
    assert.equal(again.statuses[0]!.code, RlsCode.OK);
    assert.equal(again.statuses[0]!.limitRemaining, 0);
    for (const f of ['files/a.pdf', 'files/b.csv']) {
      await client.shouldRateLimit({ domain: 'e2e', descriptors: [{ entries: [{ key: 'path', value: f }] }], hitsAddend: 0 });
    }
    const shared = await client.shouldRateLimit({ domain: 'e2e', descriptors: [{ entries: [{ key: 'path', value: 'files/c.txt' }] }], hitsAddend: 0 });
    assert.equal(shared.overallCode, RlsCode.OVER_LIMIT, 'three different files share one counter of 2');
    const shareKeys = (await redis.call('KEYS', 'p:e2e_path_files/\\*_*')) as string[];
    assert.equal(shareKeys.length, 1);
  });

  test('POST /json answers 200 then 429 with the proto3 JSON shape', async () => {
    const v = `j${Date.now()}`;
    await clearOfWindowEdge(3600, 5000);
    const body = { domain: 'e2e', descriptors: [{ entries: [{ key: 'key3', value: v }] }], hitsAddend: 9 };
    const first = await postJson(svc.httpUrl, body);
    assert.equal(first.status, 200);
    assert.equal(first.json.overallCode, 'OK');
    const st = (first.json.statuses as Record<string, unknown>[])[0]!;
    assert.deepEqual(st.currentLimit, { requestsPerUnit: 10, unit: 'HOUR', name: 'hourly' });
    assert.equal(st.limitRemaining, 1);
    assert.match(String(st.durationUntilReset), /^\d+s$/);
    const second = await postJson(svc.httpUrl, { ...body, hitsAddend: 2 });
    assert.equal(second.status, 429);
    assert.equal(second.json.overallCode, 'OVER_LIMIT');
  });

  test('bad requests get clear errors and the process keeps serving', async () => {
    await assert.rejects(client.shouldRateLimit({ domain: '', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }], hitsAddend: 0 }), (err: unknown) => {
      assert.ok(err instanceof RateLimitRpcError);
      assert.equal(err.code, 3);
      assert.match(err.details, /rate limit domain must not be empty/);
      return true;
    });
    await assert.rejects(
      client.shouldRateLimit({ domain: 'e2e', descriptors: [{ entries: [{ key: 'key2', value: 'x' }], limit: { requestsPerUnit: 5, unit: 0 } }], hitsAddend: 0 }),
      (err: unknown) => err instanceof RateLimitRpcError && err.code === 3 && /unit/.test(err.details),
    );
    const bad = await postJson(svc.httpUrl, '{"domain": "e2e", "descriptors": [');
    assert.equal(bad.status, 400);
    const noDomain = await postJson(svc.httpUrl, { descriptors: [{ entries: [{ key: 'a', value: 'b' }] }] });
    assert.equal(noDomain.status, 400);
    assert.match(String(noDomain.json.error), /domain/);
    const ok = await client.shouldRateLimit({ domain: 'other', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }], hitsAddend: 0 });
    assert.equal(ok.overallCode, RlsCode.OK, 'unknown domain is OK without a limit');
    assert.equal(ok.statuses[0]!.currentLimit, undefined);
    assert.equal(await client.healthCheck('ratelimit'), 'SERVING');
    assert.equal((await fetch(`${svc.httpUrl}/healthcheck`)).status, 200);
  });

  test('Redis down: UNAVAILABLE / 503 within KVSTORE_TIMEOUT, then recovery without restart', async () => {
    const req = { domain: 'e2e', descriptors: [{ entries: [{ key: 'key2', value: 'down' }] }], hitsAddend: 0 };
    await redis.stop();
    const t0 = Date.now();
    await assert.rejects(client.shouldRateLimit(req), (err: unknown) => err instanceof RateLimitRpcError && err.code === 14);
    assert.ok(Date.now() - t0 < 2000, 'fails fast, no hang');
    const viaJson = await postJson(svc.httpUrl, req);
    assert.equal(viaJson.status, 503);
    await redis.start();
    await waitFor(async () => (await client.shouldRateLimit(req)).overallCode === RlsCode.OK, { what: 'recovery after Redis restart', timeoutMs: 10_000, intervalMs: 100 });
  });
});
