// Request bounds through the real process (issue 12, finding 4): too many descriptors or entries,
// too long an entry, too large a /json body are refused while decoding, with a message naming the
// limit and its setting; the heaviest request that is accepted does not stall the event loop
// (measured by a concurrent /healthcheck client, which took seconds before the bounds).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRateLimitClient, RateLimitRpcError, type RateLimitClient, type RateLimitRequestMsg } from '@rls/rls-proto';
import { postJson, startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import { measureStall } from '../support/health-probe.js';

const RULES = `domain: limits
descriptors:
  - key: user
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 1000000 }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 1000000 }
`;

const INVALID_ARGUMENT = 3;
/** A concurrent health check must be answered within this while the heaviest request runs (it took 0.9-4.9 s before). */
const STALL_BOUND_MS = 250;

function descriptors(n: number, entries: number, value: (i: number, j: number) => string, key = 'path'): RateLimitRequestMsg['descriptors'] {
  return Array.from({ length: n }, (_, i) => ({
    entries: Array.from({ length: entries }, (_, j) => ({ key: j === 0 ? key : `k${j}`, value: value(i, j) })),
    limit: undefined,
    hitsAddend: undefined,
  }));
}

async function rpcError(p: Promise<unknown>): Promise<RateLimitRpcError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof RateLimitRpcError) return err;
    throw err;
  }
  assert.fail('expected the call to fail');
}

describe('request bounds (real process)', () => {
  let svc: ServiceProcess;
  let client: RateLimitClient;
  let cleanup: () => void;

  before(async () => {
    const rules = writeRules({ 'limits.yaml': RULES });
    cleanup = rules.cleanup;
    svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', USE_STATS_PUSH: 'false' });
    client = createRateLimitClient({ address: svc.grpcAddress, timeoutMs: 20_000, channelOptions: { 'grpc.max_send_message_length': 8 * 1024 * 1024 } });
    await client.waitForReady(10_000);
  });
  after(async () => {
    client?.close();
    await svc?.stop();
    cleanup?.();
  });

  test('gRPC: one descriptor too many ⇒ INVALID_ARGUMENT naming MAX_REQUEST_DESCRIPTORS; at the limit ⇒ OK', async () => {
    const over = await rpcError(client.shouldRateLimit({ domain: 'limits', descriptors: descriptors(257, 1, (i) => `v${i}`), hitsAddend: 0 }));
    assert.equal(over.code, INVALID_ARGUMENT);
    assert.match(over.details, /more than 256 descriptors in one request \(limit 256, set by MAX_REQUEST_DESCRIPTORS\)/);
    const ok = await client.shouldRateLimit({ domain: 'limits', descriptors: descriptors(256, 1, (i) => `v${i}`), hitsAddend: 0 });
    assert.equal(ok.statuses.length, 256);
  });

  test('gRPC: too many entries, too long an entry ⇒ INVALID_ARGUMENT naming the setting', async () => {
    const entries = await rpcError(client.shouldRateLimit({ domain: 'limits', descriptors: descriptors(1, 33, () => 'x'), hitsAddend: 0 }));
    assert.equal(entries.code, INVALID_ARGUMENT);
    assert.match(entries.details, /descriptors\[0\]\.entries: more than 32 entries in one descriptor \(limit 32, set by MAX_DESCRIPTOR_ENTRIES\)/);
    const long = await rpcError(client.shouldRateLimit({ domain: 'limits', descriptors: descriptors(2, 1, (i) => (i === 1 ? 'x'.repeat(4093) : 'y')), hitsAddend: 0 }));
    assert.equal(long.code, INVALID_ARGUMENT);
    assert.match(long.details, /descriptors\[1\]\.entries\[0\]: key and value longer than 4096 bytes \(limit 4096, set by MAX_DESCRIPTOR_ENTRY_BYTES\)/);
    // 'path' (4 bytes) + 4092 bytes is exactly at the limit.
    const atLimit = await client.shouldRateLimit({ domain: 'limits', descriptors: descriptors(1, 1, () => 'x'.repeat(4092)), hitsAddend: 0 });
    assert.equal(atLimit.statuses.length, 1);
  });

  test('gRPC: 200k descriptors are refused at once; a concurrent health check is not held up', async (t) => {
    const huge = { domain: 'limits', descriptors: descriptors(200_000, 1, (i) => `v${i}`), hitsAddend: 0 };
    let tookMs = 0;
    const { maxMs, answers, attempts } = await measureStall(svc.httpUrl, async () => {
      const started = performance.now();
      const err = await rpcError(client.shouldRateLimit(huge));
      tookMs = performance.now() - started;
      assert.equal(err.code, INVALID_ARGUMENT);
      assert.match(err.details, /MAX_REQUEST_DESCRIPTORS/);
    }, STALL_BOUND_MS);
    t.diagnostic(`200k descriptors: refused in ${tookMs.toFixed(0)} ms (client encoding included); slowest concurrent /healthcheck ${maxMs.toFixed(1)} ms over ${answers} answers (attempt ${attempts})`);
    assert.ok(maxMs < STALL_BOUND_MS, `health check took ${maxMs} ms`);
  });

  test('the heaviest accepted requests do not stall the event loop', async (t) => {
    const heavy: [string, RateLimitRequestMsg][] = [
      // Every descriptor at the entry limit, 4 MiB of gRPC message in all (decoded, mostly unmatched).
      ['256 × 32 entries × 480 B', { domain: 'limits', descriptors: descriptors(256, 32, (i, j) => `${i}-${j}-`.padEnd(480, 'x')), hitsAddend: 0 }],
      // Every descriptor matching a detailed_metric rule with a new long value: new statistics and counter keys.
      ['256 × new 4 KB detailed values', { domain: 'limits', descriptors: descriptors(256, 1, (i) => `${i}-${Math.random()}`.padEnd(4092, 'v'), 'user'), hitsAddend: 0 }],
    ];
    for (const [what, req] of heavy) {
      // Warm up once (first-call compilation is not what is measured), then measure.
      await client.shouldRateLimit(req);
      let slowest = 0;
      const { maxMs, attempts } = await measureStall(svc.httpUrl, async () => {
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          const res = await client.shouldRateLimit(req);
          slowest = Math.max(slowest, performance.now() - started);
          assert.equal(res.statuses.length, 256);
        }
      }, STALL_BOUND_MS);
      t.diagnostic(`${what}: slowest call ${slowest.toFixed(1)} ms; slowest concurrent /healthcheck ${maxMs.toFixed(1)} ms (attempt ${attempts})`);
      assert.ok(maxMs < STALL_BOUND_MS, `${what}: health check took ${maxMs} ms`);
    }
  });

  test('/json: too many descriptors ⇒ 400 naming the limit; too large a body ⇒ 413; the largest accepted body is fast', async (t) => {
    const json = (n: number, pad = 0): unknown => ({ domain: 'limits', descriptors: Array.from({ length: n }, (_, i) => ({ entries: [{ key: 'path', value: `v${i}`.padEnd(pad, 'x') }] })) });
    const over = await postJson(svc.httpUrl, json(257));
    assert.equal(over.status, 400);
    assert.match(String(over.json.error), /more than 256 descriptors in one request \(limit 256, set by MAX_REQUEST_DESCRIPTORS\)/);
    const big = await postJson(svc.httpUrl, json(256, 1100));
    assert.equal(big.status, 413);
    assert.equal(big.json.error, 'request body larger than 262144 bytes (limit set by HTTP_MAX_BODY_BYTES)');
    // Just under 256 KiB: 256 descriptors with ~950-byte values.
    const body = JSON.stringify(json(256, 950));
    assert.ok(body.length > 240 * 1024 && body.length <= 256 * 1024, `body is ${body.length} bytes`);
    await postJson(svc.httpUrl, body);
    let slowest = 0;
    const { maxMs, attempts } = await measureStall(svc.httpUrl, async () => {
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        const r = await postJson(svc.httpUrl, body);
        slowest = Math.max(slowest, performance.now() - started);
        assert.equal(r.status, 200);
      }
    }, STALL_BOUND_MS);
    t.diagnostic(`/json ${body.length} B, 256 descriptors: slowest call ${slowest.toFixed(1)} ms; slowest concurrent /healthcheck ${maxMs.toFixed(1)} ms (attempt ${attempts})`);
    assert.ok(maxMs < STALL_BOUND_MS, `health check took ${maxMs} ms`);
  });
});
