// Rules over xDS against the test kit's ADS management server: the ACK/NACK sequence the server
// receives, node id, metadata and headers, rule changes seen by ShouldRateLimit, MERGE_DOMAIN_CONFIG,
// empty lists, wrong resource types, health and stats, reconnect with the last ACKed version, and
// the message size limit.
import { test, describe, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startXdsServer, waitFor, type XdsManagementServer } from '@rls/testkit';
import { HEALTH_CONFIG } from '../../src/app.js';
import { isRateLimitError } from '@rls/engine';
import { buildXdsApp, limitResource, PROTO_DIR, request } from '../support/xds-support.js';

const SUCCESS = 'ratelimit.service.config_load_success';
const ERROR = 'ratelimit.service.config_load_error';

describe('xDS rule provider', () => {
  let server: XdsManagementServer;
  before(async () => {
    server = await startXdsServer({ protoDir: PROTO_DIR });
  });
  after(async () => {
    await server.stop();
  });

  test('ACK, NACK with the validation text while old rules serve, merge, empty list, wrong type, reconnect with the last ACKed version', async () => {
    server.push('v1', [limitResource('foo-config', 'foo', 'k1', 'v1', 3)]);
    const from = server.requests.length;
    const { app, scheduler } = buildXdsApp({
      CONFIG_GRPC_XDS_SERVER_URL: server.address,
      CONFIG_GRPC_XDS_NODE_ID: 'test-node',
      CONFIG_GRPC_XDS_NODE_METADATA: 'zone=eu-1,role=edge,ignored',
      CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: 'authorization:Bearer abc,x-tenant:t1',
      MERGE_DOMAIN_CONFIG: 'true',
      HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true',
    });
    const xds = app.xds!;
    try {
      assert.equal(app.health.component(HEALTH_CONFIG), false);
      assert.throws(() => app.service.shouldRateLimit(request('foo', 'k1', 'v1')), (e: unknown) => isRateLimitError(e) && e.code === 'no_config' && e.message === 'no rate limit configuration loaded');
      xds.start();

      // First request: wildcard subscription, empty version and nonce, node and headers.
      const first = await server.waitForRequest(() => true, { from });
      assert.equal(first.versionInfo, '');
      assert.equal(first.responseNonce, '');
      assert.equal(first.typeUrl, 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig');
      assert.deepEqual(first.resourceNames, []);
      assert.equal(first.nodeId, 'test-node');
      assert.deepEqual(first.nodeMetadata, { zone: 'eu-1', role: 'edge' });
      assert.equal(first.headers.authorization, 'Bearer abc');
      assert.equal(first.headers['x-tenant'], 't1');
      assert.equal(first.errorDetail, undefined);

      // ACK of v1, rules active.
      const ack1 = await server.waitForRequest((r) => r.versionInfo === 'v1', { from });
      assert.equal(ack1.responseNonce, '1');
      assert.equal(ack1.errorDetail, undefined);
      assert.equal(ack1.nodeId, 'test-node');
      await xds.firstConfigEvent;
      const res = await app.service.shouldRateLimit(request('foo', 'k1', 'v1'));
      assert.deepEqual(res.statuses[0]?.currentLimit, { requestsPerUnit: 3, unit: 2, name: '' });
      assert.equal(app.stats.counterValue(SUCCESS), 1);
      assert.equal(app.health.component(HEALTH_CONFIG), true);
      assert.equal(app.service.currentRuleSet()?.dump(), 'foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false\n');

      // A bad version is NACKed with the validation text; the previous rules keep serving.
      let mark = server.requests.length;
      const badNonce = server.push('v2', [
        { name: 'foo-config', domain: 'foo', descriptors: [{ key: 'k1', value: 'v1', rate_limit: { unit: 'MINUTE', requests_per_unit: 1 } }, { key: 'k1', value: 'v1' }] },
      ]);
      const nack = await server.waitForRequest((r) => r.responseNonce === badNonce, { from: mark });
      assert.equal(nack.versionInfo, 'v1');
      assert.equal(nack.errorDetail?.message, "foo-config: duplicate descriptor composite key 'foo.k1_v1'");
      assert.equal(app.stats.counterValue(ERROR), 1);
      assert.equal(app.stats.counterValue(SUCCESS), 1);
      assert.equal((await app.service.shouldRateLimit(request('foo', 'k1', 'v1'))).statuses[0]?.currentLimit?.requestsPerUnit, 3);

      // An invalid unit names the resource too.
      mark = server.requests.length;
      const unitNonce = server.push('v2b', [{ name: 'bar-config', domain: 'bar', descriptors: [{ key: 'a', rate_limit: { unit: 'UNKNOWN', requests_per_unit: 5 } }] }]);
      const nackUnit = await server.waitForRequest((r) => r.responseNonce === unitNonce, { from: mark });
      assert.equal(nackUnit.errorDetail?.message, "bar-config: invalid rate limit unit 'UNKNOWN' (descriptor 'bar.a')");

      // MERGE_DOMAIN_CONFIG: two resources of one domain merge.
      mark = server.requests.length;
      server.push('v3', [limitResource('foo-a', 'foo', 'k1', 'v1', 7, 'SECOND'), limitResource('foo-b', 'foo', 'k2', 'v2', 9, 'HOUR')]);
      const ack3 = await server.waitForRequest((r) => r.versionInfo === 'v3', { from: mark });
      assert.equal(ack3.errorDetail, undefined);
      assert.equal((await app.service.shouldRateLimit(request('foo', 'k1', 'v1'))).statuses[0]?.currentLimit?.requestsPerUnit, 7);
      assert.equal((await app.service.shouldRateLimit(request('foo', 'k2', 'v2'))).statuses[0]?.currentLimit?.requestsPerUnit, 9);
      assert.equal(app.stats.counterValue(SUCCESS), 2);

      // An empty list is a valid, empty rule set.
      mark = server.requests.length;
      server.push('v4', []);
      await server.waitForRequest((r) => r.versionInfo === 'v4', { from: mark });
      assert.equal(app.service.currentRuleSet()?.domainCount, 0);
      const none = await app.service.shouldRateLimit(request('foo', 'k1', 'v1'));
      assert.equal(none.statuses[0]?.currentLimit, undefined);
      assert.equal(app.stats.counterValue(SUCCESS), 3);
      assert.equal(app.health.component(HEALTH_CONFIG), false);

      // A resource of another type is NACKed without a configuration event.
      mark = server.requests.length;
      const wrongNonce = server.pushRaw('v5', [{ typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', value: new Uint8Array([10, 1, 120]) }]);
      const nackType = await server.waitForRequest((r) => r.responseNonce === wrongNonce, { from: mark });
      assert.equal(nackType.versionInfo, 'v4');
      assert.match(nackType.errorDetail?.message ?? '', /mismatched message type/);
      assert.equal(app.stats.counterValue(ERROR), 2);

      // Garbage bytes are NACKed as an unmarshal error, also without a configuration event.
      mark = server.requests.length;
      const garbageNonce = server.pushRaw('v6', [{ typeUrl: 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig', value: new Uint8Array([0xff, 0xff]) }]);
      const nackGarbage = await server.waitForRequest((r) => r.responseNonce === garbageNonce, { from: mark });
      assert.match(nackGarbage.errorDetail?.message ?? '', /^error unmarshalling RateLimitConfig: /);
      assert.equal(app.stats.counterValue(ERROR), 2);

      // Put rules back, then drop the stream: the last rules stay, the client waits the backoff
      // and re-subscribes with the last ACKed version and the last nonce.
      mark = server.requests.length;
      const v7nonce = server.push('v7', [limitResource('foo-config', 'foo', 'k1', 'v1', 11)]);
      await server.waitForRequest((r) => r.versionInfo === 'v7', { from: mark });
      const opened = server.streamsOpened();
      mark = server.requests.length;
      server.dropStreams();
      await waitFor(() => scheduler.waiting === 1, { what: 'the reconnect backoff to be scheduled' });
      assert.equal(scheduler.delays.at(-1), 10_000);
      assert.equal((await app.service.shouldRateLimit(request('foo', 'k1', 'v1'))).statuses[0]?.currentLimit?.requestsPerUnit, 11);
      scheduler.fire();
      const resub = await server.waitForRequest((r) => r.stream > opened, { from: mark });
      assert.equal(resub.versionInfo, 'v7');
      assert.equal(resub.responseNonce, v7nonce);
      assert.equal(resub.errorDetail, undefined);
      assert.equal(resub.headers.authorization, 'Bearer abc');
      // Same version as the snapshot: nothing is resent, the rules are unchanged.
      assert.equal(app.stats.counterValue(SUCCESS), 4);
    } finally {
      await app.stop();
    }
  });

  test('a response larger than XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES is refused and never ACKed', async () => {
    const big = Array.from({ length: 50 }, (_, i) => ({ key: `key${i}`, value: 'x'.repeat(40), rate_limit: { unit: 'SECOND', requests_per_unit: i + 1 } }));
    server.push('huge', [{ name: 'huge', domain: 'huge', descriptors: big }]);
    const from = server.requests.length;
    const { app, scheduler } = buildXdsApp({ CONFIG_GRPC_XDS_SERVER_URL: server.address, XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: '512', CONFIG_GRPC_XDS_NODE_ID: 'small' });
    try {
      app.xds!.start();
      await server.waitForRequest((r) => r.nodeId === 'small', { from });
      await waitFor(() => scheduler.waiting === 1, { what: 'the stream to fail on the large message' });
      assert.equal(app.service.currentRuleSet(), undefined);
      assert.ok(!server.requests.slice(from).some((r) => r.versionInfo === 'huge'));
      assert.equal(app.stats.counterValue(ERROR), 0);
    } finally {
      await app.stop();
    }
  });
});
