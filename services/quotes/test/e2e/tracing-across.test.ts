// One trace across both services: a real quotes process with the remote rate limit decider and a
// real ratelimit process on Redis both export OTLP/HTTP (JSON) to a receiver this test runs. A
// request to quotes gives spans in both processes under one trace id: quotes' request span, its
// ShouldRateLimit client span, ratelimit's ShouldRateLimit Execution (a child of that client
// span, through the W3C traceparent in the gRPC metadata) and its Redis pipeline span.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { startRedis, tempDir, waitFor, type RedisServer } from '@rls/testkit';
import { shippedRulesDir } from '../../src/ratelimit/create-gate.js';
import { createTokens, startQuotesProcess, type QuotesProcess } from './quotes-process.js';
import { rulesTree, startRateLimit, type RateLimitProcess, type RulesTree } from './ratelimit-process.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}
type KeyValue = { key: string; value: Record<string, unknown> };
const attrs = (list: KeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((list ?? []).map((kv) => [kv.key, Object.values(kv.value)[0]]));

/** A minimal OTLP/HTTP JSON receiver: every `/v1/traces` export flattened into spans. */
async function startReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close: () => Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type'] === 'application/json') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans: (Omit<OtlpSpan, 'attributes' | 'resource'> & { attributes?: KeyValue[] })[] }[] }[];
        };
        for (const rs of body.resourceSpans) {
          for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, attributes: attrs(s.attributes), resource: attrs(rs.resource?.attributes) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, spans, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const TRACE_W3C = '0af7651916cd43dd8448eb211c80319c';
const PARENT_W3C = 'b7ad6b7169203331';
const TRACE_B3 = '80f198ee56343ba864fe8b2a57d3eff7';
const PARENT_B3 = 'e457b5a2e4d86bd1';

describe('one trace across quotes and ratelimit', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let redis: RedisServer;
  let rules: RulesTree;
  let rls: RateLimitProcess;
  let quotes: QuotesProcess;
  let token: string;
  const otel = (name: string): Record<string, string> => ({ TRACING_ENABLED: 'true', TRACING_SERVICE_NAME: name, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' });

  before(async () => {
    receiver = await startReceiver();
    redis = await startRedis();
    rules = rulesTree({ 'quotes.yaml': { copyFrom: join(shippedRulesDir(), 'quotes.yaml') } });
    rls = await startRateLimit(redis.port, rules, otel('ratelimit'));
    const dataDir = tempDir('quotes-traces-').path;
    token = (await createTokens(dataDir, { traced: 'pro' })).traced!;
    quotes = await startQuotesProcess({ ...otel('quotes'), RATELIMIT_GRPC_ADDR: rls.grpcAddress, RATELIMIT_FAILURE_MODE: 'deny' }, dataDir);
  });
  after(async () => {
    await quotes?.stop();
    await rls?.stop();
    await redis?.stop();
    rules?.cleanup();
    await receiver?.close();
  });

  /** The spans of `traceId` once both services' four spans have arrived. */
  const traceOf = (traceId: string): Promise<OtlpSpan[]> =>
    waitFor(
      () => {
        const spans = receiver.spans.filter((s) => s.traceId === traceId);
        const names = new Set(spans.map((s) => s.name));
        return ['GET /api/v2/crypto', 'ShouldRateLimit', 'ShouldRateLimit Execution', 'Redis Pipeline Execution'].every((n) => names.has(n)) ? spans : undefined;
      },
      { what: `the spans of trace ${traceId} from both services`, timeoutMs: 15_000, intervalMs: 50 },
    );

  /** quotes' request -> quotes' ShouldRateLimit -> ratelimit's ShouldRateLimit Execution -> Redis. */
  function assertChain(spans: OtlpSpan[], parentOfRequest: string | undefined): void {
    const one = (name: string): OtlpSpan => {
      const found = spans.filter((s) => s.name === name);
      assert.equal(found.length, 1, `one ${name} span`);
      return found[0]!;
    };
    const req = one('GET /api/v2/crypto');
    const call = one('ShouldRateLimit');
    const served = one('ShouldRateLimit Execution');
    const redisSpan = one('Redis Pipeline Execution');
    assert.equal(req.resource['service.name'], 'quotes');
    assert.equal(call.resource['service.name'], 'quotes');
    assert.equal(served.resource['service.name'], 'ratelimit');
    assert.equal(redisSpan.resource['service.name'], 'ratelimit');
    if (parentOfRequest === undefined) assert.ok(req.parentSpanId === undefined || req.parentSpanId === '');
    else assert.equal(req.parentSpanId, parentOfRequest);
    assert.equal(req.attributes['http.route'], '/api/v2/crypto');
    assert.equal(req.attributes['http.response.status_code'], 200);
    assert.equal(call.parentSpanId, req.spanId);
    assert.equal(call.attributes.domain, 'quotes');
    assert.equal(served.parentSpanId, call.spanId, 'ratelimit continues the context quotes sent in the gRPC metadata');
    assert.equal(served.attributes.domain, 'quotes');
    assert.equal(redisSpan.parentSpanId, served.spanId);
  }

  test('a caller\'s W3C traceparent is continued through quotes into ratelimit and Redis', async () => {
    const res = await fetch(`${quotes.url}/api/v2/crypto?coin=BTC`, { headers: { authorization: `Bearer ${token}`, traceparent: `00-${TRACE_W3C}-${PARENT_W3C}-01` } });
    assert.equal(res.status, 200);
    assertChain(await traceOf(TRACE_W3C), PARENT_W3C);
  });

  test('a caller\'s B3 context is continued the same way (OTEL_PROPAGATORS default)', async () => {
    const res = await fetch(`${quotes.url}/api/v2/crypto?coin=ETH`, { headers: { authorization: `Bearer ${token}`, b3: `${TRACE_B3}-${PARENT_B3}-1` } });
    assert.equal(res.status, 200);
    assertChain(await traceOf(TRACE_B3), PARENT_B3);
  });

  test('a request without context starts one trace that both services share', async () => {
    const known = new Set(receiver.spans.map((s) => s.traceId));
    const res = await fetch(`${quotes.url}/api/v2/crypto?coin=SOL`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    const traceId = await waitFor(
      () => receiver.spans.find((s) => s.name === 'GET /api/v2/crypto' && !known.has(s.traceId) && s.resource['service.name'] === 'quotes')?.traceId,
      { what: 'a new trace from quotes', timeoutMs: 15_000, intervalMs: 50 },
    );
    assertChain(await traceOf(traceId), undefined);
  });

  test('the store calls and the market refresh have spans', async () => {
    const names = new Set(receiver.spans.filter((s) => s.resource['service.name'] === 'quotes').map((s) => s.name));
    assert.ok([...names].some((n) => n.startsWith('store tokens.')), `store spans among ${[...names].join(', ')}`);
    await waitFor(() => receiver.spans.some((s) => s.name === 'Market Refresh' && s.attributes['market.source'] === 'tickers'), { what: 'a market refresh span', timeoutMs: 15_000, intervalMs: 50 });
  });
});
