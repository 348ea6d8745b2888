// The well-behaved client of bench/hostile.mjs, run as its own process (forked with an IPC channel)
// so that no other work of the bench (the attacker, RSS sampling) can delay its timers and pass
// for server latency. Open loop: request i is due at start + i / rps whatever happened to earlier ones, and its
// latency is measured from that due time (not from when it was sent), so a stalled server shows up
// in full instead of being hidden by a client that waits (coordinated omission). One gRPC
// connection through node:http2, re-opened if the server closes it; alongside, a /healthcheck probe
// on a fresh HTTP/1.1 connection every PROBE_MS, because an fd-exhausted server still answers on
// connections it already has but refuses new ones.
//
// Argument: JSON { grpcPort, httpPort, rps, warmupMs, durationMs, timeoutMs, path, body (base64) }.
// Messages to the parent: { type: 'measuring' } when the warm-up ends, then { type: 'result', ... }.
import http from 'node:http';
import http2 from 'node:http2';
import { performance } from 'node:perf_hooks';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const body = Buffer.from(cfg.body, 'base64');
const PROBE_MS = 250;
const PROBE_TIMEOUT_MS = 1000;
// Bound on requests in flight: beyond it a due request is counted as failed without being sent
// (the server is not answering at all; piling up more streams would only measure the client).
const MAX_IN_FLIGHT = Math.max(100, cfg.rps * 5);

let session;
let reconnects = 0;
let goaways = 0;
function getSession() {
  if (session && !session.closed && !session.destroyed) return session;
  if (session) reconnects++;
  const s = http2.connect(`http://127.0.0.1:${cfg.grpcPort}`);
  s.on('error', () => {});
  s.on('goaway', () => {
    goaways++;
    // A GOAWAY'd session takes no new streams; the next request opens a new one.
    if (session === s) session = undefined;
  });
  s.on('close', () => {
    if (session === s) session = undefined;
  });
  session = s;
  return s;
}

const t0 = performance.now();
const measureFrom = t0 + cfg.warmupMs;
const measureTo = measureFrom + cfg.durationMs;
const lat = [];
let sent = 0;
let ok = 0;
let failed = 0;
let timeouts = 0;
let inFlight = 0;
const failures = new Map();
const noteFailure = (why) => failures.set(why, (failures.get(why) ?? 0) + 1);

// The worst latency in each second of the phase: shows whether an attack's harm is a burst at
// its start or lasts.
const worstPerSecond = [];
function record(due, ms, good, why) {
  if (due < measureFrom || due >= measureTo) return;
  lat.push(ms);
  const sec = Math.floor((due - measureFrom) / 1000);
  worstPerSecond[sec] = Math.max(worstPerSecond[sec] ?? 0, ms);
  if (good) ok++;
  else {
    failed++;
    noteFailure(why);
  }
}

let planned = 0;
function call(due) {
  if (due >= measureFrom && due < measureTo) planned++;
  if (inFlight >= MAX_IN_FLIGHT) {
    record(due, cfg.timeoutMs, false, 'not sent: too many in flight');
    return;
  }
  if (due >= measureFrom && due < measureTo) sent++;
  inFlight++;
  let done = false;
  let status;
  const finish = (good, why) => {
    if (done) return;
    done = true;
    inFlight--;
    clearTimeout(timer);
    // Failures count as the timeout: the request was not served, and its true latency is unknown.
    record(due, good ? performance.now() - due : cfg.timeoutMs, good, why);
  };
  const timer = setTimeout(() => {
    timeouts++;
    finish(false, 'timeout');
    req?.close(http2.constants.NGHTTP2_CANCEL);
  }, Math.max(1, due + cfg.timeoutMs - performance.now()));
  let req;
  try {
    req = getSession().request({ ':method': 'POST', ':path': cfg.path, 'content-type': 'application/grpc', te: 'trailers' });
  } catch (err) {
    finish(false, `request: ${err.code ?? err.message}`);
    return;
  }
  req.on('response', (h) => {
    if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
  });
  req.on('trailers', (h) => {
    if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
  });
  req.on('data', () => {});
  req.on('end', () => finish(status === '0', `grpc-status ${status ?? 'missing'}`));
  req.on('error', (err) => finish(false, `stream: ${err.code ?? err.message}`));
  req.on('close', () => finish(status === '0', `closed (grpc-status ${status ?? 'missing'})`));
  req.end(body);
}

// Due times are computed from the start, never from the previous timer, so timer lateness does
// not lower the rate: a late tick sends every request that has come due since.
const interval = 1000 / cfg.rps;
let next = 0;
function tick() {
  const now = performance.now();
  while (t0 + next * interval <= now && t0 + next * interval < measureTo) {
    call(t0 + next * interval);
    next++;
  }
  if (t0 + next * interval < measureTo) setTimeout(tick, Math.max(0, t0 + next * interval - performance.now()));
  else setTimeout(finishRun, cfg.timeoutMs + 100);
}

// HTTP/2 PING on the same connection every 100 ms: it skips flow control and the request path, so
// a slow PING means the server's event loop (or the machine) stalled, while slow requests with
// quick PINGs point at flow control or the store.
let pingMaxMs = 0;
function pinger() {
  const now = performance.now();
  if (now >= measureTo) return;
  const s = session;
  if (now >= measureFrom && s && !s.closed && !s.destroyed) {
    try {
      s.ping((err, ms) => {
        if (!err) pingMaxMs = Math.max(pingMaxMs, ms);
      });
    } catch {
      // too many unanswered pings or a closing session: the request figures show it
    }
  }
  setTimeout(pinger, 100);
}

let probesOk = 0;
let probesFailed = 0;
let probeMaxMs = 0;
const probeFailures = new Map();
function probe() {
  const start = performance.now();
  if (start >= measureTo) return;
  const counted = start >= measureFrom;
  let done = false;
  const end = (good, why) => {
    if (done) return;
    done = true;
    if (!counted) return;
    const ms = performance.now() - start;
    probeMaxMs = Math.max(probeMaxMs, ms);
    if (good) probesOk++;
    else {
      probesFailed++;
      probeFailures.set(why, (probeFailures.get(why) ?? 0) + 1);
    }
  };
  // agent: false: a new connection every time, which is what a load balancer's probe does.
  const req = http.get({ host: '127.0.0.1', port: cfg.httpPort, path: '/healthcheck', agent: false, timeout: PROBE_TIMEOUT_MS }, (res) => {
    res.resume();
    res.on('end', () => end(res.statusCode === 200, `status ${res.statusCode}`));
    res.on('error', (err) => end(false, err.code ?? err.message));
  });
  req.on('timeout', () => {
    end(false, 'timeout');
    req.destroy();
  });
  req.on('error', (err) => end(false, err.code ?? err.message));
  setTimeout(probe, PROBE_MS);
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function finishRun() {
  lat.sort((a, b) => a - b);
  process.send({
    type: 'result',
    planned,
    sent,
    ok,
    failed,
    timeouts,
    failures: Object.fromEntries(failures),
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    max: lat.at(-1) ?? NaN,
    worstPerSecond: Array.from(worstPerSecond, (v) => Math.round(v ?? 0)),
    reconnects,
    goaways,
    probesOk,
    probesFailed,
    probeFailures: Object.fromEntries(probeFailures),
    probeMaxMs,
    pingMaxMs,
  }, () => {
    session?.destroy();
    process.exit(0);
  });
}

setTimeout(() => process.send({ type: 'measuring' }), Math.max(0, measureFrom - performance.now()));
// Bound on the whole run whatever happens (a hung send must not keep the process alive), and no
// life after the bench: if it dies, the IPC channel closes.
setTimeout(() => process.exit(3), cfg.warmupMs + cfg.durationMs + cfg.timeoutMs + 10_000).unref();
process.on('disconnect', () => process.exit(0));
tick();
probe();
pinger();
