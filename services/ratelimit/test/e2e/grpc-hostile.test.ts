// Hostile gRPC clients against the real service process (issue 12, findings 1-3), on its HTTP/2
// transport: raw frames over real sockets (the testkit's H2RawClient) attack memory (partial
// 4 MB messages on many streams, health Watch streams that stay open), descriptors (idle and
// preface-less connections, the connection cap) and CPU (rapid reset, control-frame floods); each
// test asserts the bound that now holds.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { encodeHealthCheckRequest, encodeRateLimitRequest } from '@rls/rls-proto';
import {
  connectH2,
  encodeFrame,
  FrameFlag,
  FrameType,
  grpcMessage,
  grpcRequestHeaders,
  H2ErrorCode,
  h2ErrorName,
  hpackLiteralBlock,
  SettingId,
  waitFor,
  type H2RawClient,
} from '@rls/testkit';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import { WindowedSender } from '../support/windowed-sender.js';

const RLS = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const CHECK = '/grpc.health.v1.Health/Check';
const WATCH = '/grpc.health.v1.Health/Watch';
const RULES = 'domain: hostile\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: hour\n      requests_per_unit: 100000000\n';
const MIB = 1024 * 1024;

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, 'VmRSS in /proc/<pid>/status');
  return Number(m[1]) * 1024;
}

function grpcPort(svc: ServiceProcess): number {
  return Number(svc.grpcAddress.split(':')[1]);
}

function rlsMessage(): Buffer {
  return grpcMessage(encodeRateLimitRequest({ domain: 'hostile', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 0 }));
}

/** The rule's total_hits counter from the debug server's /stats (0 when not created yet). */
async function totalHits(svc: ServiceProcess): Promise<number> {
  const text = await (await fetch(`${svc.debugUrl}/stats`)).text();
  const m = /\.hostile\.k\.total_hits: (\d+)/.exec(text);
  return m === null ? 0 : Number(m[1]);
}

/** One unary call through node:http2 (a conforming client: it honours flow control). */
async function unary(port: number, path: string, message: Buffer): Promise<{ status: string | undefined; message: string | undefined }> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    session.on('error', () => undefined);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    const done = new Promise<{ status: string | undefined; message: string | undefined }>((resolve, reject) => {
      let headers: http2.IncomingHttpHeaders = {};
      const timer = setTimeout(() => reject(new Error(`no answer to ${path} within 20 s`)), 20_000);
      req.on('response', (h: http2.IncomingHttpHeaders) => {
        headers = h;
      });
      req.on('trailers', (t: http2.IncomingHttpHeaders) => {
        headers = { ...headers, ...t };
      });
      req.on('data', () => undefined);
      req.on('error', (err: Error) => {
        clearTimeout(timer);
        reject(err);
      });
      req.on('close', () => {
        clearTimeout(timer);
        resolve({ status: headers['grpc-status'] as string | undefined, message: headers['grpc-message'] as string | undefined });
      });
    });
    req.end(message);
    return await done;
  } finally {
    session.close();
  }
}

/** The connection is closed, and the first GOAWAY carries `code`. */
async function expectGoawayAndClose(c: H2RawClient, what: string, code: number = H2ErrorCode.ENHANCE_YOUR_CALM): Promise<void> {
  assert.ok(await c.closedWithin(10_000), `${what}: the server closes the connection (${c.summary()})`);
  const first = c.received.find((f) => f.type === FrameType.GOAWAY);
  const got = first === undefined ? 'none' : h2ErrorName(first.payload.readUInt32BE(4));
  assert.equal(got, h2ErrorName(code), `${what}: first GOAWAY ${got} (${c.summary()})`);
}

describe(`hostile clients: budgets and the connection cap (default timeouts)`, () => {
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let port: number;
  before(async () => {
    rules = writeRules({ 'hostile.yaml': RULES });
    svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', GRPC_MAX_CONNECTIONS: '12', GRPC_PROCESS_BUFFER: String(12 * MIB) });
    port = grpcPort(svc);
  });
  after(async () => {
    await svc.stop();
    rules.cleanup();
  });

  test('250 streams of partial 4 MB messages on one connection: the process grows by less than 100 MB', async (t) => {
    assert.equal((await unary(port, CHECK, grpcMessage(encodeHealthCheckRequest({ service: '' })))).status, '0');
    const pid = svc.proc.proc.pid!;
    const before = rssBytes(pid);
    const c = await connectH2({ port });
    try {
      await c.handshake();
      const plan = new Map<number, Buffer>();
      const chunk = Buffer.alloc(4_000_000 + 5, 0x61);
      chunk[0] = 0;
      chunk.writeUInt32BE(4_000_000 + 1, 1); // never complete: one byte more than is sent
      for (let i = 0; i < 250; i++) {
        const id = 1 + 2 * i;
        c.headers(id, grpcRequestHeaders(RLS));
        plan.set(id, chunk);
      }
      const sent = await new WindowedSender(c).pump(plan, false, 1500);
      const after = rssBytes(pid);
      t.diagnostic(`window granted ${(sent / MIB).toFixed(1)} MiB; RSS ${Math.round(before / MIB)} -> ${Math.round(after / MIB)} MiB`);
      // The first transports accepted everything (> 1 GB); now the connection budget (8 MiB) and
      // the stream windows stop the client.
      assert.ok(sent < 40 * MIB, `the server granted ${sent} bytes of window`);
      assert.ok(after - before < 100 * MIB, `RSS grew by ${Math.round((after - before) / MIB)} MB (sent ${Math.round(sent / MIB)} MB)`);
      assert.ok(!c.isSocketClosed, 'a client that stays within its windows is not disconnected');
    } finally {
      await c.close();
    }
  });

  test('one message of the maximum size (4 MiB) is still accepted', async () => {
    // A health Check naming a 4 MiB - 5 byte service: decoded, then NOT_FOUND (unknown service).
    const msg = encodeHealthCheckRequest({ service: 'x'.repeat(4 * MIB - 5) });
    assert.equal(msg.length, 4 * MIB);
    const r = await unary(port, CHECK, grpcMessage(msg));
    assert.equal(r.status, '5', `grpc-status ${String(r.status)} ${String(r.message)}`);
    assert.match(r.message ?? '', /unknown service/);
  });

  test('a client that ignores the windows gets FLOW_CONTROL_ERROR once past the connection budget', async () => {
    const c = await connectH2({ port });
    try {
      await c.handshake();
      // 250 streams x 48 KiB (each within its 64 KiB stream window) = 12 MiB on a connection
      // whose budget is 8 MiB: the bytes beyond the window it was granted are a violation.
      const head = Buffer.alloc(16_384, 0x61);
      head[0] = 0;
      head.writeUInt32BE(4_000_000, 1);
      const body = Buffer.alloc(16_384, 0x61);
      const parts: Buffer[] = [];
      for (let i = 0; i < 250; i++) {
        const id = 1 + 2 * i;
        parts.push(encodeFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, id, hpackLiteralBlock(grpcRequestHeaders(RLS))));
        parts.push(encodeFrame(FrameType.DATA, 0, id, head), encodeFrame(FrameType.DATA, 0, id, body), encodeFrame(FrameType.DATA, 0, id, body));
      }
      c.writeRaw(Buffer.concat(parts));
      const r = await c.connectionError(10_000);
      assert.equal(r.goaway?.errorCode, H2ErrorCode.FLOW_CONTROL_ERROR, c.summary());
    } finally {
      await c.close();
    }
  });

  test('GRPC_PROCESS_BUFFER bounds what several connections together are granted', async (t) => {
    const clients = await Promise.all([0, 1, 2].map(() => connectH2({ port })));
    try {
      await Promise.all(clients.map((c) => c.handshake()));
      const head = Buffer.alloc(4_000_000, 0x61);
      head[0] = 0;
      head.writeUInt32BE(4_000_000, 1); // one byte more than is sent: never complete
      const sent = await Promise.all(
        clients.map((c) => {
          const plan = new Map<number, Buffer>();
          for (let i = 0; i < 20; i++) {
            c.headers(1 + 2 * i, grpcRequestHeaders(RLS));
            plan.set(1 + 2 * i, head);
          }
          return new WindowedSender(c).pump(plan, false, 1000);
        }),
      );
      const total = sent.reduce((a, b) => a + b, 0);
      t.diagnostic(`granted per connection: ${sent.map((n) => (n / MIB).toFixed(2)).join(', ')} MiB`);
      // 12 MiB for the process plus the fixed initial 64 KiB of each connection; each at most its own 8 MiB budget.
      assert.ok(total <= 12 * MIB + 3 * 65_535, `together granted ${total} bytes`);
      for (const n of sent) assert.ok(n <= 8 * MIB, `one connection granted ${n} bytes`);
      assert.ok(clients.every((c) => !c.isSocketClosed));
    } finally {
      for (const c of clients) await c.close();
    }
  });

  test('GRPC_MAX_WATCHES_PER_CONNECTION: health Watch streams beyond 8 on one connection are refused', async () => {
    // A Watch stays open for good and each health change writes to every one: unbounded, 1,000
    // streams on each of 4,096 connections would be 4 million of them.
    const open = async (n: number): Promise<{ c: H2RawClient; watching: number; refused: string[] }> => {
      const c = await connectH2({ port });
      await c.handshake();
      for (let i = 0; i < n; i++) c.grpcRequest(1 + 2 * i, WATCH, encodeHealthCheckRequest({ service: 'ratelimit' }));
      const ids = Array.from({ length: n }, (_, i) => 1 + 2 * i);
      // Each stream gets either its first message (SERVING) or a trailers-only refusal.
      await waitFor(() => ids.every((id) => c.received.some((f) => f.streamId === id && (f.type === FrameType.DATA || (f.type === FrameType.HEADERS && (f.flags & FrameFlag.END_STREAM) !== 0)))), { what: `an answer on each of ${n} Watch streams`, timeoutMs: 10_000 });
      const watching = ids.filter((id) => c.received.some((f) => f.streamId === id && f.type === FrameType.DATA)).length;
      const refused = c.received.filter((f) => f.type === FrameType.HEADERS && (f.flags & FrameFlag.END_STREAM) !== 0).map((f) => {
        const fields = new Map(f.fields ?? []);
        return `${fields.get('grpc-status') ?? '?'} ${decodeURIComponent(fields.get('grpc-message') ?? '')}`;
      });
      return { c, watching, refused };
    };
    const first = await open(20);
    try {
      assert.equal(first.watching, 8);
      assert.deepEqual(new Set(first.refused), new Set(['8 grpc: more than 8 health Watch streams on one connection (GRPC_MAX_WATCHES_PER_CONNECTION)']));
      assert.equal(first.refused.length, 12);
      // Per connection: another one gets its own 8.
      const second = await open(8);
      try {
        assert.equal(second.watching, 8);
      } finally {
        await second.c.close();
      }
    } finally {
      await first.c.close();
    }
  });

  test('GRPC_MAX_CONNECTIONS: idle connections are evicted for a health check; when all are busy, new ones are refused', async () => {
    const idle: H2RawClient[] = [];
    const busy: H2RawClient[] = [];
    try {
      for (let i = 0; i < 12; i++) {
        const c = await connectH2({ port });
        await c.handshake();
        await c.pingRoundTrip();
        idle.push(c);
      }
      // At the cap with 12 idle connections: a new client still gets its answer.
      const r = await unary(port, CHECK, grpcMessage(encodeHealthCheckRequest({ service: '' })));
      assert.equal(r.status, '0');
      await waitFor(() => idle.some((c) => c.isSocketClosed), { what: 'an idle connection to be evicted', timeoutMs: 5000 });
      for (const c of idle) await c.close();
      // Busy connections: each has a request that is still arriving.
      for (let i = 0; i < 12; i++) {
        const c = await connectH2({ port });
        await c.handshake();
        c.headers(1, grpcRequestHeaders(RLS));
        await c.pingRoundTrip();
        busy.push(c);
      }
      const refused = await connectH2({ port, connectTimeoutMs: 5000 });
      try {
        assert.ok(await refused.closedWithin(5000), 'the connection over the cap is closed');
        assert.ok(!refused.received.some((f) => f.type === FrameType.HEADERS));
      } finally {
        await refused.close();
      }
      assert.ok(busy.every((c) => !c.isSocketClosed), 'busy connections are kept');
      await waitFor(() => /GRPC_MAX_CONNECTIONS \(12\) reached/.test(svc.output()), { what: 'the refusal log line', timeoutMs: 5000 });
    } finally {
      for (const c of [...idle, ...busy]) await c.close();
    }
  });
});

describe(`hostile clients: timeouts and floods (short limits)`, () => {
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let port: number;
  before(async () => {
    rules = writeRules({ 'hostile.yaml': RULES });
    svc = await startService({
      ...rules.env,
      BACKEND_TYPE: 'memory',
      GRPC_PREFACE_TIMEOUT: '500ms',
      GRPC_IDLE_TIMEOUT: '1s',
      GRPC_REQUEST_READ_TIMEOUT: '1500ms',
      GRPC_MAX_RESETS_PER_SECOND: '100',
      GRPC_MAX_CONTROL_FRAMES_PER_SECOND: '200',
    });
    port = grpcPort(svc);
  });
  after(async () => {
    await svc.stop();
    rules.cleanup();
  });

  test('a connection that never sends the preface, or only part of it, is closed', async () => {
    for (const bytes of [Buffer.alloc(0), Buffer.from('PRI * HTTP/2.0\r\n', 'latin1')]) {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.on('error', () => undefined);
      socket.resume(); // read (and drop) the server's SETTINGS, so its FIN is seen
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      if (bytes.length > 0) socket.write(bytes);
      const t0 = Date.now();
      const ok = await Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 8000))]);
      socket.destroy();
      assert.ok(ok, `closed (preface bytes: ${bytes.length})`);
      assert.ok(Date.now() - t0 >= 300, 'not before the preface timeout');
    }
  });

  test('an idle connection (no open stream) gets GOAWAY and is closed', async () => {
    const c = await connectH2({ port });
    try {
      await c.handshake();
      assert.ok(await c.closedWithin(8000), `closed (${c.summary()})`);
      if (c.lastGoaway !== undefined) assert.equal(c.lastGoaway.errorCode, H2ErrorCode.NO_ERROR);
    } finally {
      await c.close();
    }
  });

  test('a header block that never ends (HEADERS without END_HEADERS) closes the connection', async () => {
    const c = await connectH2({ port });
    try {
      await c.handshake();
      c.headers(1, grpcRequestHeaders(RLS).slice(0, 3), { endHeaders: false });
      assert.ok(await c.closedWithin(8000), `closed (${c.summary()})`);
    } finally {
      await c.close();
    }
  });

  test('a stream whose message never completes is reset with CANCEL', async () => {
    const c = await connectH2({ port });
    try {
      await c.handshake();
      c.headers(1, grpcRequestHeaders(RLS));
      c.data(1, rlsMessage().subarray(0, 8));
      assert.equal(await c.streamReset(1, 8000), H2ErrorCode.CANCEL);
    } finally {
      await c.close();
    }
  });

  test('rapid reset: GOAWAY ENHANCE_YOUR_CALM, and reset streams are not decided nor counted', async () => {
    const msg = rlsMessage();
    assert.equal((await unary(port, RLS, msg)).status, '0');
    await waitFor(async () => (await totalHits(svc)) === 1, { what: 'the one real request counted', timeoutMs: 5000 });
    const c = await connectH2({ port });
    try {
      await c.handshake();
      const parts: Buffer[] = [];
      const cancel = Buffer.alloc(4);
      cancel.writeUInt32BE(H2ErrorCode.CANCEL);
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS));
      for (let i = 0; i < 1000; i++) {
        const id = 1 + 2 * i;
        parts.push(
          encodeFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, id, block),
          encodeFrame(FrameType.DATA, FrameFlag.END_STREAM, id, msg),
          encodeFrame(FrameType.RST_STREAM, 0, id, cancel),
        );
      }
      c.writeRaw(Buffer.concat(parts));
      await expectGoawayAndClose(c, 'rapid reset');
    } finally {
      await c.close();
    }
    // Still serving, and (almost) none of the reset streams was decided: before, all 1000 were.
    assert.equal((await unary(port, RLS, msg)).status, '0');
    const hits = await totalHits(svc);
    assert.ok(hits >= 2 && hits <= 2 + 10, `total_hits ${hits}: reset streams were decided`);
  });

  const floods: [string, (c: H2RawClient) => void][] = [
    ['PING', (c) => c.writeRaw(Buffer.concat(Array.from({ length: 1000 }, (_, i) => encodeFrame(FrameType.PING, 0, 0, u64(i)))))],
    ['SETTINGS', (c) => c.writeRaw(Buffer.concat(Array.from({ length: 1000 }, () => encodeFrame(FrameType.SETTINGS, 0, 0))))],
    ['WINDOW_UPDATE', (c) => c.writeRaw(Buffer.concat(Array.from({ length: 1000 }, () => encodeFrame(FrameType.WINDOW_UPDATE, 0, 0, u32(1)))))],
    ['PRIORITY', (c) => c.writeRaw(Buffer.concat(Array.from({ length: 1000 }, () => encodeFrame(FrameType.PRIORITY, 0, 3, Buffer.from([0, 0, 0, 0, 16])))))],
    [
      'empty DATA without END_STREAM',
      (c) => {
        c.headers(1, grpcRequestHeaders(RLS));
        c.writeRaw(Buffer.concat(Array.from({ length: 1000 }, () => encodeFrame(FrameType.DATA, 0, 1))));
      },
    ],
    [
      'empty CONTINUATION',
      (c) => {
        c.headers(1, grpcRequestHeaders(RLS).slice(0, 3), { endHeaders: false });
        c.writeRaw(Buffer.concat(Array.from({ length: 1000 }, () => encodeFrame(FrameType.CONTINUATION, 0, 1))));
      },
    ],
  ];
  for (const [name, flood] of floods) {
    const code = H2ErrorCode.ENHANCE_YOUR_CALM;
    test(`${name} flood: GOAWAY ${h2ErrorName(code)} and close`, async () => {
      const c = await connectH2({ port });
      try {
        await c.handshake();
        flood(c);
        await expectGoawayAndClose(c, `${name} flood`, code);
      } finally {
        await c.close();
      }
      assert.equal((await unary(port, CHECK, grpcMessage(encodeHealthCheckRequest({ service: '' })))).status, '0', 'still serving');
    });
  }

  test('a header list over SETTINGS_MAX_HEADER_LIST_SIZE is refused, unread', async () => {
    const c = await connectH2({ port });
    try {
      const settings = await c.handshake();
      assert.equal(new Map(settings).get(SettingId.MAX_HEADER_LIST_SIZE), 16_384);
      const block = hpackLiteralBlock(grpcRequestHeaders(RLS, { extra: [['x-big', 'v'.repeat(12_000)], ['x-big2', 'w'.repeat(12_000)]] }));
      c.headers(1, block.subarray(0, 16_000), { endHeaders: false });
      c.continuation(1, block.subarray(16_000), true);
      c.grpcData(1, rlsMessage());
      const f = await c.waitFor((x) => (x.type === FrameType.RST_STREAM || x.type === FrameType.HEADERS || x.type === FrameType.GOAWAY) && x.streamId <= 1, 5000, 'a refusal');
      if (f.type === FrameType.HEADERS) {
        const fields = new Map(c.hpack.decode(f.payload));
        assert.notEqual(fields.get(':status'), '200', 'not answered as a normal call');
      }
    } finally {
      await c.close();
    }
  });
});

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function u64(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(n, 4);
  return b;
}
