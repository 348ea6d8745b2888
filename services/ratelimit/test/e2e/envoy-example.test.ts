// examples/envoy/envoy.yaml against the real service: the test reads the Envoy configuration,
// derives the ShouldRateLimit requests Envoy's ratelimit filter sends for sample HTTP requests
// (domain from the filter, one descriptor per route `rate_limits` entry, built from its actions),
// sends exactly those over gRPC to the service process running the example rules, and checks
// the answers. Editing the Envoy file changes the requests, so drift breaks this test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { parse } from 'yaml';
import { createRateLimitClient, RlsCode, RlsUnit, type RateLimitRequestMsg, type RequestDescriptorMsg } from '@rls/rls-proto';
import { startService } from '../support/service-process.js';

const repo = new URL('../../../../', import.meta.url).pathname;

/** The parts of an Envoy bootstrap this test reads; everything else is ignored. */
interface EnvoyAction {
  request_headers?: { header_name: string; descriptor_key: string; skip_if_absent?: boolean };
  remote_address?: Record<string, never>;
  generic_key?: { descriptor_value: string; descriptor_key?: string };
  header_value_match?: { descriptor_value: string; descriptor_key?: string; expect_match?: boolean; headers: Array<{ name: string; exact_match?: string; present_match?: boolean }> };
}
interface EnvoyRoute {
  match: { prefix?: string };
  route?: { cluster?: string; rate_limits?: Array<{ actions: EnvoyAction[]; stage?: number }> };
}
interface HttpFilter {
  name: string;
  typed_config: Record<string, unknown>;
}

/** A sample downstream HTTP request: lower-case header names, the client's address. */
interface HttpRequest {
  path: string;
  headers: Record<string, string>;
  remoteAddress: string;
}

/** The filter and routes of the only HTTP connection manager in the file. */
function loadEnvoy(): { filter: Record<string, unknown>; routes: EnvoyRoute[]; clusters: Array<Record<string, unknown>> } {
  const doc = parse(readFileSync(`${repo}examples/envoy/envoy.yaml`, 'utf8')) as {
    static_resources: {
      listeners: Array<{ filter_chains: Array<{ filters: Array<{ name: string; typed_config: Record<string, unknown> }> }> }>;
      clusters: Array<Record<string, unknown>>;
    };
  };
  const hcms = doc.static_resources.listeners.flatMap((l) => l.filter_chains.flatMap((c) => c.filters)).filter((f) => f.name === 'envoy.filters.network.http_connection_manager');
  assert.equal(hcms.length, 1, 'one HTTP connection manager');
  const hcm = hcms[0]!.typed_config as { http_filters: HttpFilter[]; route_config: { virtual_hosts: Array<{ routes: EnvoyRoute[] }> } };
  const filter = hcm.http_filters.find((f) => f.name === 'envoy.filters.http.ratelimit');
  assert.ok(filter, 'the ratelimit HTTP filter');
  assert.equal(hcm.http_filters.at(-1)?.name, 'envoy.filters.http.router', 'the router comes last');
  return { filter: filter.typed_config, routes: hcm.route_config.virtual_hosts.flatMap((v) => v.routes), clusters: doc.static_resources.clusters };
}

/**
 * Envoy's descriptor generation for one `rate_limits` entry: every action adds one entry, in
 * order; an action that cannot produce its entry (header absent, header match not met) drops the
 * whole descriptor, except request_headers with skip_if_absent, which only skips itself.
 */
function descriptorFor(actions: EnvoyAction[], req: HttpRequest): RequestDescriptorMsg | undefined {
  const entries: RequestDescriptorMsg['entries'] = [];
  for (const a of actions) {
    if (a.request_headers) {
      const v = req.headers[a.request_headers.header_name.toLowerCase()];
      if (v === undefined) {
        if (a.request_headers.skip_if_absent === true) continue;
        return undefined;
      }
      entries.push({ key: a.request_headers.descriptor_key, value: v });
    } else if (a.remote_address) {
      entries.push({ key: 'remote_address', value: req.remoteAddress });
    } else if (a.generic_key) {
      entries.push({ key: a.generic_key.descriptor_key ?? 'generic_key', value: a.generic_key.descriptor_value });
    } else if (a.header_value_match) {
      const m = a.header_value_match;
      const matched = m.headers.every((h) => {
        const v = req.headers[h.name.toLowerCase()];
        return h.exact_match !== undefined ? v === h.exact_match : (h.present_match ?? true) === (v !== undefined);
      });
      if (matched !== (m.expect_match ?? true)) return undefined;
      entries.push({ key: m.descriptor_key ?? 'header_match', value: m.descriptor_value });
    } else {
      assert.fail(`action not modelled by this test (extend descriptorFor): ${JSON.stringify(a)}`);
    }
  }
  return entries.length === 0 ? undefined : { entries };
}

/** The ShouldRateLimit request Envoy sends for `req`, or undefined when no descriptor applies. */
function envoyRequest(envoy: ReturnType<typeof loadEnvoy>, req: HttpRequest): RateLimitRequestMsg | undefined {
  const route = envoy.routes.find((r) => req.path.startsWith(r.match.prefix ?? '\0'));
  assert.ok(route, `a route for ${req.path}`);
  const stage = (envoy.filter.stage as number | undefined) ?? 0;
  const descriptors = (route.route?.rate_limits ?? [])
    .filter((rl) => (rl.stage ?? 0) === stage)
    .map((rl) => descriptorFor(rl.actions, req))
    .filter((d): d is RequestDescriptorMsg => d !== undefined);
  if (descriptors.length === 0) return undefined; // Envoy makes no call at all
  // One hit per HTTP request: the filter's default hits_addend.
  return { domain: envoy.filter.domain as string, descriptors, hitsAddend: 1 };
}

function quickstartEnv(): Record<string, string> {
  const env = parseEnv(readFileSync(`${repo}examples/quickstart.env`, 'utf8')) as Record<string, string>;
  env.RUNTIME_ROOT = `${repo}${env.RUNTIME_ROOT}`;
  delete env.PORT;
  delete env.GRPC_PORT;
  return env;
}

test('envoy.yaml: the ratelimit filter talks RLS v3 over gRPC to the service cluster, failing open', () => {
  const envoy = loadEnvoy();
  const rls = envoy.filter.rate_limit_service as { transport_api_version: string; grpc_service: { envoy_grpc: { cluster_name: string } } };
  assert.equal(rls.transport_api_version, 'V3');
  assert.equal(envoy.filter.domain, 'quickstart', 'the example rules domain');
  assert.equal(envoy.filter.failure_mode_deny, false, 'explained in the file: an outage of the limiter admits requests');
  const timeout = String(envoy.filter.timeout);
  assert.match(timeout, /^\d+(\.\d+)?s$/);
  assert.ok(Number.parseFloat(timeout) > 0 && Number.parseFloat(timeout) <= 1, 'a deadline below a second');
  const cluster = envoy.clusters.find((c) => c.name === rls.grpc_service.envoy_grpc.cluster_name);
  assert.ok(cluster, 'the gRPC cluster exists');
  assert.match(JSON.stringify(cluster), /"http2_protocol_options":\{\}/, 'gRPC needs HTTP/2 upstream');
  assert.match(JSON.stringify(cluster), /"port_value":8081/, "the service's GRPC_PORT default");
});

test('envoy.yaml: the requests Envoy sends get the answers the example rules promise', async () => {
  const envoy = loadEnvoy();
  const svc = await startService(quickstartEnv());
  const client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 5000 });
  try {
    const alice: HttpRequest = { path: '/orders', headers: { 'x-api-key': 'alice' }, remoteAddress: '10.0.0.1' };
    const aliceReq = envoyRequest(envoy, alice);
    assert.deepEqual(aliceReq, {
      domain: 'quickstart',
      descriptors: [{ entries: [{ key: 'api_key', value: 'alice' }] }, { entries: [{ key: 'remote_address', value: '10.0.0.1' }] }],
      hitsAddend: 1,
    });
    // 3 a minute per API key: the fourth request is over the limit, on the api_key descriptor.
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await client.shouldRateLimit(aliceReq);
      codes.push(res.overallCode);
      assert.equal(res.statuses.length, 2, 'one status per descriptor, in order');
      assert.deepEqual(res.statuses[0]!.currentLimit, { requestsPerUnit: 3, unit: RlsUnit.MINUTE, name: 'per_api_key' });
      assert.deepEqual({ rpu: res.statuses[1]!.currentLimit?.requestsPerUnit, unit: res.statuses[1]!.currentLimit?.unit }, { rpu: 10, unit: RlsUnit.SECOND });
      assert.equal(res.statuses[1]!.code, RlsCode.OK);
    }
    assert.deepEqual(codes, [RlsCode.OK, RlsCode.OK, RlsCode.OK, RlsCode.OVER_LIMIT]);

    // The whitelisted key: no limit on the key descriptor, however many requests.
    const internalReq = envoyRequest(envoy, { path: '/', headers: { 'x-api-key': 'internal' }, remoteAddress: '10.0.0.2' });
    for (let i = 0; i < 5; i++) {
      const res = await client.shouldRateLimit(internalReq!);
      assert.equal(res.overallCode, RlsCode.OK);
      assert.equal(res.statuses[0]!.currentLimit, undefined, 'whitelisted: no limit');
    }

    // No API key header: Envoy drops that descriptor and sends the address one only.
    const anonymous = envoyRequest(envoy, { path: '/', headers: {}, remoteAddress: '10.0.0.3' });
    assert.deepEqual(anonymous?.descriptors, [{ entries: [{ key: 'remote_address', value: '10.0.0.3' }] }]);
    const res = await client.shouldRateLimit(anonymous);
    assert.equal(res.overallCode, RlsCode.OK);
    assert.equal(res.statuses.length, 1);
    assert.equal(res.statuses[0]!.currentLimit?.requestsPerUnit, 10);
    assert.ok(res.statuses[0]!.limitRemaining <= 9, 'the address counter counted this request');

    // remote_address matched by CIDR block: loopback clients are never limited, 192.0.2.0/24 is refused.
    const local = envoyRequest(envoy, { path: '/', headers: {}, remoteAddress: '127.0.0.1' });
    for (let i = 0; i < 12; i++) {
      const r = await client.shouldRateLimit(local!);
      assert.equal(r.overallCode, RlsCode.OK);
      assert.equal(r.statuses[0]!.currentLimit, undefined, 'the allow list: no limit');
    }
    const denied = envoyRequest(envoy, { path: '/', headers: { 'x-api-key': 'bob' }, remoteAddress: '192.0.2.77' });
    const d = await client.shouldRateLimit(denied!);
    assert.equal(d.overallCode, RlsCode.OVER_LIMIT);
    assert.deepEqual([d.statuses[0]!.code, d.statuses[1]!.code], [RlsCode.OK, RlsCode.OVER_LIMIT], 'refused by the deny list, not by the key');
    assert.deepEqual(d.statuses[1]!.currentLimit, { requestsPerUnit: 0, unit: RlsUnit.SECOND, name: '' });
  } finally {
    client.close();
    await svc.stop();
  }
});
