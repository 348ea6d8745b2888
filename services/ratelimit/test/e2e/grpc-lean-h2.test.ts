// The lean HTTP/2 transport at the frame level: a raw TCP client writes frames byte by byte
// (padding, CONTINUATION, small windows, protocol violations) and reads the server's frames back
// through our HPACK decoder; node:http2 and h2load (nghttp2) drive many concurrent streams. Every
// violation must end in the right GOAWAY or RST_STREAM code, never a crash, and the server keeps
// serving other connections.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { join } from 'node:path';
import { encodeRateLimitRequest } from '@rls/rls-proto';
import { tempDir, waitFor } from '@rls/testkit';
import { createGrpcServer, type GrpcServer } from '../../src/server/grpc-server.js';
import * as F from '../../src/server/h2/frames.js';
import { HpackDecoder } from '../../src/server/h2/hpack-decoder.js';
import { grpcJsStubs, scriptedService, TestHealth, unaryCall } from '../support/server-test-support.js';

const RLS = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

interface Frame {
  type: number;
  flags: number;
  id: number;
  payload: Buffer;
  /** HEADERS: the decoded fields. */
  fields?: [string, string][];
}

/** Request fields as literals without indexing (lengths < 127). */
function fieldBlock(fields: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [n, v] of fields) parts.push(Buffer.from([0x00, n.length]), Buffer.from(n, 'latin1'), Buffer.from([v.length]), Buffer.from(v, 'latin1'));
  return Buffer.concat(parts);
}

function requestFields(extra: [string, string][] = []): [string, string][] {
  return [[':method', 'POST'], [':scheme', 'http'], [':path', RLS], [':authority', 'localhost'], ['content-type', 'application/grpc'], ['te', 'trailers'], ...extra];
}

function grpcBody(domain: string): Buffer {
  const msg = encodeRateLimitRequest({ domain, descriptors: [{ entries: [{ key: 'a', value: 'b' }] }], hitsAddend: 0 });
  const out = Buffer.alloc(5 + msg.length);
  out.writeUInt32BE(msg.length, 1);
  msg.copy(out, 5);
  return out;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

class RawClient {
  readonly socket: net.Socket;
  readonly frames: Frame[] = [];
  readonly decoder = new HpackDecoder();
  closed = false;
  private buf = Buffer.alloc(0);

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (c: Buffer) => this.onData(c));
    socket.on('error', () => undefined);
    socket.on('close', () => (this.closed = true));
  }

  static async connect(port: number, opts: { preface?: Buffer; settings?: [number, number][] } = {}): Promise<RawClient> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const c = new RawClient(socket);
    socket.write(opts.preface ?? F.PREFACE);
    if (opts.preface === undefined) c.send(F.SETTINGS, 0, 0, F.settingsPayload(opts.settings ?? []));
    return c;
  }

  private onData(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 9) {
      const len = this.buf.readUIntBE(0, 3);
      if (this.buf.length < 9 + len) break;
      const frame: Frame = { type: this.buf[3]!, flags: this.buf[4]!, id: this.buf.readUInt32BE(5) & 0x7fffffff, payload: this.buf.subarray(9, 9 + len) };
      // Header blocks are decoded as they arrive, in connection order, as a client's HPACK
      // decoder must (the server's blocks refer to its earlier insertions by index).
      if (frame.type === F.HEADERS) {
        const out: string[] = [];
        this.decoder.decode(frame.payload, out, 1 << 20);
        frame.fields = [];
        for (let i = 0; i < out.length; i += 2) frame.fields.push([out[i]!, out[i + 1]!]);
      }
      this.frames.push(frame);
      this.buf = this.buf.subarray(9 + len);
    }
  }

  send(type: number, flags: number, id: number, payload: Buffer = Buffer.alloc(0)): void {
    this.socket.write(F.frame(type, flags, id, payload));
  }

  /** A raw frame header with any declared length (for size violations). */
  sendRaw(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  async waitFrame(pred: (f: Frame) => boolean, what: string): Promise<Frame> {
    let found: Frame | undefined;
    await waitFor(() => (found = this.frames.find(pred)) !== undefined, { what, timeoutMs: 5000 });
    return found!;
  }

  async goawayCode(): Promise<number> {
    const g = await this.waitFrame((f) => f.type === F.GOAWAY, 'GOAWAY');
    await waitFor(() => this.closed, { what: 'the server to close the connection', timeoutMs: 5000 });
    return g.payload.readUInt32BE(4);
  }

  /** Sends a PING and waits for its ACK: everything the server wrote before it has arrived. */
  async roundTrip(): Promise<void> {
    const data = Buffer.from(Math.random().toString(16).slice(2, 10).padEnd(8, '0'));
    this.send(F.PING, 0, 0, data);
    await this.waitFrame((f) => f.type === F.PING && (f.flags & F.FLAG_ACK) !== 0 && f.payload.equals(data), 'PING ACK');
  }

  /** Waits until a PING is answered or the server closed the connection. */
  async settle(): Promise<void> {
    const data = Buffer.from('settled!');
    if (!this.closed) this.send(F.PING, 0, 0, data);
    const acked = (f: Frame): boolean => f.type === F.PING && (f.flags & F.FLAG_ACK) !== 0 && f.payload.equals(data);
    await waitFor(() => this.closed || this.frames.some(acked), { what: 'PING ACK or close', timeoutMs: 5000 });
  }

  /** Decoded fields of every HEADERS frame of a stream, in order (our blocks fit one frame). */
  headerBlocks(id: number): [string, string][][] {
    return this.frames
      .filter((f) => f.type === F.HEADERS && f.id === id)
      .map((f) => f.fields!);
  }

  dataOf(id: number): Buffer {
    return Buffer.concat(this.frames.filter((f) => f.type === F.DATA && f.id === id).map((f) => f.payload));
  }

  close(): void {
    this.socket.destroy();
  }
}

const endOf = (id: number) => (f: Frame): boolean => f.id === id && (f.flags & F.FLAG_END_STREAM) !== 0;

describe('lean HTTP/2 transport: frames', () => {
  const svc = scriptedService();
  let server: GrpcServer;
  let port: number;

  before(async () => {
    server = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    await server.close(500);
  });

  test('server preface: SETTINGS with our limits and a connection WINDOW_UPDATE; our SETTINGS ACKed', async () => {
    const c = await RawClient.connect(port);
    try {
      const s = await c.waitFrame((f) => f.type === F.SETTINGS && f.flags === 0, 'server SETTINGS');
      const values = new Map<number, number>();
      for (let i = 0; i < s.payload.length; i += 6) values.set(s.payload.readUInt16BE(i), s.payload.readUInt32BE(i + 2));
      assert.equal(values.get(F.SETTINGS_MAX_CONCURRENT_STREAMS), 1000);
      // GRPC_STREAM_WINDOW and GRPC_MAX_HEADER_LIST_SIZE defaults; the connection window widens
      // only once request bytes flow (issue 12: grpc-hostile.test.ts).
      assert.equal(values.get(F.SETTINGS_INITIAL_WINDOW_SIZE), 65_535);
      assert.equal(values.get(F.SETTINGS_MAX_HEADER_LIST_SIZE), 16_384);
      assert.ok(!values.has(F.SETTINGS_ENABLE_PUSH) || values.get(F.SETTINGS_ENABLE_PUSH) === 0);
      await c.waitFrame((f) => f.type === F.SETTINGS && f.flags === F.FLAG_ACK, 'SETTINGS ACK');
      await c.roundTrip();
    } finally {
      c.close();
    }
  });

  test('a request in HEADERS + CONTINUATION frames with padding, and padded DATA, is answered', async () => {
    const c = await RawClient.connect(port);
    try {
      const block = fieldBlock(requestFields());
      const a = block.subarray(0, 10);
      const b = block.subarray(10, 40);
      const rest = block.subarray(40);
      // HEADERS: PADDED (3 bytes of padding) + PRIORITY fields, no END_HEADERS.
      c.send(F.HEADERS, F.FLAG_PADDED | F.FLAG_PRIORITY, 1, Buffer.concat([Buffer.from([3]), u32(0), Buffer.from([15]), a, Buffer.alloc(3)]));
      c.send(F.CONTINUATION, 0, 1, b);
      c.send(F.CONTINUATION, F.FLAG_END_HEADERS, 1, rest);
      const body = grpcBody('split');
      c.send(F.DATA, F.FLAG_PADDED, 1, Buffer.concat([Buffer.from([7]), body.subarray(0, 6), Buffer.alloc(7)]));
      c.send(F.DATA, F.FLAG_END_STREAM, 1, body.subarray(6));
      await c.waitFrame(endOf(1), 'end of the response');
      const [headers, trailers] = c.headerBlocks(1);
      assert.deepEqual(headers, [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-accept-encoding', 'identity,gzip']]);
      assert.deepEqual(trailers, [['grpc-status', '0']]);
      const data = c.dataOf(1);
      assert.equal(data.readUInt32BE(1), data.length - 5);
      assert.equal(svc.seen.at(-1)?.domain, 'split');
    } finally {
      c.close();
    }
  });

  test('flow control: a response larger than the peer window waits for WINDOW_UPDATE', async () => {
    const c = await RawClient.connect(port, { settings: [[F.SETTINGS_INITIAL_WINDOW_SIZE, 8]] });
    try {
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 1, fieldBlock(requestFields()));
      c.send(F.DATA, F.FLAG_END_STREAM, 1, grpcBody('window'));
      await waitFor(() => c.dataOf(1).length === 8, { what: 'the first 8 bytes' });
      await c.roundTrip();
      assert.equal(c.dataOf(1).length, 8, 'nothing beyond the window');
      assert.equal(c.frames.some(endOf(1)), false, 'no trailers before the rest of the data');
      c.send(F.WINDOW_UPDATE, 0, 1, u32(4));
      await waitFor(() => c.dataOf(1).length === 12, { what: '4 more bytes' });
      await c.roundTrip();
      assert.equal(c.dataOf(1).length, 12);
      c.send(F.WINDOW_UPDATE, 0, 1, u32(100_000));
      await c.waitFrame(endOf(1), 'trailers after the window opened');
      const data = c.dataOf(1);
      assert.equal(data.readUInt32BE(1), data.length - 5);
      assert.ok(data.length > 12);
      assert.deepEqual(c.headerBlocks(1)[1], [['grpc-status', '0']]);
    } finally {
      c.close();
    }
  });

  test('a changed SETTINGS_HEADER_TABLE_SIZE is acknowledged by a table size update in our next block', async () => {
    const c = await RawClient.connect(port, { settings: [[F.SETTINGS_HEADER_TABLE_SIZE, 0]] });
    try {
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 1, fieldBlock(requestFields()));
      c.send(F.DATA, F.FLAG_END_STREAM, 1, grpcBody('table'));
      await c.waitFrame(endOf(1), 'response');
      const first = c.frames.find((f) => f.type === F.HEADERS && f.id === 1)!;
      assert.equal(first.payload[0], 0x20);
      assert.equal(c.headerBlocks(1)[0]?.[0]?.[1], '200');
    } finally {
      c.close();
    }
  });

  test('the fixed response fields enter the client\'s HPACK table once and go by index afterwards', async () => {
    // An explicit SETTINGS_HEADER_TABLE_SIZE of the default changes nothing.
    const c = await RawClient.connect(port, { settings: [[F.SETTINGS_HEADER_TABLE_SIZE, 4096]] });
    const OK_FIELDS = [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-accept-encoding', 'identity,gzip']];
    try {
      for (const id of [1, 3, 5]) {
        c.send(F.HEADERS, F.FLAG_END_HEADERS, id, fieldBlock(requestFields()));
        c.send(F.DATA, F.FLAG_END_STREAM, id, grpcBody('indexed'));
        await c.waitFrame(endOf(id), `response ${id}`);
        assert.deepEqual(c.headerBlocks(id), [OK_FIELDS, [['grpc-status', '0']]]);
      }
      const blocks = (id: number): string[] => c.frames.filter((f) => f.type === F.HEADERS && f.id === id).map((f) => f.payload.toString('hex'));
      // First: literals with incremental indexing (01xxxxxx), no size update.
      const [h1, t1] = blocks(1);
      assert.equal(h1!.slice(0, 4), '885f');
      assert.equal(t1!.slice(0, 2), '40');
      // Then: indexed fields only (content-type 64, grpc-accept-encoding 63; grpc-status 62).
      for (const id of [3, 5]) assert.deepEqual(blocks(id), ['88c0bf', 'be']);
      assert.deepEqual(c.decoder.dynamicEntries(), [['grpc-status', '0'], ['grpc-accept-encoding', 'identity,gzip'], ['content-type', 'application/grpc']]);

      // The client shrinks its table: our next block empties it (size update to 0), literals from then on.
      c.send(F.SETTINGS, 0, 0, F.settingsPayload([[F.SETTINGS_HEADER_TABLE_SIZE, 100]]));
      await c.roundTrip();
      for (const id of [7, 9]) {
        c.send(F.HEADERS, F.FLAG_END_HEADERS, id, fieldBlock(requestFields()));
        c.send(F.DATA, F.FLAG_END_STREAM, id, grpcBody('shrunk'));
        await c.waitFrame(endOf(id), `response ${id}`);
        assert.deepEqual(c.headerBlocks(id), [OK_FIELDS, [['grpc-status', '0']]]);
      }
      assert.equal(blocks(7)[0]!.slice(0, 2), '20');
      assert.equal(blocks(9)[0]!.slice(0, 2), '88');
      assert.deepEqual(c.decoder.dynamicEntries(), []);
    } finally {
      c.close();
    }
  });

  test('PING is answered with the same payload', async () => {
    const c = await RawClient.connect(port);
    try {
      c.send(F.PING, 0, 0, Buffer.from('12345678'));
      const ack = await c.waitFrame((f) => f.type === F.PING && f.flags === F.FLAG_ACK, 'PING ACK');
      assert.equal(ack.payload.toString(), '12345678');
    } finally {
      c.close();
    }
  });

  test('stream errors: DATA after END_STREAM, an upper-case name, a missing :path, trailers without END_STREAM', async () => {
    const c = await RawClient.connect(port);
    try {
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 1, fieldBlock(requestFields()));
      c.send(F.DATA, F.FLAG_END_STREAM, 1, grpcBody('hang'));
      c.send(F.DATA, 0, 1, Buffer.from('late'));
      const rst1 = await c.waitFrame((f) => f.type === F.RST_STREAM && f.id === 1, 'RST_STREAM 1');
      assert.equal(rst1.payload.readUInt32BE(0), F.STREAM_CLOSED);
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 3, fieldBlock([...requestFields(), ['X-Upper', 'v']]));
      const rst3 = await c.waitFrame((f) => f.type === F.RST_STREAM && f.id === 3, 'RST_STREAM 3');
      assert.equal(rst3.payload.readUInt32BE(0), F.PROTOCOL_ERROR);
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 5, fieldBlock(requestFields().filter(([n]) => n !== ':path')));
      const rst5 = await c.waitFrame((f) => f.type === F.RST_STREAM && f.id === 5, 'RST_STREAM 5');
      assert.equal(rst5.payload.readUInt32BE(0), F.PROTOCOL_ERROR);
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 7, fieldBlock(requestFields()));
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 7, fieldBlock([['x-trailer', '1']]));
      const rst7 = await c.waitFrame((f) => f.type === F.RST_STREAM && f.id === 7, 'RST_STREAM 7');
      assert.equal(rst7.payload.readUInt32BE(0), F.PROTOCOL_ERROR);
      // The connection is still usable.
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 9, fieldBlock(requestFields()));
      c.send(F.DATA, F.FLAG_END_STREAM, 9, grpcBody('after'));
      await c.waitFrame(endOf(9), 'a normal response afterwards');
      assert.equal(c.frames.some((f) => f.type === F.GOAWAY), false);
    } finally {
      c.close();
    }
  });

  const connectionErrors: Array<[string, number, (c: RawClient) => void, Buffer?]> = [
    ['DATA on stream 0', F.PROTOCOL_ERROR, (c) => c.send(F.DATA, 0, 0, Buffer.from('x'))],
    ['HEADERS on an even stream id', F.PROTOCOL_ERROR, (c) => c.send(F.HEADERS, F.FLAG_END_HEADERS, 2, fieldBlock(requestFields()))],
    ['a frame over SETTINGS_MAX_FRAME_SIZE', F.FRAME_SIZE_ERROR, (c) => c.sendRaw(Buffer.concat([Buffer.from([0x00, 0x40, 0x01, F.DATA, 0, 0, 0, 0, 1]), Buffer.alloc(16_385)]))],
    ['HPACK garbage (index 0)', F.COMPRESSION_ERROR, (c) => c.send(F.HEADERS, F.FLAG_END_HEADERS, 1, Buffer.from([0x80]))],
    ['HPACK garbage (index past the tables)', F.COMPRESSION_ERROR, (c) => c.send(F.HEADERS, F.FLAG_END_HEADERS, 1, Buffer.from([0xff, 0x7f]))],
    ['another frame interleaved in a header block', F.PROTOCOL_ERROR, (c) => {
      c.send(F.HEADERS, 0, 1, fieldBlock(requestFields()).subarray(0, 5));
      c.send(F.PING, 0, 0, Buffer.alloc(8));
    }],
    ['CONTINUATION of another stream', F.PROTOCOL_ERROR, (c) => {
      c.send(F.HEADERS, 0, 1, fieldBlock(requestFields()).subarray(0, 5));
      c.send(F.CONTINUATION, F.FLAG_END_HEADERS, 3, Buffer.alloc(1));
    }],
    ['CONTINUATION without HEADERS', F.PROTOCOL_ERROR, (c) => c.send(F.CONTINUATION, F.FLAG_END_HEADERS, 1, Buffer.alloc(1))],
    ['SETTINGS of 5 bytes', F.FRAME_SIZE_ERROR, (c) => c.send(F.SETTINGS, 0, 0, Buffer.alloc(5))],
    ['SETTINGS ACK with a payload', F.FRAME_SIZE_ERROR, (c) => c.send(F.SETTINGS, F.FLAG_ACK, 0, Buffer.alloc(6))],
    ['SETTINGS on a stream', F.PROTOCOL_ERROR, (c) => c.send(F.SETTINGS, 0, 1, Buffer.alloc(0))],
    ['SETTINGS_MAX_FRAME_SIZE below 16384', F.PROTOCOL_ERROR, (c) => c.send(F.SETTINGS, 0, 0, F.settingsPayload([[F.SETTINGS_MAX_FRAME_SIZE, 100]]))],
    ['SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1', F.FLOW_CONTROL_ERROR, (c) => c.send(F.SETTINGS, 0, 0, F.settingsPayload([[F.SETTINGS_INITIAL_WINDOW_SIZE, 2 ** 31]]))],
    ['SETTINGS_ENABLE_PUSH 2', F.PROTOCOL_ERROR, (c) => c.send(F.SETTINGS, 0, 0, F.settingsPayload([[F.SETTINGS_ENABLE_PUSH, 2]]))],
    ['PING of 7 bytes', F.FRAME_SIZE_ERROR, (c) => c.send(F.PING, 0, 0, Buffer.alloc(7))],
    ['WINDOW_UPDATE of 0 on the connection', F.PROTOCOL_ERROR, (c) => c.send(F.WINDOW_UPDATE, 0, 0, u32(0))],
    ['connection window overflow', F.FLOW_CONTROL_ERROR, (c) => c.send(F.WINDOW_UPDATE, 0, 0, u32(0x7fffffff))],
    ['PUSH_PROMISE from the client', F.PROTOCOL_ERROR, (c) => c.send(F.PUSH_PROMISE, F.FLAG_END_HEADERS, 1, Buffer.alloc(4))],
    ['padding longer than the frame', F.PROTOCOL_ERROR, (c) => c.send(F.HEADERS, F.FLAG_PADDED | F.FLAG_END_HEADERS, 1, Buffer.from([9, 0x82]))],
    ['DATA on an idle stream', F.PROTOCOL_ERROR, (c) => c.send(F.DATA, 0, 7, Buffer.from('x'))],
    ['RST_STREAM on an idle stream', F.PROTOCOL_ERROR, (c) => c.send(F.RST_STREAM, 0, 9, u32(8))],
    ['RST_STREAM on stream 0', F.PROTOCOL_ERROR, (c) => c.send(F.RST_STREAM, 0, 0, u32(8))],
    ['GOAWAY on a stream', F.PROTOCOL_ERROR, (c) => c.send(F.GOAWAY, 0, 1, Buffer.alloc(8))],
    ['a preface that is not HTTP/2', F.PROTOCOL_ERROR, () => undefined, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')],
    ['a first frame other than SETTINGS', F.PROTOCOL_ERROR, (c) => c.send(F.PING, 0, 0, Buffer.alloc(8)), F.PREFACE],
  ];
  for (const [name, code, act, preface] of connectionErrors) {
    test(`connection error: ${name} ⇒ GOAWAY ${code} and close`, async () => {
      const c = await RawClient.connect(port, preface !== undefined ? { preface } : {});
      try {
        act(c);
        assert.equal(await c.goawayCode(), code);
      } finally {
        c.close();
      }
    });
  }

  test('random frames never crash the server, which keeps serving', async () => {
    let seed = 4242;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const clients: RawClient[] = [];
    for (let i = 0; i < 60; i++) {
      const c = await RawClient.connect(port);
      clients.push(c);
      for (let k = 0; k < 4; k++) {
        const len = rand(40);
        const payload = Buffer.from(Array.from({ length: len }, () => rand(256)));
        c.send(rand(11), rand(256), rand(12), payload);
      }
    }
    // Each connection either answers a PING (still healthy) or was closed with a GOAWAY.
    await Promise.all(clients.map((c) => c.settle()));
    assert.ok(clients.some((c) => c.closed), 'the fuzz provoked connection errors');
    for (const c of clients) c.close();
    await waitFor(() => server.connectionCount() === 0, { what: 'all fuzz connections gone' });
    const stubs = grpcJsStubs(`127.0.0.1:${port}`);
    try {
      const res = await unaryCall<Record<string, unknown>>(stubs.rls, 'ShouldRateLimit', { domain: 'alive', descriptors: [{ entries: [{ key: 'a', value: 'b' }] }] });
      assert.equal(res.overallCode, 'OK');
    } finally {
      stubs.close();
    }
  });
});

describe('lean HTTP/2 transport: concurrency and interop', () => {
  test('max concurrent streams: the stream over the limit gets REFUSED_STREAM', async () => {
    const svc = scriptedService();
    const server = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth(), maxConcurrentStreams: 2 });
    await server.listen('127.0.0.1', 0);
    const c = await RawClient.connect((server.address() as { port: number }).port);
    try {
      for (const id of [1, 3, 5]) {
        c.send(F.HEADERS, F.FLAG_END_HEADERS, id, fieldBlock(requestFields()));
        c.send(F.DATA, F.FLAG_END_STREAM, id, grpcBody('hang'));
      }
      const rst = await c.waitFrame((f) => f.type === F.RST_STREAM, 'RST_STREAM');
      assert.equal(rst.id, 5);
      assert.equal(rst.payload.readUInt32BE(0), F.REFUSED_STREAM);
      await waitFor(() => svc.seen.length === 2, { what: 'two streams reach the handler' });
      c.send(F.RST_STREAM, 0, 1, u32(F.CANCEL));
      await waitFor(() => svc.aborted.length === 1, { what: 'the cancelled handler aborts' });
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 7, fieldBlock(requestFields()));
      c.send(F.DATA, F.FLAG_END_STREAM, 7, grpcBody('free'));
      await c.waitFrame(endOf(7), 'a stream fits again after the cancel');
    } finally {
      c.close();
      await server.close(200);
    }
  });

  test('a client GOAWAY: the stream in flight is answered, then the server closes the connection', async () => {
    const svc = scriptedService();
    const server = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    const c = await RawClient.connect((server.address() as { port: number }).port);
    try {
      c.send(F.HEADERS, F.FLAG_END_HEADERS, 1, fieldBlock(requestFields()));
      c.send(F.DATA, F.FLAG_END_STREAM, 1, grpcBody('slow'));
      await waitFor(() => svc.seen.length === 1, { what: 'the slow call to arrive' });
      c.send(F.GOAWAY, 0, 0, Buffer.concat([u32(1), u32(F.NO_ERROR)]));
      await c.waitFrame(endOf(1), 'the answer to the stream in flight');
      assert.deepEqual(c.headerBlocks(1)[1], [['grpc-status', '0']]);
      await waitFor(() => c.closed, { what: 'the server to close the connection' });
    } finally {
      c.close();
      await server.close(200);
    }
  });

  test('500 concurrent streams from node:http2 on one connection all succeed', async () => {
    const svc = scriptedService();
    const server = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    const session = http2.connect(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
    try {
      const one = (i: number): Promise<string | undefined> =>
        new Promise((resolve, reject) => {
          const req = session.request({ ':method': 'POST', ':path': RLS, 'content-type': 'application/grpc', te: 'trailers' });
          let status: string | undefined;
          req.on('trailers', (t) => (status = t['grpc-status'] as string));
          req.on('data', () => undefined);
          req.on('error', reject);
          req.on('close', () => resolve(status));
          req.end(grpcBody(`d${i}`));
        });
      const statuses = await Promise.all(Array.from({ length: 500 }, (_v, i) => one(i)));
      assert.deepEqual(new Set(statuses), new Set(['0']));
      assert.equal(new Set(svc.seen.map((r) => r.domain)).size, 500);
      assert.equal(server.connectionCount(), 1);
    } finally {
      session.close();
      await server.close(500);
    }
  });

  test('h2load (nghttp2): 1000 requests, 4 connections, 10 streams each, all 200 with grpc-status 0', async () => {
    const dir = tempDir('rls-h2load-');
    const server = createGrpcServer({ shouldRateLimit: scriptedService().fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    try {
      const bodyFile = join(dir.path, 'body.bin');
      writeFileSync(bodyFile, grpcBody('h2load'));
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}${RLS}`;
      // Asynchronous: the server runs in this process and must keep serving meanwhile.
      const out = await new Promise<string>((resolve, reject) => {
        execFile('h2load', ['-n', '1000', '-c', '4', '-m', '10', '-H', 'content-type: application/grpc', '-H', 'te: trailers', '-d', bodyFile, url], { timeout: 60_000 }, (err: Error | null, stdout: string) =>
          err !== null ? reject(err) : resolve(stdout),
        );
      });
      assert.match(out, /requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored/);
      assert.match(out, /status codes: 1000 2xx, 0 3xx, 0 4xx, 0 5xx/);
    } finally {
      await server.close(500);
      dir.cleanup();
    }
  });
});

