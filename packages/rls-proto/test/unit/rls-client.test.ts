// The @rls/rls-proto client against an independent @grpc/grpc-js server whose service
// definition comes from our .proto files through @grpc/proto-loader (protobufjs encoding).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRateLimitClient, PROTO_DIR, PROTO_FILES, RateLimitRpcError, type RateLimitClient } from '../../src/index.js';

type Handler = grpc.handleUnaryCall<Record<string, unknown>, Record<string, unknown>>;

describe('createRateLimitClient', () => {
  const server = new grpc.Server();
  const seen: Array<Record<string, unknown>> = [];
  let client: RateLimitClient;

  before(async () => {
    const def = protoLoader.loadSync([PROTO_FILES.rls, PROTO_FILES.health], { includeDirs: [PROTO_DIR], enums: String, longs: Number, defaults: false });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      envoy: { service: { ratelimit: { v3: { RateLimitService: { service: grpc.ServiceDefinition } } } } };
      grpc: { health: { v1: { Health: { service: grpc.ServiceDefinition } } } };
    };
    const shouldRateLimit: Handler = (call, cb) => {
      seen.push(call.request);
      if (call.request.domain === 'fail') {
        cb({ code: grpc.status.UNAVAILABLE, details: 'store down' });
        return;
      }
      if (call.request.domain === 'slow') {
        setTimeout(() => cb(null, {}), 2000);
        return;
      }
      cb(null, {
        overallCode: 'OVER_LIMIT',
        statuses: [{ code: 'OVER_LIMIT', currentLimit: { requestsPerUnit: 3, unit: 'WEEK', name: 'n' }, durationUntilReset: { seconds: 58 } }],
        responseHeadersToAdd: [{ key: 'k', value: 'v' }],
        dynamicMetadata: { fields: { a: { numberValue: 1 } } },
      });
    };
    const check: Handler = (call, cb) => {
      if (call.request.service === 'nope') cb({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
      else cb(null, { status: call.request.service === 'down' ? 'NOT_SERVING' : 'SERVING' });
    };
    server.addService(pkg.envoy.service.ratelimit.v3.RateLimitService.service, { ShouldRateLimit: shouldRateLimit });
    server.addService(pkg.grpc.health.v1.Health.service, { Check: check });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err !== null ? reject(err) : resolve(p))),
    );
    client = createRateLimitClient({ address: `127.0.0.1:${port}`, timeoutMs: 3000 });
    await client.waitForReady(3000);
  });

  after(() => {
    client.close();
    server.forceShutdown();
  });

  test('shouldRateLimit encodes the request and decodes the response', async () => {
    const res = await client.shouldRateLimit({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'a', value: 'b' }], limit: { requestsPerUnit: 9, unit: 2 }, hitsAddend: 0 }],
      hitsAddend: 1,
    });
    assert.deepEqual(seen.at(-1), {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'a', value: 'b' }], limit: { requestsPerUnit: 9, unit: 'MINUTE' }, hitsAddend: {} }],
      hitsAddend: 1,
    });
    assert.deepEqual(res, {
      overallCode: 2,
      statuses: [{ code: 2, currentLimit: { requestsPerUnit: 3, unit: 7, name: 'n' }, limitRemaining: 0, durationUntilReset: 58 }],
      responseHeadersToAdd: [{ key: 'k', value: 'v' }],
      dynamicMetadata: { a: 1 },
    });
  });

  test('failures reject with RateLimitRpcError carrying the gRPC code', async () => {
    await assert.rejects(client.shouldRateLimit({ domain: 'fail', descriptors: [], hitsAddend: 1 }), (err: unknown) => {
      assert.ok(err instanceof RateLimitRpcError);
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      assert.equal(err.details, 'store down');
      return true;
    });
  });

  test('deadlineMs and AbortSignal end a slow call', async () => {
    await assert.rejects(client.shouldRateLimit({ domain: 'slow', descriptors: [], hitsAddend: 1 }, { deadlineMs: 100 }), (err: RateLimitRpcError) => err.code === 4 /* DEADLINE_EXCEEDED */);
    const ac = new AbortController();
    const p = client.shouldRateLimit({ domain: 'slow', descriptors: [], hitsAddend: 1 }, { signal: ac.signal });
    ac.abort();
    await assert.rejects(p, (err: RateLimitRpcError) => err.code === 1 /* CANCELLED */);
  });

  test('healthCheck returns the status name or rejects with NOT_FOUND', async () => {
    assert.equal(await client.healthCheck(''), 'SERVING');
    assert.equal(await client.healthCheck('down'), 'NOT_SERVING');
    await assert.rejects(client.healthCheck('nope'), (err: RateLimitRpcError) => err.code === 5 /* NOT_FOUND */);
  });
});
