// The raw HTTP/2 client checked against RFC 7541's worked examples and against an independent
// server (node:http2, i.e. nghttp2), so a conformance failure seen through it is the server's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import {
  connectH2,
  decodeGoaway,
  decodeSettings,
  encodeFrame,
  FrameFlag,
  FrameType,
  H2ErrorCode,
  hpackInteger,
  hpackLiteralBlock,
  HpackReader,
  settingsPayload,
} from '@rls/testkit';

test('HPACK integers and literals encode as in RFC 7541 C.1 and C.2.2', () => {
  assert.deepEqual(hpackInteger(10, 5), Buffer.from([0x0a]));
  assert.deepEqual(hpackInteger(1337, 5), Buffer.from([0x1f, 0x9a, 0x0a]));
  assert.deepEqual(hpackInteger(42, 8), Buffer.from([0x2a]));
  // C.2.2 is ":path: /sample/path" with an indexed name; ours is always a new name, so compare the value part.
  const block = hpackLiteralBlock([['custom-key', 'custom-header']]);
  assert.deepEqual(block, Buffer.from('000a637573746f6d2d6b65790d637573746f6d2d686561646572', 'hex'));
});

test('HpackReader decodes the RFC 7541 C.3 request sequence (static, dynamic table, eviction order)', () => {
  const r = new HpackReader();
  assert.deepEqual(r.decode(Buffer.from('828684410f7777772e6578616d706c652e636f6d', 'hex')), [
    [':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com'],
  ]);
  assert.deepEqual(r.decode(Buffer.from('828684be58086e6f2d6361636865', 'hex')), [
    [':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com'], ['cache-control', 'no-cache'],
  ]);
  assert.deepEqual(r.decode(Buffer.from('828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565', 'hex')), [
    [':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value'],
  ]);
  assert.throws(() => r.decode(Buffer.from([0x80])), /invalid index 0/);
});

test('frames: header layout, a lying length, SETTINGS and GOAWAY payloads', () => {
  const f = encodeFrame(FrameType.PING, FrameFlag.ACK, 0x80000001, Buffer.alloc(8), 7);
  assert.deepEqual(f.subarray(0, 9), Buffer.from([0, 0, 7, 6, 1, 0x80, 0, 0, 1]));
  assert.equal(f.length, 17);
  assert.deepEqual(decodeSettings(settingsPayload([[4, 0xffffffff], [3, 100]])), [[4, 0xffffffff], [3, 100]]);
  const g = Buffer.concat([Buffer.from([0x80, 0, 0, 5, 0, 0, 0, 1]), Buffer.from('why')]);
  assert.deepEqual(decodeGoaway(g), { lastStreamId: 5, errorCode: 1, debug: 'why' });
});

test('against node:http2: handshake, a request answered, PING, and the GOAWAY the server sends', async () => {
  const server = http2.createServer();
  let session: http2.ServerHttp2Session | undefined;
  server.on('session', (s) => (session = s));
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'x-a': 'b' });
    stream.end('hello');
  });
  server.on('sessionError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const c = await connectH2({ port, settings: [[4, 1 << 20]] });
  try {
    await c.handshake(5000);
    await c.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & FrameFlag.ACK) !== 0, 5000, 'SETTINGS ACK');
    c.headers(1, [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'localhost']], { endStream: true });
    const h = await c.waitFor((f) => f.type === FrameType.HEADERS && f.streamId === 1, 5000, 'response HEADERS');
    assert.equal(h.fields?.[0]?.[0], ':status');
    assert.equal(h.fields?.[0]?.[1], '200');
    const d = await c.waitFor((f) => f.type === FrameType.DATA && f.streamId === 1 && f.payload.length > 0, 5000, 'DATA');
    assert.equal(d.payload.toString(), 'hello');
    await c.pingRoundTrip(5000);
    assert.ok(session !== undefined);
    session.goaway(H2ErrorCode.ENHANCE_YOUR_CALM, 1, Buffer.from('calm down'));
    const r = await c.connectionError(5000);
    assert.deepEqual(r.goaway, { lastStreamId: 1, errorCode: H2ErrorCode.ENHANCE_YOUR_CALM, debug: 'calm down' });
    assert.equal(c.goawayCode, H2ErrorCode.ENHANCE_YOUR_CALM);
    session.destroy();
    assert.ok(await c.closedWithin(5000));
    // Once closed, nextFrame hands out what is left (the GOAWAY), then null instead of waiting.
    const left: number[] = [];
    for (let f = await c.nextFrame(100); f !== null; f = await c.nextFrame(100)) left.push(f.type);
    assert.equal(left.at(-1), FrameType.GOAWAY);
  } finally {
    await c.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
