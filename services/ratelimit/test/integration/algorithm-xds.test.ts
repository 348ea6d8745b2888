// The algorithm extension over xDS (RateLimitPolicy fields 1000 `algorithm` and 1001 `burst`,
// docs/ratelimit.md "Algorithms (extension)"): a resource with a token bucket reaches the decisions
// and /rlconfig; bad values are NACKed naming the resource while the old rules keep serving. (A store
// that cannot run an algorithm refuses it in RateLimitService.setRuleSet, which every rule provider
// calls: see the algorithm contract's fixed-window-only store.)
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startXdsServer, type XdsManagementServer } from '@rls/testkit';
import { Code } from '@rls/engine';
import { packRateLimitConfig, type RateLimitConfigMsg } from '@rls/rls-proto';
import { buildXdsApp, PROTO_DIR, request } from '../support/xds-support.js';

function resource(algorithm: string, burst: number | undefined, rpu = 3600): RateLimitConfigMsg {
  return {
    name: 'alg-config',
    domain: 'foo',
    descriptors: [
      {
        key: 'k',
        value: 'v',
        descriptors: [],
        shadowMode: false,
        detailedMetric: false,
        quotaMode: false,
        rateLimit: { unit: 'HOUR', requestsPerUnit: rpu, unlimited: false, name: '', replaces: [], algorithm, ...(burst !== undefined ? { burst } : {}) },
      },
    ],
  };
}

describe('algorithm extension over xDS', () => {
  let server: XdsManagementServer;
  before(async () => {
    server = await startXdsServer({ protoDir: PROTO_DIR });
  });
  after(async () => {
    await server.stop();
  });

  test('a token bucket travels in the resource, decides, shows in /rlconfig; a bad burst is NACKed', async () => {
    server.pushRaw('v1', [packRateLimitConfig(resource('token_bucket', 2))]);
    const { app } = buildXdsApp({ CONFIG_GRPC_XDS_SERVER_URL: server.address });
    try {
      app.xds!.start();
      await app.xds!.firstConfigEvent;
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await app.service.shouldRateLimit(request('foo', 'k', 'v'))).overallCode);
      assert.deepEqual(codes, [Code.OK, Code.OK, Code.OVER_LIMIT]);
      assert.equal(app.service.currentRuleSet()?.dump(), 'foo.k_v: unit=HOUR requests_per_unit=3600, shadow_mode: false, quota_mode: false, algorithm: token_bucket, burst: 2\n');

      const mark = server.requests.length;
      const nonce = server.pushRaw('v2', [packRateLimitConfig(resource('sliding_window', 5))]);
      const nack = await server.waitForRequest((r) => r.responseNonce === nonce, { from: mark });
      assert.equal(nack.versionInfo, 'v1');
      assert.equal(nack.errorDetail?.message, "alg-config: burst is only valid with algorithm token_bucket, not sliding_window (descriptor 'foo.k_v')");
      assert.match(app.service.currentRuleSet()?.dump() ?? '', /algorithm: token_bucket, burst: 2/);
    } finally {
      await app.stop();
    }
  });
});

describe('rule extensions of issue 25 over xDS (RateLimitPolicy.unit_multiplier 1002; RateLimitDescriptor.rate_limits 1003, cidr 1004, prefix 1005, cidrs 1008, prefixes 1009)', () => {
  let server: XdsManagementServer;
  before(async () => {
    server = await startXdsServer({ protoDir: PROTO_DIR });
  });
  after(async () => {
    await server.stop();
  });

  const base = { value: '', descriptors: [], shadowMode: false, detailedMetric: false, quotaMode: false };
  const policy = (unit: string, requestsPerUnit: number, extra: object = {}) => ({ unit, requestsPerUnit, unlimited: false, name: '', replaces: [], ...extra });
  const config = (descriptors: RateLimitConfigMsg['descriptors']): RateLimitConfigMsg => ({ name: 'ext-config', domain: 'ext', descriptors });

  test('the fields travel in the resource and decide; a bad one is NACKed naming the resource while the old rules serve', async () => {
    server.pushRaw('v1', [
      packRateLimitConfig(
        config([
          { ...base, key: 'api_key', rateLimits: [policy('HOUR', 2, { name: 'hourly' }), policy('DAY', 100, { unitMultiplier: 7 })] },
          { ...base, key: 'ip', cidr: '10.0.0.0/8', rateLimit: { ...policy('UNKNOWN', 0), unlimited: true } },
          { ...base, key: 'ip', rateLimit: policy('HOUR', 1) },
          { ...base, key: 'team', prefix: 'team-', rateLimit: policy('HOUR', 1, { name: 'teams' }) },
          { ...base, key: 'team', prefixes: ['crew-', 'squad-'], rateLimit: policy('HOUR', 1, { name: 'crews' }) },
          { ...base, key: 'ip', cidrs: ['192.0.2.0/24', '2001:db8::/32'], rateLimit: policy('SECOND', 0, { name: 'denied' }) },
        ]),
      ),
    ]);
    const { app } = buildXdsApp({ CONFIG_GRPC_XDS_SERVER_URL: server.address });
    try {
      app.xds!.start();
      await app.xds!.firstConfigEvent;
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await app.service.shouldRateLimit(request('ext', 'api_key', 'a'))).overallCode);
      assert.deepEqual(codes, [Code.OK, Code.OK, Code.OVER_LIMIT]);
      assert.match(app.service.currentRuleSet()?.dump() ?? '', /^ext\.api_key\.1: unit=DAY requests_per_unit=100, shadow_mode: false, quota_mode: false, unit_multiplier: 7$/m);
      for (let i = 0; i < 3; i++) assert.equal((await app.service.shouldRateLimit(request('ext', 'ip', '10.1.2.3'))).overallCode, Code.OK, 'allowed block');
      assert.equal((await app.service.shouldRateLimit(request('ext', 'ip', '198.51.100.1'))).overallCode, Code.OK);
      assert.equal((await app.service.shouldRateLimit(request('ext', 'ip', '198.51.100.1'))).overallCode, Code.OVER_LIMIT);
      for (const ip of ['192.0.2.1', '2001:db8::1']) {
        const res = await app.service.shouldRateLimit(request('ext', 'ip', ip));
        assert.deepEqual([res.overallCode, res.statuses[0]!.currentLimit?.name], [Code.OVER_LIMIT, 'denied'], `${ip}: in the cidrs list`);
      }
      assert.match(app.service.currentRuleSet()?.dump() ?? '', /^ext\.ip_192\.0\.2\.0\/24\+1: unit=SECOND requests_per_unit=0/m);
      assert.equal((await app.service.shouldRateLimit(request('ext', 'team', 'team-red'))).statuses[0]!.currentLimit?.name, 'teams');
      assert.equal((await app.service.shouldRateLimit(request('ext', 'team', 'squad-7'))).statuses[0]!.currentLimit?.name, 'crews');

      const mark = server.requests.length;
      const nonce = server.pushRaw('v2', [packRateLimitConfig(config([{ ...base, key: 'ip', cidr: '10.0.0.1/8', rateLimit: policy('HOUR', 1) }]))]);
      const nack = await server.waitForRequest((r) => r.responseNonce === nonce, { from: mark });
      assert.equal(nack.versionInfo, 'v1');
      assert.equal(nack.errorDetail?.message, "ext-config: cidr '10.0.0.1/8' has host bits set; the block is 10.0.0.0/8 (descriptor 'ext.ip')");
      assert.match(app.service.currentRuleSet()?.dump() ?? '', /unit_multiplier: 7/);
    } finally {
      await app.stop();
    }
  });
});
