// StreamRateLimitQuotas on the real lean HTTP/2 server (issue 28 phase 2): grpc-js clients (a
// simulated Envoy, and raw bidi calls) against createGrpcServer with an RlqsService. Checks the
// stream carries several reports and server pushes, outlives the request read time, ends with OK on
// half-close, and that each bound and error ends only the offending stream with its status.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { QuotaBalancer } from '@rls/engine';
import { DEFAULT_RLQS_REPORT_LIMITS, decodeRateLimitQuotaResponse, encodeRateLimitQuotaUsageReports, STREAM_RATE_LIMIT_QUOTAS_PATH, type RateLimitQuotaResponseMsg } from '@rls/rls-proto';
import { SimulatedEnvoy, grpcSimStream, waitFor, type FakeClock, type SimUsageReports } from '@rls/testkit';
import { createGrpcServer, type GrpcServer } from '../../src/server/grpc-server.js';
import { DEFAULT_GRPC_LIMITS } from '../../src/server/grpc-limits-settings.js';
import type { RlqsService, RlqsServiceOptions } from '../../src/server/rlqs-calls.js';
import { rlqsTestService } from '../support/rlqs-test-service.js';
import { HAND_WRITTEN_SIM_CODEC } from '../support/rlqs-grpc-js-host.js';
import { scriptedService, TestHealth } from '../support/server-test-support.js';

const API = [{ key: 'name', value: 'api' }];

interface Rig {
  server: GrpcServer;
  rlqs: RlqsService;
  balancer: QuotaBalancer;
  clock: FakeClock;
  client: grpc.Client;
  address: string;
}

async function startRig(
  over: Partial<RlqsServiceOptions> = {},
  requestReadTimeoutMs = 10_000,
  balancerOver: Partial<ConstructorParameters<typeof QuotaBalancer>[0]> = {},
  limitsOver: Partial<typeof DEFAULT_GRPC_LIMITS> = {},
): Promise<Rig> {
  const { clock, balancer, rlqs } = rlqsTestService(over, { idleAbandonMs: 3_000, maxBucketsPerStream: 3, ...balancerOver });
  const server = createGrpcServer({
    shouldRateLimit: scriptedService().fn,
    health: new TestHealth(),
    rlqs,
    limits: { ...DEFAULT_GRPC_LIMITS, requestReadTimeoutMs, ...limitsOver },
  });
  await server.listen('127.0.0.1', 0);
  const port = (server.address() as { port: number }).port;
  const address = `127.0.0.1:${port}`;
  return { server, rlqs, balancer, clock, client: new grpc.Client(address, grpc.credentials.createInsecure()), address };
}

async function stopRig(r: Rig): Promise<void> {
  r.client.close();
  await r.server.close(100);
}

interface RawCall {
  call: grpc.ClientDuplexStream<SimUsageReports, RateLimitQuotaResponseMsg>;
  status: Promise<grpc.StatusObject>;
  received: RateLimitQuotaResponseMsg[];
}

function rawCall(client: grpc.Client): RawCall {
  const call = client.makeBidiStreamRequest(
    STREAM_RATE_LIMIT_QUOTAS_PATH,
    (m: SimUsageReports) => encodeRateLimitQuotaUsageReports(m),
    (b: Buffer) => decodeRateLimitQuotaResponse(b),
  );
  const received: RateLimitQuotaResponseMsg[] = [];
  call.on('data', (m: RateLimitQuotaResponseMsg) => received.push(m));
  call.on('error', () => undefined);
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  return { call, status, received };
}

const usage = (value: string, allowed = 1): SimUsageReports['bucketQuotaUsages'][number] => ({
  bucketId: [{ key: 'name', value }],
  timeElapsed: 1,
  numRequestsAllowed: allowed,
  numRequestsDenied: 0,
});

describe('RLQS on the lean gRPC server', () => {
  let rig: Rig;
  before(async () => {
    rig = await startRig({}, 200);
  });
  after(() => stopRig(rig));

  test('a simulated Envoy: watch, pushed assignment, enforcement, reports on one stream, abandon', async () => {
    const { clock, balancer, rlqs } = rig;
    const sim = new SimulatedEnvoy({ domain: 'edge', clock, settings: () => ({ reportingIntervalMs: 1000 }), open: grpcSimStream(rig.client, HAND_WRITTEN_SIM_CODEC) });
    sim.request(API);
    // The watch triggers a tick at once: the assignment is pushed without waiting for the tick timer.
    await waitFor(() => sim.stateOf(API) === 'active', { what: 'the assignment' });
    assert.deepEqual(sim.strategyOf(API), { kind: 'token_bucket', tokenBucket: { maxTokens: 20, tokensPerFill: 100, fillInterval: 5 } });
    let ok = 0;
    for (let i = 0; i < 50; i++) if (sim.request(API)) ok++;
    assert.equal(ok, 20);
    // Idle reports for longer than the request read timeout (200 ms, real time): the stream lives on.
    for (let s = 0; s < 4; s++) {
      clock.advance(1000);
      sim.advance();
      await waitFor(() => rlqs.reportCount === sim.counters.reportsSent, { what: 'the report' });
      await balancer.tick();
      await new Promise((r) => setTimeout(r, 80));
    }
    await waitFor(() => sim.counters.abandonedByServer === 1, { what: 'the abandon' });
    assert.equal(sim.stateOf(API), undefined);
    assert.deepEqual(sim.violations, []);
    assert.equal(rlqs.streamCount, 1);
    sim.close();
    await waitFor(() => rlqs.streamCount === 0, { what: 'the stream forgotten after the client cancelled' });
  });

  test('several reports on one stream, then half-close: OK', async () => {
    const c = rawCall(rig.client);
    const before = rig.rlqs.reportCount;
    c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('a')] });
    c.call.write({ domain: '', bucketQuotaUsages: [usage('a'), usage('b')] });
    c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('b')] });
    await waitFor(() => rig.rlqs.reportCount === before + 3, { what: 'three reports' });
    await waitFor(() => c.received.length > 0, { what: 'a push' });
    c.call.end();
    const s = await c.status;
    assert.equal(s.code, grpc.status.OK);
    await waitFor(() => rig.rlqs.streamCount === 0, { what: 'the stream forgotten' });
  });

  test('a changed domain ends that stream with INVALID_ARGUMENT; another stream on the connection goes on', async () => {
    const good = rawCall(rig.client);
    good.call.write({ domain: 'edge', bucketQuotaUsages: [usage('x')] });
    const bad = rawCall(rig.client);
    bad.call.write({ domain: 'edge', bucketQuotaUsages: [usage('y')] });
    bad.call.write({ domain: 'other', bucketQuotaUsages: [usage('y')] });
    const s = await bad.status;
    assert.equal(s.code, grpc.status.INVALID_ARGUMENT);
    assert.match(s.details, /changed domain from 'edge' to 'other'/);
    const n = rig.rlqs.reportCount;
    good.call.write({ domain: '', bucketQuotaUsages: [usage('x')] });
    await waitFor(() => rig.rlqs.reportCount === n + 1, { what: 'the other stream still reporting' });
    good.call.end();
    assert.equal((await good.status).code, grpc.status.OK);
  });

  test('buckets per stream (the balancer bound): RESOURCE_EXHAUSTED', async () => {
    const c = rawCall(rig.client);
    c.call.write({ domain: 'edge', bucketQuotaUsages: ['a', 'b', 'c', 'd'].map((v) => usage(v)) });
    const s = await c.status;
    assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(s.details, 'more than 3 buckets on one RLQS stream');
  });

  test('reports per second: a client sending as fast as it can is ended with RESOURCE_EXHAUSTED', async () => {
    const c = rawCall(rig.client);
    for (let i = 0; i < 50; i++) c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('fast')] });
    const s = await c.status;
    assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(s.details, /more than 20 RLQS reports per second on one stream \(RLQS_MAX_REPORTS_PER_SECOND\)/);
  });

  test('streams per connection: the fifth is refused, the four open ones are not disturbed', async () => {
    const open = [0, 1, 2, 3].map(() => rawCall(rig.client));
    for (const c of open) c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('p')] });
    await waitFor(() => rig.rlqs.streamCount === 4, { what: 'four streams' });
    const fifth = rawCall(rig.client);
    fifth.call.write({ domain: 'edge', bucketQuotaUsages: [usage('p')] });
    const s = await fifth.status;
    assert.equal(s.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(s.details, /RLQS_MAX_STREAMS_PER_CONNECTION/);
    // Another connection has its own allowance.
    const other = new grpc.Client(rig.address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    const o = rawCall(other);
    o.call.write({ domain: 'edge', bucketQuotaUsages: [usage('p')] });
    await waitFor(() => rig.rlqs.streamCount === 5, { what: 'a stream on another connection' });
    o.call.end();
    assert.equal((await o.status).code, grpc.status.OK);
    other.close();
    for (const c of open) c.call.end();
    for (const c of open) assert.equal((await c.status).code, grpc.status.OK);
  });

  test('a report that is not a message ends the stream with INTERNAL', async () => {
    const call = rig.client.makeBidiStreamRequest(STREAM_RATE_LIMIT_QUOTAS_PATH, (b: Buffer) => b, (b: Buffer) => b);
    call.on('error', () => undefined);
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.write(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]));
    const s = await status;
    assert.equal(s.code, grpc.status.INTERNAL);
    assert.match(s.details, /error unmarshalling request/);
  });
});

describe('RLQS stream lifecycle bounds', () => {
  test('a stream without a first report ends with DEADLINE_EXCEEDED after RLQS_FIRST_REPORT_TIMEOUT', async () => {
    const rig = await startRig({ firstReportTimeoutMs: 100 });
    try {
      // grpc-js sends the request headers when the call starts; nothing else is written.
      const c = rawCall(rig.client);
      const s = await c.status;
      assert.equal(s.code, grpc.status.DEADLINE_EXCEEDED);
      assert.match(s.details, /RLQS_FIRST_REPORT_TIMEOUT/);
      assert.equal(rig.rlqs.streamCount, 0);
    } finally {
      await stopRig(rig);
    }
  });

  test('shutdown ends open streams with UNAVAILABLE', async () => {
    const rig = await startRig();
    const c = rawCall(rig.client);
    c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('s')] });
    await waitFor(() => rig.rlqs.streamCount === 1, { what: 'the stream' });
    const closing = rig.server.close(1000);
    const s = await c.status;
    assert.equal(s.code, grpc.status.UNAVAILABLE);
    await closing;
    rig.client.close();
  });

  test('without an RlqsService the method is UNIMPLEMENTED', async () => {
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    const client = new grpc.Client(`127.0.0.1:${(server.address() as { port: number }).port}`, grpc.credentials.createInsecure());
    try {
      const c = rawCall(client);
      c.call.write({ domain: 'edge', bucketQuotaUsages: [usage('u')] });
      assert.equal((await c.status).code, grpc.status.UNIMPLEMENTED);
    } finally {
      client.close();
      await server.close(100);
    }
  });
});

// ---- raw HTTP/2 frames -----------------------------------------------------------------------

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const T_DATA = 0;
const T_HEADERS = 1;
const T_RST = 3;
const T_SETTINGS = 4;
const T_GOAWAY = 7;
const T_WINDOW_UPDATE = 8;

function h2frame(type: number, flags: number, id: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(id, 5);
  return Buffer.concat([h, payload]);
}

/** HPACK literal fields without indexing, plain strings (all shorter than 127 bytes). */
function headerBlock(fields: [string, string][]): Buffer {
  const out: number[] = [];
  for (const [n, v] of fields) out.push(0x00, n.length, ...Buffer.from(n), v.length, ...Buffer.from(v));
  return Buffer.from(out);
}

interface RawFrame {
  type: number;
  flags: number;
  id: number;
  payload: Buffer;
}

class RawH2 {
  readonly frames: RawFrame[] = [];
  private buf = Buffer.alloc(0);
  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      while (this.buf.length >= 9) {
        const len = this.buf.readUIntBE(0, 3);
        if (this.buf.length < 9 + len) break;
        const f = { type: this.buf[3]!, flags: this.buf[4]!, id: this.buf.readUInt32BE(5) & 0x7fffffff, payload: this.buf.subarray(9, 9 + len) };
        this.buf = this.buf.subarray(9 + len);
        // Acknowledge the server's SETTINGS as a client must.
        if (f.type === T_SETTINGS && (f.flags & 1) === 0) socket.write(h2frame(T_SETTINGS, 1, 0, Buffer.alloc(0)));
        this.frames.push(f);
      }
    });
    socket.on('error', () => undefined);
  }

  static async connect(address: string, initialWindow: number): Promise<RawH2> {
    const [host, port] = address.split(':');
    const socket = connect(Number(port), host);
    await new Promise((resolve) => socket.once('connect', resolve));
    const settings = Buffer.alloc(6);
    settings.writeUInt16BE(4, 0); // SETTINGS_INITIAL_WINDOW_SIZE
    settings.writeUInt32BE(initialWindow, 2);
    socket.write(Buffer.concat([PREFACE, h2frame(T_SETTINGS, 0, 0, settings)]));
    return new RawH2(socket);
  }

  open(id: number): void {
    const block = headerBlock([
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', STREAM_RATE_LIMIT_QUOTAS_PATH],
      [':authority', 'localhost'],
      ['content-type', 'application/grpc'],
      ['te', 'trailers'],
    ]);
    this.socket.write(h2frame(T_HEADERS, 0x4, id, block));
  }

  report(id: number, msg: SimUsageReports): void {
    const body = encodeRateLimitQuotaUsageReports(msg);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(body.length, 1);
    this.socket.write(h2frame(T_DATA, 0, id, Buffer.concat([prefix, body])));
  }

  windowUpdate(id: number, n: number): void {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(n, 0);
    this.socket.write(h2frame(T_WINDOW_UPDATE, 0, id, p));
  }

  of(type: number, id?: number): RawFrame[] {
    return this.frames.filter((f) => f.type === type && (id === undefined || f.id === id));
  }

  close(): void {
    this.socket.destroy();
  }
}

describe('RLQS streams in raw HTTP/2 frames', () => {
  const many = (n: number): SimUsageReports['bucketQuotaUsages'] =>
    Array.from({ length: n }, (_, i) => ({ bucketId: [{ key: 'name', value: `bucket-${i}` }], timeElapsed: 0, numRequestsAllowed: 0, numRequestsDenied: 0 }));

  test('server to client flow control: pushes wait for the window, and arrive once it is granted', async () => {
    const rig = await startRig({}, 10_000, { maxBucketsPerStream: 100 });
    const raw = await RawH2.connect(rig.address, 0);
    try {
      raw.open(1);
      raw.report(1, { domain: 'edge', bucketQuotaUsages: many(20) });
      await waitFor(() => rig.rlqs.reportCount === 1, { what: 'the report' });
      await waitFor(() => raw.of(T_HEADERS, 1).length === 1, { what: 'the response headers' });
      await rig.balancer.tick();
      // The assignments are queued: a zero stream window lets no DATA through.
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(raw.of(T_DATA, 1).length, 0);
      raw.windowUpdate(1, 1 << 20);
      await waitFor(() => raw.of(T_DATA, 1).length > 0, { what: 'the assignments after WINDOW_UPDATE' });
      const data = Buffer.concat(raw.of(T_DATA, 1).map((f) => f.payload));
      const msg = decodeRateLimitQuotaResponse(data.subarray(5, 5 + data.readUInt32BE(1)));
      assert.equal(msg.bucketAction.length, 20);
    } finally {
      raw.close();
      await stopRig(rig);
    }
  });

  test('a client that never reads: the stream is reset (RST_STREAM CANCEL) once RLQS_STREAM_SEND_BUFFER is queued, not buffered for', async () => {
    const rig = await startRig({ sendBufferBytes: 1024 }, 10_000, { maxBucketsPerStream: 100 });
    const raw = await RawH2.connect(rig.address, 0);
    try {
      raw.open(1);
      raw.report(1, { domain: 'edge', bucketQuotaUsages: many(60) });
      await waitFor(() => rig.rlqs.reportCount === 1, { what: 'the report' });
      await rig.balancer.tick();
      // Half the assignment TTL later the server re-sends them: more than the send buffer is queued.
      for (let i = 0; i < 3 && raw.of(T_RST, 1).length === 0; i++) {
        rig.clock.advance(6_000);
        raw.report(1, { domain: 'edge', bucketQuotaUsages: many(60) });
        await waitFor(() => rig.rlqs.reportCount === i + 2, { what: 'the report' });
        await rig.balancer.tick();
        await new Promise((r) => setTimeout(r, 20));
      }
      await waitFor(() => raw.of(T_RST, 1).length === 1, { what: 'RST_STREAM' });
      assert.equal(raw.of(T_RST, 1)[0]!.payload.readUInt32BE(0), 8);
      assert.equal(rig.rlqs.streamCount, 0);
      assert.equal(raw.of(T_DATA, 1).length, 0);
    } finally {
      raw.close();
      await stopRig(rig);
    }
  });

  test('RST_STREAM from the client ends one stream; the other stream on the connection keeps reporting', async () => {
    const rig = await startRig({}, 10_000, { maxBucketsPerStream: 100 });
    const raw = await RawH2.connect(rig.address, 65_535);
    try {
      raw.open(1);
      raw.open(3);
      raw.report(1, { domain: 'edge', bucketQuotaUsages: many(1) });
      raw.report(3, { domain: 'edge', bucketQuotaUsages: many(1) });
      await waitFor(() => rig.rlqs.streamCount === 2 && rig.rlqs.reportCount === 2, { what: 'two streams' });
      const code = Buffer.alloc(4);
      code.writeUInt32BE(8, 0);
      raw.socket.write(h2frame(T_RST, 0, 1, code));
      await waitFor(() => rig.rlqs.streamCount === 1, { what: 'the reset stream forgotten' });
      raw.report(3, { domain: 'edge', bucketQuotaUsages: many(1) });
      await waitFor(() => rig.rlqs.reportCount === 3, { what: 'the other stream still reporting' });
    } finally {
      raw.close();
      await stopRig(rig);
    }
  });

  // (The status itself, UNAVAILABLE, is checked with grpc-js in 'shutdown ends open streams with UNAVAILABLE'.)
  test('shutdown: GOAWAY, then the open stream ends with trailers (END_STREAM)', async () => {
    const rig = await startRig({}, 10_000, { maxBucketsPerStream: 100 });
    const raw = await RawH2.connect(rig.address, 65_535);
    try {
      raw.open(1);
      raw.report(1, { domain: 'edge', bucketQuotaUsages: many(1) });
      await waitFor(() => rig.rlqs.streamCount === 1, { what: 'the stream' });
      const closing = rig.server.close(2_000);
      await waitFor(() => raw.of(T_GOAWAY).length > 0, { what: 'GOAWAY' });
      await waitFor(() => raw.of(T_HEADERS, 1).some((f) => (f.flags & 1) !== 0), { what: 'the trailers' });
      // The client had not ended its side: the trailers are followed by RST_STREAM NO_ERROR (RFC 9113 §8.1), nothing worse.
      for (const f of raw.of(T_RST, 1)) assert.equal(f.payload.readUInt32BE(0), 0);
      raw.close();
      await closing;
    } finally {
      raw.close();
      rig.client.close();
    }
  });

  test('a report in 1-byte DATA frames is taken once whole; a too-large length prefix in pieces ends the stream', async () => {
    const rig = await startRig({ reportLimits: { ...DEFAULT_RLQS_REPORT_LIMITS, maxMessageBytes: 1024 } }, 10_000, { maxBucketsPerStream: 100 });
    const raw = await RawH2.connect(rig.address, 65_535);
    try {
      raw.open(1);
      const body = encodeRateLimitQuotaUsageReports({ domain: 'edge', bucketQuotaUsages: many(3) });
      const msg = Buffer.concat([Buffer.from([0, 0, 0, 0, body.length]), body]);
      for (const byte of msg) raw.socket.write(h2frame(T_DATA, 0, 1, Buffer.from([byte])));
      await waitFor(() => rig.rlqs.reportCount === 1, { what: 'the report' });
      raw.open(3);
      // 0x00 0x00 0x10 0x00 0x00: a 1 MiB message announced, in two pieces.
      raw.socket.write(h2frame(T_DATA, 0, 3, Buffer.from([0, 0, 0x10])));
      raw.socket.write(h2frame(T_DATA, 0, 3, Buffer.from([0, 0, 1, 2, 3])));
      await waitFor(() => raw.of(T_HEADERS, 3).some((f) => (f.flags & 1) !== 0), { what: 'the status trailers of stream 3' });
      assert.equal(rig.rlqs.streamCount, 1, 'stream 1 still open');
    } finally {
      raw.close();
      await stopRig(rig);
    }
  });

  test('client to server flow control: 4 MB of reports on one stream through a 256 KiB connection buffer', async () => {
    const rig = await startRig({ maxReportsPerSecond: 100_000 }, 10_000, { maxBucketsPerStream: 100 }, { connectionBufferBytes: 256 * 1024, connectionWindowBytes: 128 * 1024 });
    const c = rawCall(rig.client);
    try {
      // 40 buckets of 1,000-byte values: about 40 KB a report; the same buckets every time.
      const big = Array.from({ length: 40 }, (_, i) => ({ bucketId: [{ key: 'name', value: `${i}-${'x'.repeat(990)}` }], timeElapsed: 1, numRequestsAllowed: 1, numRequestsDenied: 0 }));
      for (let i = 0; i < 100; i++) c.call.write({ domain: 'edge', bucketQuotaUsages: big });
      await waitFor(() => rig.rlqs.reportCount === 100, { what: '100 reports of 40 KB', timeoutMs: 20_000 });
      c.call.end();
      assert.equal((await c.status).code, grpc.status.OK);
    } finally {
      await stopRig(rig);
    }
  });
});
