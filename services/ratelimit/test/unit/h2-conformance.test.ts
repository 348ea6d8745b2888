// HTTP/2 (RFC 9113) and HPACK (RFC 7541) conformance of the lean gRPC transport, case by case,
// over raw frames: the groups an h2spec run covers (generic, http2, hpack), as they apply to a
// gRPC server. Every case asserts the exact outcome: the connection error code (GOAWAY, then the
// server closes the socket), the stream error code (RST_STREAM, and the connection stays usable,
// shown by a PING round trip), or the normal answer.
//
// Where h2spec accepts several codes, the case asserts the one this server sends and says why.
// Deliberate simplifications are written next to their case and in docs/ratelimit.md
// ("HTTP/2 conformance").
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { encodeRateLimitRequest } from '@rls/rls-proto';
import {
  connectH2,
  decodeSettings,
  FrameFlag,
  FrameType,
  H2ErrorCode,
  SettingId,
  encodeFrame,
  grpcMessage,
  grpcRequestHeaders,
  h2ErrorName,
  hpackInteger,
  hpackLiteralBlock,
  hpackString,
  priorityFields,
  settingsPayload,
  tempDir,
  waitFor,
  type H2RawClient,
  type HeaderField,
  type RawFrame,
} from '@rls/testkit';
import { createGrpcServer, type GrpcServer } from '../../src/server/grpc-server.js';
import { scriptedService, selfSignedCert, TestHealth } from '../support/server-test-support.js';

const RLS = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
/** Bound on every wait: generous for a loaded 2-core machine, short enough to fail fast. */
const T = 5000;

const E = H2ErrorCode;
const { DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE } = FrameType;
const { END_STREAM, ACK, END_HEADERS, PADDED } = FrameFlag;

function requestBody(domain = 'conformance'): Buffer {
  return Buffer.from(encodeRateLimitRequest({ domain, descriptors: [{ entries: [{ key: 'a', value: 'b' }] }], hitsAddend: 0 }));
}

/** HEADERS + one DATA frame (END_STREAM) of a ShouldRateLimit call; domain "hang" never answers. */
function call(c: H2RawClient, id: number, domain = 'conformance', extra: readonly HeaderField[] = []): void {
  c.headers(id, grpcRequestHeaders(RLS, { extra }));
  c.data(id, grpcMessage(requestBody(domain)), { endStream: true });
}

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

function field(f: RawFrame, name: string): string | undefined {
  return f.fields?.find(([n]) => n === name)?.[1];
}

describe('HTTP/2 conformance of the lean gRPC server (RFC 9113, RFC 7541)', () => {
  const svc = scriptedService();
  let server: GrpcServer;
  let port: number;
  /** A second server with SETTINGS_MAX_CONCURRENT_STREAMS 2, for §5.1.2. */
  let small: GrpcServer;
  let smallPort: number;
  const clients: H2RawClient[] = [];

  before(async () => {
    server = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    port = (server.address() as { port: number }).port;
    small = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth(), maxConcurrentStreams: 2 });
    await small.listen('127.0.0.1', 0);
    smallPort = (small.address() as { port: number }).port;
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.close(500);
    await small.close(500);
  });

  /** Connected, preface and SETTINGS exchanged both ways. */
  async function open(settings: readonly (readonly [number, number])[] = [], p = port): Promise<H2RawClient> {
    const c = await connectH2({ port: p, settings });
    clients.push(c);
    await c.handshake(T);
    await c.waitFor((f) => f.type === SETTINGS && (f.flags & ACK) !== 0, T, 'SETTINGS ACK');
    return c;
  }

  /** Connection error: GOAWAY with exactly `code`, then the server closes the TCP connection. */
  async function connectionError(c: H2RawClient, code: number): Promise<void> {
    const r = await c.connectionError(T);
    assert.ok(r.goaway !== undefined, `expected GOAWAY ${h2ErrorName(code)}, the connection closed without one (frames: ${c.summary()})`);
    assert.equal(h2ErrorName(r.goaway.errorCode), h2ErrorName(code), `GOAWAY debug data: ${r.goaway.debug}`);
    assert.ok(await c.closedWithin(T), 'the server must close the connection after a connection error');
  }

  /** Stream error: RST_STREAM with exactly `code` on `id`; the connection carries on. */
  async function streamError(c: H2RawClient, id: number, code: number): Promise<void> {
    const got = await c.streamReset(id, T);
    assert.equal(h2ErrorName(got), h2ErrorName(code));
    await c.pingRoundTrip(T);
    assert.equal(c.goawayCode, undefined, 'a stream error must not end the connection');
  }

  /** The normal answer of a call: :status 200, then trailers with grpc-status 0. */
  async function answered(c: H2RawClient, id: number): Promise<void> {
    const head = await c.waitFor((f) => f.type === HEADERS && f.streamId === id, T, `response HEADERS on stream ${id}`);
    assert.equal(field(head, ':status'), '200');
    const end = (head.flags & END_STREAM) !== 0 ? head : await c.waitFor((f) => f.type === HEADERS && f.streamId === id && (f.flags & END_STREAM) !== 0, T, `trailers on stream ${id}`);
    assert.equal(field(end, 'grpc-status'), '0', `trailers: ${JSON.stringify(end.fields)}`);
  }

  /** Nothing but the PING ACK arrives in answer to what was sent: the frames were ignored. */
  async function ignored(c: H2RawClient): Promise<void> {
    const before = c.received.length;
    await c.pingRoundTrip(T);
    // Connection-level WINDOW_UPDATE is flow-control bookkeeping, not an answer to a frame.
    const extra = c.received.slice(before).filter((f) => f.type !== PING && !(f.type === WINDOW_UPDATE && f.streamId === 0));
    assert.deepEqual(extra.map((f) => f.type), [], `unexpected answer: ${c.summary()}`);
  }

  /** The server's answer has begun on a "hang" call: the stream is half-closed (remote) and stays so. */
  async function halfClosedRemote(c: H2RawClient, id: number): Promise<void> {
    const hanging = (): number => svc.seen.filter((r) => r.domain === 'hang').length;
    const before = hanging();
    call(c, id, 'hang');
    await waitFor(() => hanging() > before, { timeoutMs: T, what: 'the call to reach the service' });
  }

  // ---- §3.4/3.5 connection preface ----------------------------------------------------------

  describe('3.5 HTTP/2 connection preface', () => {
    test('the server connection preface is a SETTINGS frame, sent first', async () => {
      const c = await open();
      assert.equal(c.received[0]?.type, SETTINGS);
      assert.equal(c.received[0]?.flags, 0);
    });

    test('an invalid connection preface: GOAWAY PROTOCOL_ERROR and the TCP connection is closed', async () => {
      const c = await connectH2({ port, sendPreface: false });
      clients.push(c);
      c.writeRaw(Buffer.from('PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n', 'latin1'));
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('a preface followed by anything but SETTINGS: PROTOCOL_ERROR', async () => {
      const c = await connectH2({ port, sendPreface: false });
      clients.push(c);
      c.preface();
      c.ping(Buffer.alloc(8));
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  // ---- §4 frames ------------------------------------------------------------------------------

  describe('4.1 frame format', () => {
    test('a frame of unknown type is ignored', async () => {
      const c = await open();
      c.writeFrame(0x16, 0, 0, Buffer.from('unknown frame'));
      c.writeFrame(0xff, 0xff, 1, Buffer.alloc(3));
      await ignored(c);
    });

    test('undefined flags are ignored (PING with flags 0x16 is answered)', async () => {
      const c = await open();
      const data = Buffer.from('flags!!!');
      c.writeFrame(PING, 0x16, 0, data);
      const ack = await c.waitFor((f) => f.type === PING, T, 'PING ACK');
      assert.equal(ack.flags, ACK);
      assert.deepEqual(ack.payload, data);
    });

    test('the reserved bit of the stream identifier is ignored', async () => {
      const c = await open();
      c.writeFrame(PING, 0, 0x80000000, Buffer.from('reserved'));
      const ack = await c.waitFor((f) => f.type === PING, T, 'PING ACK');
      assert.deepEqual(ack.payload, Buffer.from('reserved'));
      c.writeRaw(encodeFrame(HEADERS, END_HEADERS, 0x80000001, hpackLiteralBlock(grpcRequestHeaders(RLS))));
      c.data(1, grpcMessage(requestBody()), { endStream: true });
      await answered(c, 1);
    });
  });

  describe('4.2 frame size', () => {
    test('a DATA frame of exactly 2^14 octets is accepted', async () => {
      const c = await open();
      // A request message of 16379 bytes: with the 5-byte gRPC prefix, a 16384-byte DATA payload.
      let body = requestBody('x'.repeat(16_000));
      for (let n = 16_000; body.length < 16_379; n++) body = requestBody('x'.repeat(n));
      assert.equal(body.length, 16_379);
      c.headers(1, grpcRequestHeaders(RLS));
      c.data(1, grpcMessage(body), { endStream: true });
      assert.equal(grpcMessage(body).length, 16_384);
      await answered(c, 1);
    });

    test('a DATA frame over SETTINGS_MAX_FRAME_SIZE: FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.data(1, Buffer.alloc(16_385));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });

    test('a HEADERS frame over SETTINGS_MAX_FRAME_SIZE: FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS, { extra: [['x-big', 'v'.repeat(16_400)]] }));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });

    test('a declared length over the limit is refused from the frame header alone (no waiting for the payload)', async () => {
      const c = await open();
      c.writeRaw(encodeFrame(DATA, 0, 1, Buffer.alloc(0), 0xffffff));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });
  });

  describe('4.3 header compression and decompression', () => {
    test('an invalid header block fragment: COMPRESSION_ERROR', async () => {
      const c = await open();
      // A literal whose value claims 100 bytes, of which 3 follow.
      c.headers(1, Buffer.concat([Buffer.from([0x00]), hpackString('x-a'), Buffer.from([100, 0x61, 0x62, 0x63])]), { endStream: true });
      await connectionError(c, E.COMPRESSION_ERROR);
    });

    test('a PRIORITY frame while a header block is open: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS), { endHeaders: false });
      c.priority(1, 0);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('a HEADERS frame on another stream while a header block is open: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS), { endHeaders: false });
      c.headers(3, grpcRequestHeaders(RLS), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  // ---- §5 streams -----------------------------------------------------------------------------

  describe('5.1 stream states', () => {
    test('idle: DATA is a connection error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.data(1, Buffer.from('test'), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('idle: RST_STREAM is a connection error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.rstStream(1, E.CANCEL);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('idle: WINDOW_UPDATE is a connection error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.windowUpdate(1, 100);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('idle: CONTINUATION is a connection error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.continuation(1, grpcRequestHeaders(RLS));
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('idle: PRIORITY is accepted, and a lower stream id can still be opened', async () => {
      const c = await open();
      c.priority(3, 0, 200);
      c.priority(9, 3, 1, true);
      call(c, 1);
      await answered(c, 1);
    });

    test('half-closed (remote): DATA is a stream error STREAM_CLOSED', async () => {
      const c = await open();
      await halfClosedRemote(c, 1);
      c.data(1, Buffer.from('test'), { endStream: true });
      await streamError(c, 1, E.STREAM_CLOSED);
    });

    test('half-closed (remote): HEADERS is a stream error STREAM_CLOSED', async () => {
      const c = await open();
      await halfClosedRemote(c, 1);
      c.headers(1, [['x-trailer', '1']], { endStream: true });
      await streamError(c, 1, E.STREAM_CLOSED);
    });

    test('half-closed (remote): CONTINUATION (no header block open) is a connection error PROTOCOL_ERROR', async () => {
      // h2spec accepts STREAM_CLOSED or PROTOCOL_ERROR; a CONTINUATION outside a header block is
      // PROTOCOL_ERROR whatever the stream's state (§6.10).
      const c = await open();
      await halfClosedRemote(c, 1);
      c.continuation(1, [['x-a', '1']]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('half-closed (remote): WINDOW_UPDATE, PRIORITY and RST_STREAM are accepted', async () => {
      const c = await open();
      await halfClosedRemote(c, 1);
      c.windowUpdate(1, 1000);
      c.priority(1, 0, 100);
      await ignored(c);
      c.rstStream(1, E.CANCEL);
      await ignored(c);
      assert.equal(c.goawayCode, undefined);
    });

    test('closed (client sent RST_STREAM): DATA is a stream error STREAM_CLOSED', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.rstStream(1, E.CANCEL);
      c.data(1, Buffer.from('test'), { endStream: true });
      await streamError(c, 1, E.STREAM_CLOSED);
    });

    test('closed (client sent RST_STREAM): HEADERS is a stream error STREAM_CLOSED', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.rstStream(1, E.CANCEL);
      c.headers(1, grpcRequestHeaders(RLS), { endStream: true });
      await streamError(c, 1, E.STREAM_CLOSED);
    });

    test('closed (client sent RST_STREAM): CONTINUATION is a connection error PROTOCOL_ERROR', async () => {
      // h2spec accepts STREAM_CLOSED or PROTOCOL_ERROR; see the half-closed case.
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.rstStream(1, E.CANCEL);
      c.continuation(1, [['x-a', '1']]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('closed (after END_STREAM both ways): DATA is a connection error STREAM_CLOSED', async () => {
      const c = await open();
      call(c, 1);
      await answered(c, 1);
      c.data(1, Buffer.from('test'), { endStream: true });
      await connectionError(c, E.STREAM_CLOSED);
    });

    test('closed (after END_STREAM both ways): HEADERS is a connection error STREAM_CLOSED', async () => {
      const c = await open();
      call(c, 1);
      await answered(c, 1);
      c.headers(1, grpcRequestHeaders(RLS), { endStream: true });
      await connectionError(c, E.STREAM_CLOSED);
    });

    test('closed (after END_STREAM both ways): CONTINUATION is a connection error PROTOCOL_ERROR', async () => {
      const c = await open();
      call(c, 1);
      await answered(c, 1);
      c.continuation(1, [['x-a', '1']]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('closed (after END_STREAM both ways): WINDOW_UPDATE, PRIORITY and RST_STREAM are ignored', async () => {
      const c = await open();
      call(c, 1);
      await answered(c, 1);
      c.windowUpdate(1, 100);
      c.priority(1, 0);
      c.rstStream(1, E.CANCEL);
      await ignored(c);
    });

    test('closed by our RST_STREAM: the frames the client had in flight are ignored (§5.1 "closed")', async () => {
      const c = await open();
      // Upper case name: the server resets the stream with PROTOCOL_ERROR before reading on.
      c.headers(1, grpcRequestHeaders(RLS, { extra: [['X-Upper', '1']] }));
      assert.equal(await c.streamReset(1, T), E.PROTOCOL_ERROR);
      c.data(1, grpcMessage(requestBody()));
      c.headers(1, [['x-trailer', '1']], { endStream: true });
      await ignored(c);
      call(c, 3);
      await answered(c, 3);
    });

    test('closed long ago (beyond the 32 closings a connection remembers): DATA is a stream error STREAM_CLOSED (§6.1), never a connection error', async () => {
      // Deliberate simplification (docs/ratelimit.md "HTTP/2 conformance"): how a stream closed
      // is remembered for the last 32 closings only; older ones get §6.1's generic answer.
      const c = await open();
      for (let id = 1; id <= 67; id += 2) {
        call(c, id);
        await answered(c, id);
      }
      c.data(1, Buffer.from('late'), { endStream: true });
      await streamError(c, 1, E.STREAM_CLOSED);
      // Stream 67 closed recently: the same frame is the connection error of §5.1.
      c.data(67, Buffer.from('late'), { endStream: true });
      await connectionError(c, E.STREAM_CLOSED);
    });
  });

  describe('5.1.1 stream identifiers', () => {
    test('an even stream id: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(2, grpcRequestHeaders(RLS), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('a stream id smaller than the previous one: PROTOCOL_ERROR', async () => {
      const c = await open();
      call(c, 5);
      await answered(c, 5);
      c.headers(3, grpcRequestHeaders(RLS), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('a stream id smaller than one still open: PROTOCOL_ERROR', async () => {
      const c = await open();
      call(c, 5, 'hang');
      c.headers(3, grpcRequestHeaders(RLS), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  describe('5.1.2 stream concurrency', () => {
    test('a stream beyond SETTINGS_MAX_CONCURRENT_STREAMS is refused with REFUSED_STREAM; the others carry on', async () => {
      const c = await open([], smallPort);
      const s = c.received.find((f) => f.type === SETTINGS && f.flags === 0);
      assert.ok(s);
      assert.ok(decodeSettings(s.payload).some(([k, v]) => k === SettingId.MAX_CONCURRENT_STREAMS && v === 2), 'SETTINGS_MAX_CONCURRENT_STREAMS 2 advertised');
      call(c, 1, 'hang');
      call(c, 3, 'hang');
      call(c, 5);
      await streamError(c, 5, E.REFUSED_STREAM);
      c.rstStream(1, E.CANCEL);
      call(c, 7);
      await answered(c, 7);
    });
  });

  describe('5.3.1 stream dependencies', () => {
    test('HEADERS depending on its own stream: stream error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS), { priority: { dependsOn: 1, weight: 16 } });
      await streamError(c, 1, E.PROTOCOL_ERROR);
      call(c, 3);
      await answered(c, 3);
    });

    test('PRIORITY depending on its own stream: stream error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.priority(1, 1);
      await streamError(c, 1, E.PROTOCOL_ERROR);
    });
  });

  describe('5.4 error handling', () => {
    test('5.4.1 an invalid PING: GOAWAY first, then the TCP connection is closed', async () => {
      const c = await open();
      c.ping(Buffer.alloc(8), false, 3);
      await connectionError(c, E.PROTOCOL_ERROR);
      const last = c.received.at(-1);
      assert.equal(last?.type, GOAWAY, 'GOAWAY is the last frame before the close');
      assert.equal(c.lastGoaway?.lastStreamId, 0);
    });

    test('after a connection error the GOAWAY names the last stream processed', async () => {
      const c = await open();
      call(c, 1);
      await answered(c, 1);
      call(c, 3);
      await answered(c, 3);
      c.ping(Buffer.alloc(7));
      await connectionError(c, E.FRAME_SIZE_ERROR);
      assert.equal(c.lastGoaway?.lastStreamId, 3);
    });
  });

  describe('5.5 extending HTTP/2', () => {
    test('an unknown extension frame is ignored', async () => {
      const c = await open();
      c.writeFrame(0xef, 0x0, 0, Buffer.from('extension'));
      await ignored(c);
    });

    test('an unknown extension frame in the middle of a header block: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS), { endHeaders: false });
      c.writeFrame(0xef, 0x0, 1, Buffer.from('extension'));
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  // ---- §6 frame definitions ---------------------------------------------------------------

  describe('6.1 DATA', () => {
    test('DATA (one or several frames, with padding) is accepted', async () => {
      const c = await open();
      const msg = grpcMessage(requestBody());
      c.headers(1, grpcRequestHeaders(RLS));
      c.data(1, msg.subarray(0, 4), { padLength: 10 });
      c.data(1, msg.subarray(4, 9));
      c.data(1, msg.subarray(9), { endStream: true, padLength: 0 });
      await answered(c, 1);
    });

    test('DATA on stream 0: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.data(0, Buffer.from('test'), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('DATA with a pad length as long as the payload: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      // Payload: pad length 6 + 5 bytes: the padding would need 6.
      c.writeFrame(DATA, PADDED | END_STREAM, 1, Buffer.from([6, 0x74, 0x65, 0x73, 0x74, 0x21]));
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  describe('6.2 HEADERS', () => {
    test('HEADERS with padding and with priority is accepted', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS), { padLength: 20 });
      c.data(1, grpcMessage(requestBody()), { endStream: true });
      await answered(c, 1);
      c.headers(3, grpcRequestHeaders(RLS), { priority: { dependsOn: 0, weight: 256, exclusive: true }, padLength: 3 });
      c.data(3, grpcMessage(requestBody()), { endStream: true });
      await answered(c, 3);
    });

    test('HEADERS on stream 0: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(0, grpcRequestHeaders(RLS), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('HEADERS with padding longer than the rest of the payload: PROTOCOL_ERROR', async () => {
      const c = await open();
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS));
      c.writeFrame(HEADERS, PADDED | END_HEADERS | END_STREAM, 1, Buffer.concat([Buffer.from([block.length + 1]), block]));
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('HEADERS with PRIORITY and padding that leaves no room for the priority fields: FRAME_SIZE_ERROR', async () => {
      // Shorter than the mandatory fields (pad length + 5 priority bytes): the frame itself is
      // malformed, before any padding arithmetic.
      const c = await open();
      c.writeFrame(HEADERS, PADDED | FrameFlag.PRIORITY | END_HEADERS, 1, Buffer.from([0, 0, 0, 0]));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });

    test('HEADERS without END_HEADERS followed by PRIORITY: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS), { endHeaders: false });
      c.priority(3, 0);
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  describe('6.3 PRIORITY', () => {
    test('PRIORITY with weight 1, 256, a dependency and the exclusive flag is accepted', async () => {
      const c = await open();
      c.priority(1, 0, 1);
      c.priority(3, 0, 256);
      c.priority(5, 3, 16);
      c.priority(7, 3, 16, true);
      await ignored(c);
    });

    test('PRIORITY on stream 0: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.priority(0, 1);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('PRIORITY with a length other than 5: stream error FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.writeFrame(PRIORITY, 0, 1, Buffer.concat([priorityFields(0), Buffer.from([0])]));
      await streamError(c, 1, E.FRAME_SIZE_ERROR);
    });
  });

  describe('6.4 RST_STREAM', () => {
    test('RST_STREAM closes an open stream; the call is cancelled', async () => {
      const c = await open();
      const abortedBefore = svc.aborted.length;
      await halfClosedRemote(c, 1);
      c.rstStream(1, E.CANCEL);
      await waitFor(() => svc.aborted.length > abortedBefore, { timeoutMs: T, what: 'the service call of the reset stream to be aborted' });
      await ignored(c);
    });

    test('RST_STREAM on stream 0: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.rstStream(0, E.CANCEL);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('RST_STREAM on an idle stream: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.rstStream(1, E.CANCEL);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('RST_STREAM with a length other than 4: FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.writeFrame(RST_STREAM, 0, 1, Buffer.from([0, 0, 8]));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });
  });

  describe('6.5 SETTINGS', () => {
    test('SETTINGS is acknowledged at once with an empty ACK', async () => {
      const c = await open();
      c.settings([[SettingId.MAX_FRAME_SIZE, 20_000]]);
      const ack = await c.waitFor((f) => f.type === SETTINGS, T, 'SETTINGS ACK');
      assert.equal(ack.flags, ACK);
      assert.equal(ack.payload.length, 0);
    });

    test('SETTINGS ACK with a payload: FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.settingsAck(settingsPayload([[SettingId.ENABLE_PUSH, 0]]));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });

    test('SETTINGS on a stream: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.settings([[SettingId.ENABLE_PUSH, 0]], 1);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('SETTINGS with a length that is not a multiple of 6: FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.writeFrame(SETTINGS, 0, 0, Buffer.from([0, 2, 0]));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });

    test('SETTINGS_ENABLE_PUSH other than 0 or 1: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.settings([[SettingId.ENABLE_PUSH, 2]]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1: FLOW_CONTROL_ERROR', async () => {
      const c = await open();
      c.settings([[SettingId.INITIAL_WINDOW_SIZE, 2 ** 31]]);
      await connectionError(c, E.FLOW_CONTROL_ERROR);
    });

    test('SETTINGS_MAX_FRAME_SIZE below 2^14: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.settings([[SettingId.MAX_FRAME_SIZE, 16_383]]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('SETTINGS_MAX_FRAME_SIZE above 2^24-1: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.settings([[SettingId.MAX_FRAME_SIZE, 2 ** 24]]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('an unknown setting is ignored', async () => {
      const c = await open();
      c.settings([[0xff, 1], [0x1234, 0xffffffff]]);
      const ack = await c.waitFor((f) => f.type === SETTINGS, T, 'SETTINGS ACK');
      assert.equal(ack.flags, ACK);
      call(c, 1);
      await answered(c, 1);
    });

    test('6.5.3 several SETTINGS_INITIAL_WINDOW_SIZE values are applied in order (the last wins)', async () => {
      const c = await open();
      c.settings([[SettingId.INITIAL_WINDOW_SIZE, 100], [SettingId.INITIAL_WINDOW_SIZE, 1]]);
      await c.waitFor((f) => f.type === SETTINGS && f.flags === ACK, T, 'SETTINGS ACK');
      call(c, 1);
      const d = await c.waitFor((f) => f.type === DATA && f.streamId === 1, T, 'DATA');
      assert.equal(d.payload.length, 1);
    });
  });

  describe('6.7 PING', () => {
    test('PING is answered with an ACK carrying the same payload', async () => {
      const c = await open();
      const data = Buffer.from('h2 ping!');
      c.ping(data);
      const ack = await c.waitFor((f) => f.type === PING, T, 'PING ACK');
      assert.equal(ack.flags, ACK);
      assert.equal(ack.streamId, 0);
      assert.deepEqual(ack.payload, data);
    });

    test('a PING ACK is not answered', async () => {
      const c = await open();
      c.ping(Buffer.from('ack ack!'), true);
      c.ping(Buffer.from('answer!!'));
      const first = await c.waitFor((f) => f.type === PING, T, 'PING ACK');
      assert.deepEqual(first.payload, Buffer.from('answer!!'));
    });

    test('PING on a stream: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.ping(Buffer.alloc(8), false, 1);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('PING with a length other than 8: FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.ping(Buffer.alloc(6));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });
  });

  describe('6.8 GOAWAY', () => {
    test('GOAWAY on a stream: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.goawayFrame(0, E.NO_ERROR, '', 1);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('a client GOAWAY: calls in flight are answered, then the server closes without an error', async () => {
      const c = await open();
      call(c, 1, 'slow');
      c.goawayFrame(0, E.NO_ERROR);
      await answered(c, 1);
      assert.ok(await c.closedWithin(T), 'the server hangs up once the last stream is done');
      assert.ok(c.goawayCode === undefined || c.goawayCode === E.NO_ERROR, `GOAWAY ${String(c.goawayCode)}`);
    });
  });

  describe('6.9 WINDOW_UPDATE', () => {
    test('WINDOW_UPDATE on stream 0 and on a stream is accepted', async () => {
      const c = await open();
      c.windowUpdate(0, 1);
      await halfClosedRemote(c, 1);
      c.windowUpdate(1, 1);
      await ignored(c);
    });

    test('increment 0 on the connection: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.windowUpdate(0, 0);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('increment 0 on a stream: stream error PROTOCOL_ERROR', async () => {
      // RFC 9113 §6.9: an error on a stream's window is a stream error (h2spec accepts both).
      const c = await open();
      await halfClosedRemote(c, 1);
      c.windowUpdate(1, 0);
      await streamError(c, 1, E.PROTOCOL_ERROR);
    });

    test('a length other than 4: FRAME_SIZE_ERROR', async () => {
      const c = await open();
      c.writeFrame(WINDOW_UPDATE, 0, 0, Buffer.from([0, 0, 1]));
      await connectionError(c, E.FRAME_SIZE_ERROR);
    });

    test('the connection window above 2^31-1: FLOW_CONTROL_ERROR', async () => {
      const c = await open();
      c.windowUpdate(0, 0x7fffffff);
      await connectionError(c, E.FLOW_CONTROL_ERROR);
    });

    test('a stream window above 2^31-1: stream error FLOW_CONTROL_ERROR', async () => {
      const c = await open();
      await halfClosedRemote(c, 1);
      c.windowUpdate(1, 0x7fffffff);
      await streamError(c, 1, E.FLOW_CONTROL_ERROR);
    });

    test('6.9.1 with SETTINGS_INITIAL_WINDOW_SIZE 1 the server sends one byte of DATA, then the rest after WINDOW_UPDATE', async () => {
      const c = await open([[SettingId.INITIAL_WINDOW_SIZE, 1]]);
      call(c, 1);
      const d = await c.waitFor((f) => f.type === DATA && f.streamId === 1, T, 'DATA');
      assert.equal(d.payload.length, 1);
      await ignored(c);
      c.windowUpdate(1, 1000);
      await c.waitFor((f) => f.type === HEADERS && f.streamId === 1 && (f.flags & END_STREAM) !== 0, T, 'trailers');
      const total = c.received.filter((f) => f.type === DATA && f.streamId === 1).reduce((n, f) => n + f.payload.length, 0);
      assert.ok(total > 5, `whole message sent (${total} bytes)`);
    });

    test('6.9.2 SETTINGS_INITIAL_WINDOW_SIZE changed after HEADERS adjusts the open streams', async () => {
      const c = await open([[SettingId.INITIAL_WINDOW_SIZE, 0]]);
      call(c, 1);
      await c.waitFor((f) => f.type === HEADERS && f.streamId === 1, T, 'response HEADERS');
      await ignored(c);
      c.settings([[SettingId.INITIAL_WINDOW_SIZE, 1]]);
      const d = await c.waitFor((f) => f.type === DATA && f.streamId === 1, T, 'DATA');
      assert.equal(d.payload.length, 1);
    });

    test('6.9.2 a SETTINGS change may make a stream window negative; it is tracked', async () => {
      const c = await open([[SettingId.INITIAL_WINDOW_SIZE, 3]]);
      call(c, 1);
      const d = await c.waitFor((f) => f.type === DATA && f.streamId === 1, T, 'DATA');
      assert.equal(d.payload.length, 3);
      c.settings([[SettingId.INITIAL_WINDOW_SIZE, 2]]); // window 3-3 -> -1
      await c.waitFor((f) => f.type === SETTINGS && f.flags === ACK, T, 'SETTINGS ACK');
      c.windowUpdate(1, 1); // -1 -> 0: still nothing may be sent
      await ignored(c);
      c.windowUpdate(1, 1); // 0 -> 1
      const d2 = await c.waitFor((f) => f.type === DATA && f.streamId === 1, T, 'DATA');
      assert.equal(d2.payload.length, 1);
    });

    test('6.9.2 a SETTINGS_INITIAL_WINDOW_SIZE change that takes a stream window above 2^31-1: FLOW_CONTROL_ERROR', async () => {
      const c = await open();
      await halfClosedRemote(c, 1);
      // Stream window: 65535 + (2^31-1 - 65535) = 2^31-1; one more octet of initial window overflows it.
      c.windowUpdate(1, 0x7fffffff - 65_535);
      await c.pingRoundTrip(T);
      c.settings([[SettingId.INITIAL_WINDOW_SIZE, 65_536]]);
      await connectionError(c, E.FLOW_CONTROL_ERROR);
    });
  });

  describe('6.10 CONTINUATION', () => {
    test('a header block in HEADERS and several CONTINUATION frames is accepted', async () => {
      const c = await open();
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS));
      c.headers(1, block.subarray(0, 7), { endHeaders: false });
      c.continuation(1, block.subarray(7, 30), false);
      c.continuation(1, block.subarray(30, 31), false);
      c.continuation(1, block.subarray(31), true);
      c.data(1, grpcMessage(requestBody()), { endStream: true });
      await answered(c, 1);
    });

    test('CONTINUATION followed by a frame other than CONTINUATION: PROTOCOL_ERROR', async () => {
      const c = await open();
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS));
      c.headers(1, block.subarray(0, 10), { endHeaders: false });
      c.continuation(1, block.subarray(10), false);
      c.data(1, grpcMessage(requestBody()), { endStream: true });
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('CONTINUATION on stream 0: PROTOCOL_ERROR', async () => {
      const c = await open();
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS));
      c.headers(1, block.subarray(0, 10), { endHeaders: false });
      c.continuation(0, block.subarray(10), true);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('CONTINUATION after HEADERS with END_HEADERS: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.continuation(1, [['x-a', '1']]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('CONTINUATION after CONTINUATION with END_HEADERS: PROTOCOL_ERROR', async () => {
      const c = await open();
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS));
      c.headers(1, block.subarray(0, 10), { endHeaders: false });
      c.continuation(1, block.subarray(10), true);
      c.continuation(1, [['x-a', '1']]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('CONTINUATION after DATA: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.data(1, grpcMessage(requestBody()));
      c.continuation(1, [['x-a', '1']]);
      await connectionError(c, E.PROTOCOL_ERROR);
    });

    test('CONTINUATION for another stream than the open header block: PROTOCOL_ERROR', async () => {
      const c = await open();
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS));
      c.headers(1, block.subarray(0, 10), { endHeaders: false });
      c.continuation(3, block.subarray(10), true);
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  describe('7 error codes', () => {
    test('GOAWAY with an unknown error code: no special behaviour (the idle connection is closed cleanly)', async () => {
      const c = await open();
      c.goawayFrame(0, 0xff);
      c.ping(Buffer.from('h2spec!!'));
      // The server either answers the PING or hangs up as after any GOAWAY; never an error.
      await c.waitFor((f) => f.type === PING, T, 'PING ACK').catch(() => undefined);
      assert.ok(await c.closedWithin(T), 'the idle connection is closed after the client GOAWAY');
      assert.ok(c.goawayCode === undefined || c.goawayCode === E.NO_ERROR, `GOAWAY ${String(c.goawayCode)}`);
    });

    test('RST_STREAM with an unknown error code: no special behaviour', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.rstStream(1, 0xff);
      await ignored(c);
      call(c, 3);
      await answered(c, 3);
    });
  });

  // ---- §8 HTTP semantics ----------------------------------------------------------------------

  describe('8.1 HTTP request/response exchange', () => {
    test('POST is answered; so is a POST whose body ends with trailers', async () => {
      const c = await open();
      call(c, 1);
      await answered(c, 1);
      c.headers(3, grpcRequestHeaders(RLS));
      c.data(3, grpcMessage(requestBody()));
      c.headers(3, [['x-trailer', 'yes']], { endStream: true });
      await answered(c, 3);
    });

    test('GET and HEAD get a complete answer (an HTTP error status, the stream ended)', async () => {
      const c = await open();
      for (const [id, method] of [[1, 'GET'], [3, 'HEAD']] as const) {
        c.headers(id, [[':method', method], [':scheme', 'http'], [':path', '/'], [':authority', 'localhost']], { endStream: true });
        const h = await c.waitFor((f) => f.type === HEADERS && f.streamId === id, T, `answer to ${method}`);
        assert.ok(field(h, ':status') !== undefined, `${method}: ${JSON.stringify(h.fields)}`);
        if ((h.flags & END_STREAM) === 0) await c.waitFor((f) => f.streamId === id && (f.flags & END_STREAM) !== 0 && f.type !== PING, T, `end of ${method}`);
      }
      await c.pingRoundTrip(T);
    });

    test('a second HEADERS without END_STREAM: stream error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.headers(1, [['x-trailer', '1']]);
      await streamError(c, 1, E.PROTOCOL_ERROR);
    });
  });

  describe('8.1.2 HTTP header fields (malformed requests are stream errors PROTOCOL_ERROR)', () => {
    const malformed: [string, () => HeaderField[]][] = [
      ['an upper-case field name', () => grpcRequestHeaders(RLS, { extra: [['X-Test', 'ok']] })],
      ['an unknown pseudo-header', () => [[':method', 'POST'], [':scheme', 'http'], [':path', RLS], [':foo', 'bar'], ['content-type', 'application/grpc']]],
      ['a response pseudo-header (:status)', () => [[':method', 'POST'], [':scheme', 'http'], [':path', RLS], [':status', '200'], ['content-type', 'application/grpc']]],
      ['a pseudo-header after a regular field', () => [[':method', 'POST'], [':scheme', 'http'], ['content-type', 'application/grpc'], [':path', RLS]]],
      ['a connection-specific field (connection)', () => grpcRequestHeaders(RLS, { extra: [['connection', 'keep-alive']] })],
      ['a connection-specific field (transfer-encoding)', () => grpcRequestHeaders(RLS, { extra: [['transfer-encoding', 'chunked']] })],
      ['TE other than "trailers"', () => [[':method', 'POST'], [':scheme', 'http'], [':path', RLS], ['te', 'trailers, deflate']]],
      ['an empty :path', () => [[':method', 'POST'], [':scheme', 'http'], [':path', ''], [':authority', 'localhost']]],
      ['no :method', () => [[':scheme', 'http'], [':path', RLS], [':authority', 'localhost']]],
      ['no :scheme', () => [[':method', 'POST'], [':path', RLS], [':authority', 'localhost']]],
      ['no :path', () => [[':method', 'POST'], [':scheme', 'http'], [':authority', 'localhost']]],
      ['a duplicated :method', () => [[':method', 'POST'], [':method', 'POST'], [':scheme', 'http'], [':path', RLS]]],
      ['a duplicated :scheme', () => [[':method', 'POST'], [':scheme', 'http'], [':scheme', 'http'], [':path', RLS]]],
      ['a duplicated :path', () => [[':method', 'POST'], [':scheme', 'http'], [':path', RLS], [':path', RLS]]],
      ['a content-length that is not a number', () => grpcRequestHeaders(RLS, { extra: [['content-length', '12a']] })],
    ];
    for (const [what, fields] of malformed) {
      test(`${what}: stream error PROTOCOL_ERROR`, async () => {
        const c = await open();
        const seen = svc.seen.length;
        c.headers(1, fields(), { endStream: true });
        await streamError(c, 1, E.PROTOCOL_ERROR);
        assert.equal(svc.seen.length, seen, 'a malformed request never reaches the service');
      });
    }

    test('a pseudo-header in trailers: stream error PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.data(1, grpcMessage(requestBody()));
      c.headers(1, [[':method', 'POST']], { endStream: true });
      await streamError(c, 1, E.PROTOCOL_ERROR);
    });

    test('content-length different from the DATA payload: stream error PROTOCOL_ERROR', async () => {
      const c = await open();
      const msg = grpcMessage(requestBody());
      c.headers(1, grpcRequestHeaders(RLS, { extra: [['content-length', String(msg.length + 1)]] }));
      c.data(1, msg, { endStream: true });
      await streamError(c, 1, E.PROTOCOL_ERROR);
    });

    test('content-length different from the sum of several DATA payloads: stream error PROTOCOL_ERROR', async () => {
      const c = await open();
      const msg = grpcMessage(requestBody());
      c.headers(1, grpcRequestHeaders(RLS, { extra: [['content-length', String(msg.length - 1)]] }));
      c.data(1, msg.subarray(0, 5));
      c.data(1, msg.subarray(5), { endStream: true });
      await streamError(c, 1, E.PROTOCOL_ERROR);
    });

    test('a correct content-length is accepted', async () => {
      const c = await open();
      const msg = grpcMessage(requestBody());
      c.headers(1, grpcRequestHeaders(RLS, { extra: [['content-length', String(msg.length)]] }));
      c.data(1, msg.subarray(0, 5));
      c.data(1, msg.subarray(5), { endStream: true });
      await answered(c, 1);
    });
  });

  describe('8.2 server push', () => {
    test('PUSH_PROMISE from a client: PROTOCOL_ERROR', async () => {
      const c = await open();
      c.headers(1, grpcRequestHeaders(RLS));
      c.writeFrame(PUSH_PROMISE, END_HEADERS, 1, Buffer.concat([u32(2), hpackLiteralBlock(grpcRequestHeaders(RLS))]));
      await connectionError(c, E.PROTOCOL_ERROR);
    });
  });

  // ---- RFC 7541 HPACK ---------------------------------------------------------------------------

  describe('HPACK representations (RFC 7541 §6) are accepted', () => {
    // Huffman-coded strings from RFC 7541 Appendix C.4 and C.6.
    const HUFF_WWW_EXAMPLE_COM = Buffer.from('f1e3c2e5f23a6ba0ab90f4ff', 'hex');
    const HUFF_CUSTOM_KEY = Buffer.from('25a849e95ba97d7f', 'hex');
    const HUFF_CUSTOM_VALUE = Buffer.from('25a849e95bb8e8b4bf', 'hex');
    const huff = (b: Buffer): Buffer => Buffer.concat([hpackInteger(b.length, 7, 0x80), b]);
    // :method POST (static 3), :scheme http (static 6), :path (static name 4) RLS, content-type (31), te.
    const indexedStart = (): Buffer => Buffer.concat([Buffer.from([0x83, 0x86]), hpackInteger(4, 4, 0x00), hpackString(RLS)]);
    const tail = hpackLiteralBlock([['content-type', 'application/grpc'], ['te', 'trailers']]);

    const blocks: [string, () => Buffer][] = [
      ['indexed fields', () => Buffer.concat([indexedStart(), tail])],
      ['literal with incremental indexing, indexed name', () => Buffer.concat([indexedStart(), hpackInteger(1, 6, 0x40), hpackString('localhost'), tail])],
      ['literal with incremental indexing, indexed name, Huffman value', () => Buffer.concat([indexedStart(), hpackInteger(1, 6, 0x40), huff(HUFF_WWW_EXAMPLE_COM), tail])],
      ['literal with incremental indexing, new name', () => Buffer.concat([indexedStart(), Buffer.from([0x40]), hpackString('custom-key'), hpackString('custom-value'), tail])],
      ['literal with incremental indexing, new name, Huffman', () => Buffer.concat([indexedStart(), Buffer.from([0x40]), huff(HUFF_CUSTOM_KEY), huff(HUFF_CUSTOM_VALUE), tail])],
      ['literal without indexing, indexed name', () => Buffer.concat([indexedStart(), hpackInteger(1, 4, 0x00), hpackString('localhost'), tail])],
      ['literal without indexing, indexed name, Huffman value', () => Buffer.concat([indexedStart(), hpackInteger(1, 4, 0x00), huff(HUFF_WWW_EXAMPLE_COM), tail])],
      ['literal without indexing, new name', () => Buffer.concat([indexedStart(), Buffer.from([0x00]), hpackString('custom-key'), hpackString('custom-value'), tail])],
      ['literal without indexing, new name, Huffman', () => Buffer.concat([indexedStart(), Buffer.from([0x00]), huff(HUFF_CUSTOM_KEY), huff(HUFF_CUSTOM_VALUE), tail])],
      ['literal never indexed, indexed name', () => Buffer.concat([indexedStart(), hpackInteger(1, 4, 0x10), hpackString('localhost'), tail])],
      ['literal never indexed, indexed name, Huffman value', () => Buffer.concat([indexedStart(), hpackInteger(1, 4, 0x10), huff(HUFF_WWW_EXAMPLE_COM), tail])],
      ['literal never indexed, new name', () => Buffer.concat([indexedStart(), Buffer.from([0x10]), hpackString('custom-key'), hpackString('custom-value'), tail])],
      ['literal never indexed, new name, Huffman', () => Buffer.concat([indexedStart(), Buffer.from([0x10]), huff(HUFF_CUSTOM_KEY), huff(HUFF_CUSTOM_VALUE), tail])],
      ['a dynamic table size update', () => Buffer.concat([hpackInteger(0, 5, 0x20), indexedStart(), tail])],
      ['several dynamic table size updates', () => Buffer.concat([hpackInteger(0, 5, 0x20), hpackInteger(4096, 5, 0x20), indexedStart(), tail])],
    ];
    for (const [what, block] of blocks) {
      test(what, async () => {
        const c = await open();
        c.headers(1, block());
        c.data(1, grpcMessage(requestBody()), { endStream: true });
        await answered(c, 1);
      });
    }

    test('a field inserted into the dynamic table is found again by index in the next block', async () => {
      const c = await open();
      // Insert "x-custom: 1" (incremental indexing, new name), then refer to it as index 62.
      c.headers(1, Buffer.concat([indexedStart(), Buffer.from([0x40]), hpackString('x-custom'), hpackString('1'), tail]));
      c.data(1, grpcMessage(requestBody()), { endStream: true });
      await answered(c, 1);
      c.headers(3, Buffer.concat([indexedStart(), hpackInteger(62, 7, 0x80), tail]));
      c.data(3, grpcMessage(requestBody()), { endStream: true });
      await answered(c, 3);
    });
  });

  describe('HPACK decoding errors (RFC 7541) are connection errors COMPRESSION_ERROR', () => {
    const invalid: [string, Buffer][] = [
      ['2.3.3 an indexed field beyond the tables (index 62, empty dynamic table)', hpackInteger(62, 7, 0x80)],
      ['2.3.3 a literal whose name index is beyond the tables', Buffer.concat([hpackInteger(70, 4, 0x00), hpackString('v')])],
      ['4.2 a dynamic table size update at the end of the block', Buffer.concat([hpackLiteralBlock(grpcRequestHeaders(RLS)), hpackInteger(0, 5, 0x20)])],
      ['6.3 a dynamic table size update larger than SETTINGS_HEADER_TABLE_SIZE', Buffer.concat([hpackInteger(4097, 5, 0x20), hpackLiteralBlock(grpcRequestHeaders(RLS))])],
      // 'a' is 00011 (5 bits): padding of 3 ones, then a whole byte of ones (11 bits of padding).
      ['5.2 a Huffman string with padding longer than 7 bits', Buffer.concat([Buffer.from([0x00]), hpackString('x-a'), Buffer.from([0x82, 0x1f, 0xff])])],
      // 'a' then 000: padding that is not the most significant bits of EOS.
      ['5.2 a Huffman string padded with zeros', Buffer.concat([Buffer.from([0x00]), hpackString('x-a'), Buffer.from([0x81, 0x18])])],
      // 32 ones: the 30-bit EOS symbol followed by two bits of padding.
      ['5.2 a Huffman string containing EOS', Buffer.concat([Buffer.from([0x00]), hpackString('x-a'), Buffer.from([0x84, 0xff, 0xff, 0xff, 0xff])])],
      ['6.1 an indexed field with index 0', Buffer.from([0x80])],
      ['5.1 an integer that overflows (index of 2^63 and more)', Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])],
      ['5.1 an integer truncated by the end of the block', Buffer.from([0xff, 0x80])],
      ['5.2 a string literal longer than the block', Buffer.concat([Buffer.from([0x00]), hpackString('x-a'), Buffer.from([0x7f, 0x20, 0x61])])],
    ];
    for (const [what, block] of invalid) {
      test(what, async () => {
        const c = await open();
        c.headers(1, block, { endStream: true });
        await connectionError(c, E.COMPRESSION_ERROR);
      });
    }

    test('a decoding error in a CONTINUATION frame is a COMPRESSION_ERROR too', async () => {
      const c = await open();
      c.headers(1, hpackLiteralBlock(grpcRequestHeaders(RLS)), { endHeaders: false });
      c.continuation(1, Buffer.from([0x80]), true);
      await connectionError(c, E.COMPRESSION_ERROR);
    });
  });

  // ---- the client's TLS path, and the server after all of the above ------------------------

  describe('TLS with ALPN h2', () => {
    test('the same frames over TLS: ALPN selects h2 and a call is answered', async () => {
      const dir = tempDir('h2-conf-tls-');
      const pki = selfSignedCert(dir.path);
      const tlsServer = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth(), tls: { key: pki.key, cert: pki.cert } });
      await tlsServer.listen('127.0.0.1', 0);
      try {
        const tlsPort = (tlsServer.address() as { port: number }).port;
        const c = await connectH2({ port: tlsPort, tls: { ca: pki.cert, servername: 'localhost' } });
        clients.push(c);
        await c.handshake(T);
        call(c, 1);
        await answered(c, 1);
        c.windowUpdate(0, 0);
        await connectionError(c, E.PROTOCOL_ERROR);
      } finally {
        await tlsServer.close(500);
        dir.cleanup();
      }
    });
  });

  test('the server still serves new connections after every violation above', async () => {
    const c = await open();
    call(c, 1);
    await answered(c, 1);
    assert.equal(c.goawayCode, undefined);
  });
});
