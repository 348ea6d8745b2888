// Tracing end to end: the real service process exports OTLP to a receiver started by the test —
// OTLP/HTTP (JSON) on a node:http server, OTLP/gRPC on a grpc-js server — and the spans that
// arrive are checked: names, attributes, resource, parent/child links and the continuation of
// the caller's W3C or B3 (single and multiple headers) trace context over gRPC metadata and HTTP
// headers; parent-based sampling; and
// the flush of queued spans on SIGTERM.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { waitFor } from '@rls/testkit';
import { postJson, startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import { grpcJsStubs, unaryCall, type GrpcJsStubs } from '../support/server-test-support.js';

const RULES = 'domain: traced\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 100 }\n';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

type KeyValue = { key: string; value: Record<string, unknown> };
const attrs = (list: KeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, Object.values(kv.value)[0]]));

/** A minimal OTLP/HTTP JSON receiver: `/v1/traces` requests are flattened into spans. */
async function startHttpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close: () => Promise<void> }> {
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
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const TRACE_A = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_A = '00f067aa0ba902b7';
const TRACE_B = '5bf92f3577b34da6a3ce929d0e0e4737';
const PARENT_B = '10f067aa0ba902b8';
const request = (value: string) => ({ domain: 'traced', descriptors: [{ entries: [{ key: 'k', value }] }] });

describe('OTLP over HTTP', () => {
  let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
  let svc: ServiceProcess;
  let stubs: GrpcJsStubs;
  let rules: ReturnType<typeof writeRules>;

  before(async () => {
    receiver = await startHttpReceiver();
    rules = writeRules({ 'a.yaml': RULES });
    svc = await startService({
      ...rules.env,
      BACKEND_TYPE: 'memory',
      USE_STATS_PUSH: 'false',
      TRACING_ENABLED: 'true',
      TRACING_SERVICE_NAMESPACE: 'edge',
      TRACING_SERVICE_INSTANCE_ID: 'instance-7',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    stubs = grpcJsStubs(svc.grpcAddress);
  });

  after(async () => {
    stubs.close();
    await svc.stop();
    await receiver.close();
    rules.cleanup();
  });

  const spansOf = (traceId: string): OtlpSpan[] => receiver.spans.filter((s) => s.traceId === traceId);

  test('gRPC: traceparent metadata is continued; the store call is a child span', async () => {
    const md = new grpc.Metadata();
    md.set('traceparent', `00-${TRACE_A}-${PARENT_A}-01`);
    await new Promise<void>((resolve, reject) => {
      (stubs.rls.ShouldRateLimit as (...a: unknown[]) => unknown).call(stubs.rls, request('a'), md, { deadline: Date.now() + 5000 }, (err: Error | null) => (err === null ? resolve() : reject(err)));
    });
    await waitFor(() => spansOf(TRACE_A).length === 2, { what: 'two spans of the gRPC trace' });
    const root = spansOf(TRACE_A).find((s) => s.name === 'ShouldRateLimit Execution');
    const store = spansOf(TRACE_A).find((s) => s.name === 'Counter Store Execution');
    assert.ok(root !== undefined && store !== undefined, JSON.stringify(spansOf(TRACE_A).map((s) => s.name)));
    assert.equal(root.parentSpanId, PARENT_A, 'the caller span is the parent');
    assert.equal(root.attributes.domain, 'traced');
    assert.equal(store.parentSpanId, root.spanId);
    assert.equal(store.attributes['pipeline length'], 1);
    assert.equal(root.resource['service.name'], 'RateLimit');
    assert.equal(root.resource['service.namespace'], 'edge');
    assert.equal(root.resource['service.instance.id'], 'instance-7');
  });

  test('HTTP /json: the traceparent header is continued', async () => {
    const r = await fetch(`${svc.httpUrl}/json`, { method: 'POST', headers: { traceparent: `00-${TRACE_B}-${PARENT_B}-01` }, body: JSON.stringify(request('b')) });
    assert.equal(r.status, 200);
    await waitFor(() => spansOf(TRACE_B).length === 2, { what: 'two spans of the HTTP trace' });
    const root = spansOf(TRACE_B).find((s) => s.name === 'ShouldRateLimit Execution');
    assert.equal(root?.parentSpanId, PARENT_B);
  });

  // B3 (upstream #1110): the single `b3` header and the multiple X-B3-* headers, on gRPC and on /json.
  const B3_TRACES = {
    grpcSingle: ['6bf92f3577b34da6a3ce929d0e0e4738', '20f067aa0ba902b9'],
    grpcMulti: ['7bf92f3577b34da6a3ce929d0e0e4739', '30f067aa0ba902ba'],
    httpSingle: ['8bf92f3577b34da6a3ce929d0e0e473a', '40f067aa0ba902bb'],
    httpMulti: ['9bf92f3577b34da6a3ce929d0e0e473b', '50f067aa0ba902bc'],
  } as const;
  const rootOf = async (traceId: string): Promise<OtlpSpan> => {
    await waitFor(() => spansOf(traceId).length === 2, { what: `two spans of trace ${traceId}` });
    const root = spansOf(traceId).find((s) => s.name === 'ShouldRateLimit Execution');
    assert.ok(root !== undefined);
    return root;
  };
  const grpcWith = (headers: Record<string, string>, value: string): Promise<void> => {
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(headers)) md.set(k, v);
    return new Promise<void>((resolve, reject) => {
      (stubs.rls.ShouldRateLimit as (...a: unknown[]) => unknown).call(stubs.rls, request(value), md, { deadline: Date.now() + 5000 }, (err: Error | null) => (err === null ? resolve() : reject(err)));
    });
  };

  test('gRPC: a B3 single header (b3: trace-span-sampled) is continued', async () => {
    const [t, p] = B3_TRACES.grpcSingle;
    await grpcWith({ b3: `${t}-${p}-1` }, 'b3s');
    assert.equal((await rootOf(t)).parentSpanId, p);
  });

  test('gRPC: B3 multiple headers (X-B3-TraceId, X-B3-SpanId, X-B3-Sampled) are continued', async () => {
    const [t, p] = B3_TRACES.grpcMulti;
    await grpcWith({ 'x-b3-traceid': t, 'x-b3-spanid': p, 'x-b3-sampled': '1', 'x-b3-parentspanid': '0000000000000001' }, 'b3m');
    assert.equal((await rootOf(t)).parentSpanId, p);
  });

  test('HTTP /json: B3 single and multiple headers are continued; a 64-bit trace id is padded to 128 bits', async () => {
    const [t1, p1] = B3_TRACES.httpSingle;
    const r1 = await fetch(`${svc.httpUrl}/json`, { method: 'POST', headers: { b3: `${t1}-${p1}-d` }, body: JSON.stringify(request('b3hs')) });
    assert.equal(r1.status, 200);
    assert.equal((await rootOf(t1)).parentSpanId, p1);
    const [t2, p2] = B3_TRACES.httpMulti;
    const short = t2.slice(16);
    const r2 = await fetch(`${svc.httpUrl}/json`, { method: 'POST', headers: { 'X-B3-TraceId': short, 'X-B3-SpanId': p2, 'X-B3-Sampled': 'true' }, body: JSON.stringify(request('b3hm')) });
    assert.equal(r2.status, 200);
    assert.equal((await rootOf('0000000000000000' + short)).parentSpanId, p2);
  });

  test('W3C and B3 together: B3 wins (upstream\'s propagator order); a malformed B3 leaves the W3C context', async () => {
    const w3c = 'abf92f3577b34da6a3ce929d0e0e4730';
    const b3 = 'bbf92f3577b34da6a3ce929d0e0e4731';
    await grpcWith({ traceparent: `00-${w3c}-60f067aa0ba902bd-01`, b3: `${b3}-70f067aa0ba902be-1` }, 'both');
    assert.equal((await rootOf(b3)).parentSpanId, '70f067aa0ba902be');
    assert.equal(spansOf(w3c).length, 0);
    const w3c2 = 'cbf92f3577b34da6a3ce929d0e0e4732';
    await grpcWith({ traceparent: `00-${w3c2}-80f067aa0ba902bf-01`, b3: 'not-a-b3-context' }, 'bad');
    assert.equal((await rootOf(w3c2)).parentSpanId, '80f067aa0ba902bf');
  });

  test('a request without trace context starts a new trace (sampling rate 1)', async () => {
    const known = new Set(receiver.spans.map((s) => s.traceId));
    await unaryCall(stubs.rls, 'ShouldRateLimit', request('c'));
    const fresh = await waitFor(() => {
      const f = receiver.spans.filter((s) => !known.has(s.traceId));
      return f.length === 2 ? f : undefined;
    }, { what: 'the spans of a new trace' });
    const root = fresh.find((s) => s.name === 'ShouldRateLimit Execution');
    assert.ok(root !== undefined);
    assert.ok(root.parentSpanId === undefined || root.parentSpanId === '', 'a root span');
    assert.match(root.traceId, /^[0-9a-f]{32}$/);
  });
});

test('sampling rate 0 keeps only sampled incoming traces; queued spans are flushed on SIGTERM', async () => {
  const receiver = await startHttpReceiver();
  const rules = writeRules({ 'a.yaml': RULES });
  const svc = await startService({
    ...rules.env,
    BACKEND_TYPE: 'memory',
    USE_STATS_PUSH: 'false',
    TRACING_ENABLED: 'true',
    TRACING_SAMPLING_RATE: '0',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url,
    // Nothing is exported on a timer during the test: only the shutdown flush can deliver.
    OTEL_BSP_SCHEDULE_DELAY: '600000',
  });
  try {
    assert.equal((await postJson(svc.httpUrl, request('unsampled'))).status, 200);
    const r = await fetch(`${svc.httpUrl}/json`, { method: 'POST', headers: { traceparent: `00-${TRACE_A}-${PARENT_A}-01` }, body: JSON.stringify(request('sampled')) });
    assert.equal(r.status, 200);
    const exited = once(svc.proc.proc, 'exit');
    svc.proc.proc.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    assert.equal(code, 0);
    assert.deepEqual(
      receiver.spans.map((s) => [s.traceId, s.name]).sort(),
      [
        [TRACE_A, 'Counter Store Execution'],
        [TRACE_A, 'ShouldRateLimit Execution'],
      ],
    );
  } finally {
    await svc.stop();
    await receiver.close();
    rules.cleanup();
  }
});

test('TRACING_EXPORTER_PROTOCOL=grpc exports to an OTLP/gRPC TraceService', async () => {
  const bodies: Buffer[] = [];
  const server = new grpc.Server();
  const passthrough = (b: Buffer): Buffer => b;
  server.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: passthrough,
        requestDeserialize: passthrough,
        responseSerialize: passthrough,
        responseDeserialize: passthrough,
      },
    },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        bodies.push(call.request);
        cb(null, Buffer.alloc(0)); // an empty ExportTraceServiceResponse
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err !== null ? reject(err) : resolve(p))));
  const rules = writeRules({ 'a.yaml': RULES });
  const svc = await startService({
    ...rules.env,
    BACKEND_TYPE: 'memory',
    USE_STATS_PUSH: 'false',
    TRACING_ENABLED: 'true',
    TRACING_EXPORTER_PROTOCOL: 'grpc',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_BSP_SCHEDULE_DELAY: '50',
  });
  try {
    const r = await fetch(`${svc.httpUrl}/json`, { method: 'POST', headers: { traceparent: `00-${TRACE_B}-${PARENT_B}-01` }, body: JSON.stringify(request('g')) });
    assert.equal(r.status, 200);
    const all = await waitFor(() => {
      const b = Buffer.concat(bodies);
      return b.includes('Counter Store Execution') ? b : undefined;
    }, { what: 'an OTLP/gRPC export with both spans' });
    // Protobuf carries strings and ids as raw bytes.
    assert.ok(all.includes('ShouldRateLimit Execution'));
    assert.ok(all.includes(Buffer.from(TRACE_B, 'hex')), 'the incoming trace id');
    assert.ok(all.includes(Buffer.from(PARENT_B, 'hex')), 'the incoming parent span id');
    assert.ok(all.includes('RateLimit'), 'service.name');
  } finally {
    await svc.stop();
    server.forceShutdown();
    rules.cleanup();
  }
});
