// Compressed gRPC requests against the real service process (issue 23, finding 3): gzip bombs —
// a few KB on the wire that inflate to 4 MB — on many streams of one connection and across
// connections, sent within the flow-control windows over real sockets. Inflated bytes count
// against GRPC_CONNECTION_BUFFER and GRPC_PROCESS_BUFFER; each test asserts the bound: RSS
// growth, a well-behaved client's latency beside the attack, and the refusal status.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import { encodeHealthCheckRequest } from '@rls/rls-proto';
import { connectH2, FrameFlag, FrameType, grpcMessage, grpcRequestHeaders, type H2RawClient } from '@rls/testkit';
import { startService, writeRules, type ServiceProcess } from '../support/service-process.js';
import { WindowedSender } from '../support/windowed-sender.js';

const RLS = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const CHECK = '/grpc.health.v1.Health/Check';
const RULES = 'domain: hostile\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: hour\n      requests_per_unit: 100000000\n';
const MIB = 1024 * 1024;
const GZIP = [['grpc-encoding', 'gzip']] as const;

/** 4,000,000 zero bytes, gzip-compressed (about 4 KB): under the 4 MiB message limit once inflated. */
const BOMB = grpcMessage(gzipSync(Buffer.alloc(4_000_000), { level: 9 }), true);

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, 'VmRSS in /proc/<pid>/status');
  return Number(m[1]) * 1024;
}

function grpcPort(svc: ServiceProcess): number {
  return Number(svc.grpcAddress.split(':')[1]);
}

/** The highest RSS of `pid` until stop() is called, sampled every 20 ms. */
function rssPeak(pid: number): { stop: () => number } {
  let peak = rssBytes(pid);
  const t = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, 20);
  return {
    stop: () => {
      clearInterval(t);
      return Math.max(peak, rssBytes(pid));
    },
  };
}

interface Final {
  status: string;
  message: string;
}

/** The final grpc-status (or RST_STREAM) of each stream in `ids`, waiting up to `timeoutMs` for all. */
async function finals(c: H2RawClient, ids: number[], timeoutMs: number): Promise<Map<number, Final>> {
  const want = new Set(ids);
  const out = new Map<number, Final>();
  const deadline = Date.now() + timeoutMs;
  let seen = 0;
  for (;;) {
    for (; seen < c.received.length; seen++) {
      const f = c.received[seen]!;
      if (!want.has(f.streamId)) continue;
      if (f.type === FrameType.RST_STREAM) out.set(f.streamId, { status: 'RST', message: String(f.payload.readUInt32BE(0)) });
      else if (f.type === FrameType.HEADERS && (f.flags & FrameFlag.END_STREAM) !== 0) {
        const fields = new Map(f.fields ?? []);
        out.set(f.streamId, { status: fields.get('grpc-status') ?? '?', message: decodeURIComponent(fields.get('grpc-message') ?? '') });
      }
    }
    if (out.size === want.size || c.isSocketClosed || Date.now() > deadline) return out;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Counts of "status message" over the answers (messages without their varying numbers). */
function tally(answers: Iterable<Final>): Map<string, number> {
  const m = new Map<string, number>();
  for (const a of answers) {
    const k = `${a.status} ${a.message.replace(/\d+/g, 'N').slice(0, 120)}`;
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}

/** Opens `streams` gzip-bomb calls on `c` and pushes them within the windows; returns their ids. */
async function bombs(c: H2RawClient, streams: number, path = RLS): Promise<number[]> {
  const plan = new Map<number, Buffer>();
  for (let i = 0; i < streams; i++) {
    const id = 1 + 2 * i;
    c.headers(id, grpcRequestHeaders(path, { extra: GZIP }));
    plan.set(id, BOMB);
  }
  await new WindowedSender(c).pump(plan, true, 20_000);
  return [...plan.keys()];
}

/** A well-behaved client: health Checks one after another on its own connection, with their latencies. */
function goodClient(port: number): { stop: () => Promise<{ ms: number[]; failures: string[] }> } {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const ms: number[] = [];
  const failures: string[] = [];
  let running = true;
  const body = grpcMessage(encodeHealthCheckRequest({ service: 'ratelimit' }));
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const req = session.request({ ':method': 'POST', ':path': CHECK, 'content-type': 'application/grpc', te: 'trailers' });
      let status: string | undefined;
      req.on('response', (h) => {
        status = (h['grpc-status'] as string | undefined) ?? status;
      });
      req.on('trailers', (h) => {
        status = h['grpc-status'] as string | undefined;
      });
      req.on('data', () => undefined);
      req.on('error', (err: Error) => {
        failures.push(err.message);
        resolve();
      });
      req.on('close', () => {
        if (status === '0') ms.push(performance.now() - t0);
        else failures.push(`grpc-status ${String(status)}`);
        resolve();
      });
      req.end(body);
    });
  const loop = (async () => {
    while (running) {
      await one();
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      session.close();
      return { ms, failures };
    },
  };
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
}

async function checkOk(port: number, compressed: boolean): Promise<string | undefined> {
  const c = await connectH2({ port });
  try {
    await c.handshake();
    const msg = encodeHealthCheckRequest({ service: 'ratelimit' });
    c.headers(1, grpcRequestHeaders(CHECK, compressed ? { extra: GZIP } : {}));
    c.data(1, compressed ? grpcMessage(gzipSync(msg), true) : grpcMessage(msg), { endStream: true });
    return (await finals(c, [1], 10_000)).get(1)?.status;
  } finally {
    await c.close();
  }
}

async function oneCall(port: number, message: Buffer, compressed: boolean, path = RLS): Promise<Final | undefined> {
  const c = await connectH2({ port });
  try {
    await c.handshake();
    c.headers(1, grpcRequestHeaders(path, compressed ? { extra: GZIP } : {}));
    await new WindowedSender(c).pump(new Map([[1, message]]), true, 10_000);
    return (await finals(c, [1], 20_000)).get(1);
  } finally {
    await c.close();
  }
}

describe('gzip bombs with the default budgets', () => {
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let port: number;
  before(async () => {
    rules = writeRules({ 'hostile.yaml': RULES });
    svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', LOG_LEVEL: 'warn' });
    port = grpcPort(svc);
    assert.equal(await checkOk(port, true), '0');
  });
  after(async () => {
    await svc.stop();
    rules.cleanup();
  });

  test('600 gzip-bomb streams on one connection: RSS grows by less than 100 MB, a well-behaved client keeps its latency, the bombs are paced', async (t) => {
    const pid = svc.proc.proc.pid!;
    const base = rssBytes(pid);
    const peak = rssPeak(pid);
    const good = goodClient(port);
    await new Promise((r) => setTimeout(r, 300));
    const c = await connectH2({ port });
    try {
      await c.handshake();
      const t0 = Date.now();
      const ids = await bombs(c, 600);
      // Every bomb is in (its compressed bytes fit the connection's budget); they are inflated
      // at GRPC_INFLATE_BYTES_PER_SECOND (default 4 MiB/s: one a second, after a burst of one).
      const answers = await finals(c, ids, 5000 - (Date.now() - t0));
      const secs = (Date.now() - t0) / 1000;
      t.diagnostic(`${answers.size} of 600 bombs answered in ${secs.toFixed(1)} s: ${JSON.stringify([...tally(answers.values())])}`);
      assert.ok(answers.size >= 3, `${answers.size} answered: inflation goes on under attack`);
      assert.ok(answers.size <= Math.ceil(((secs + 1) * 4 * MIB) / 4_000_000) + 2, `${answers.size} answered in ${secs.toFixed(1)} s: beyond the pace`);
      // Each inflates to 4,000,000 zero bytes, within the budgets: decoded, and refused as a bad message.
      for (const a of answers.values()) assert.match(`${a.status} ${a.message}`, /^13 grpc: error unmarshalling request/);
      assert.ok(!c.isSocketClosed, 'the attacker is not disconnected: its streams wait');
    } finally {
      await c.close();
    }
    const { ms, failures } = await good.stop();
    const top = peak.stop();
    t.diagnostic(`RSS ${Math.round(base / MIB)} -> peak ${Math.round(top / MIB)} MiB; good client: ${ms.length} calls, p50 ${quantile(ms, 0.5).toFixed(1)} ms, p99 ${quantile(ms, 0.99).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms`);
    // Before: 2.4 GB more, and this client's p50 13 ms, p99 140 ms, max 1.3 s.
    assert.ok(top - base < 100 * MIB, `RSS grew by ${Math.round((top - base) / MIB)} MB`);
    assert.deepEqual(failures, [], 'the well-behaved client is never refused');
    assert.ok(ms.length >= 20, `the well-behaved client got ${ms.length} answers`);
    assert.ok(quantile(ms, 0.99) < 100, `well-behaved client p99 ${quantile(ms, 0.99).toFixed(1)} ms`);
    // The attacker's queue went with its connection: a large compressed message is served at once.
    const big = await oneCall(port, grpcMessage(gzipSync(encodeHealthCheckRequest({ service: 'x'.repeat(100_000) })), true), true, CHECK);
    assert.equal(big?.status, '5', JSON.stringify(big)); // NOT_FOUND: decoded, an unknown service
  });

  test('600 gzip-bomb streams across 8 connections: RSS grows by less than 160 MB, connections take turns', async (t) => {
    const pid = svc.proc.proc.pid!;
    const base = rssBytes(pid);
    const peak = rssPeak(pid);
    const clients = await Promise.all(Array.from({ length: 8 }, () => connectH2({ port })));
    try {
      await Promise.all(clients.map((c) => c.handshake()));
      const t0 = Date.now();
      // At the default pace (4 MiB/s: one 4 MB bomb a second) 10 s give every connection a turn or more.
      const all = await Promise.all(clients.map(async (c) => finals(c, await bombs(c, 75), 10_000 - (Date.now() - t0))));
      const perConnection = all.map((m) => m.size);
      t.diagnostic(`answered per connection in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${perConnection.join(', ')}; ${JSON.stringify([...tally(all.flatMap((m) => [...m.values()]))])}`);
      // Round robin: every connection's bombs get their turns, none monopolises the inflater.
      assert.ok(Math.min(...perConnection) >= 1, `answered per connection: ${perConnection.join(', ')}`);
      // The first connection in may take the bucket's burst; after that each gets one turn per round.
      assert.ok(Math.max(...perConnection) - Math.min(...perConnection) <= 3, `answered per connection: ${perConnection.join(', ')}`);
    } finally {
      for (const c of clients) await c.close();
    }
    const top = peak.stop();
    t.diagnostic(`RSS ${Math.round(base / MIB)} -> peak ${Math.round(top / MIB)} MiB`);
    assert.ok(top - base < 160 * MIB, `RSS grew by ${Math.round((top - base) / MIB)} MB`);
    assert.equal(await checkOk(port, false), '0', 'still serving');
  });

  test('a message that inflates beyond 4 MiB is refused with RESOURCE_EXHAUSTED once it passes the limit', async () => {
    const over = grpcMessage(gzipSync(Buffer.alloc(64 * MIB), { level: 9 }), true);
    const r = await oneCall(port, over, true);
    assert.equal(r?.status, '8', JSON.stringify(r));
    assert.equal(r?.message, 'grpc: decompressed message larger than max (4194304)');
  });
});

describe('gzip bombs against the smallest budgets (GRPC_CONNECTION_BUFFER = GRPC_PROCESS_BUFFER = 4 MiB + 5)', () => {
  let svc: ServiceProcess;
  let rules: ReturnType<typeof writeRules>;
  let port: number;
  const SMALLEST = String(4 * MIB + 5);
  before(async () => {
    rules = writeRules({ 'hostile.yaml': RULES });
    svc = await startService({ ...rules.env, BACKEND_TYPE: 'memory', LOG_LEVEL: 'warn', GRPC_CONNECTION_BUFFER: SMALLEST, GRPC_PROCESS_BUFFER: SMALLEST });
    port = grpcPort(svc);
  });
  after(async () => {
    await svc.stop();
    rules.cleanup();
  });

  test('inflated bytes beyond the connection budget: RESOURCE_EXHAUSTED naming GRPC_CONNECTION_BUFFER', async () => {
    const r = await oneCall(port, BOMB, true);
    assert.equal(r?.status, '8', JSON.stringify(r));
    assert.equal(r?.message, `grpc: no receive budget left to decompress the request: this connection holds its GRPC_CONNECTION_BUFFER (${SMALLEST} bytes)`);
    // Uncompressed, the same message is read (and refused as a bad message, not for its size).
    const plain = grpcMessage(Buffer.alloc(4_000_000));
    assert.equal((await oneCall(port, plain, false))?.status, '13');
  });

  test('with the process budget held by another connection: RESOURCE_EXHAUSTED naming GRPC_PROCESS_BUFFER; small requests still pass', async (t) => {
    const holder = await connectH2({ port });
    try {
      await holder.handshake();
      // An uncompressed message that never completes takes the process budget.
      holder.headers(1, grpcRequestHeaders(RLS));
      const partial = Buffer.alloc(4_000_000);
      partial.writeUInt32BE(4_000_000, 1);
      const held = await new WindowedSender(holder).pump(new Map([[1, partial]]), false, 1000);
      t.diagnostic(`the holder got ${held} bytes in`);
      assert.ok(held > 3 * MIB, `held ${held}`);
      const r = await oneCall(port, BOMB, true);
      assert.equal(r?.status, '8', JSON.stringify(r));
      assert.equal(r?.message, `grpc: no receive budget left to decompress the request: the process holds its GRPC_PROCESS_BUFFER (${SMALLEST} bytes)`);
      // Small messages need no budget: compressed (inflated at once) and plain are both answered.
      assert.equal(await checkOk(port, true), '0');
      assert.equal(await checkOk(port, false), '0');
    } finally {
      await holder.close();
    }
  });
});
