// The debug server (docs/ratelimit.md, "Debug server"; DEBUG_HOST:DEBUG_PORT, default 0.0.0.0:6070). Plain text, GET
// (HEAD answers the same status and headers without doing the work: no profile, no snapshot):
//   /                         index: one `<path>: <help>` line per endpoint, sorted by path
//   /rlconfig                 the loaded rules in upstream's dump format (empty when none)
//   /stats                    every counter, gauge and timer with its current value, sorted —
//                             the real rate-limit statistics (upstream prints only Go expvars)
//   /debug/pprof/             index of the profiling endpoints (Node equivalents of Go's pprof):
//   /debug/pprof/profile      CPU profile for ?seconds=N (default 30, 1..120) as a .cpuprofile
//   /debug/pprof/heap         heap snapshot as a .heapsnapshot (one at a time, each other 503)
// Both profiles load in Chrome DevTools (Performance / Memory tab, "Load profile").
//   /operator/                the operator page and its JSON (operator/operator-routes.ts), unless
//                             OPERATOR_PAGE=off; loopback clients only by default
// Every request first passes the access rule (debug-access.ts: DEBUG_ACCESS, DEBUG_ALLOWED_HOSTS),
// checked once in the dispatch below, so any route added later is covered too.
// Unknown paths answer 404 with the index as the body (upstream answers them 200 with the index;
// a 404 tells scripts they asked for something that does not exist, the body still guides people).
import { once } from 'node:events';
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { RuleSet, StatsStore } from '@rls/engine';
import { ConnectionGuard, createBoundedHttpServer, DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from './connection-guard.js';
import { DEFAULT_DEBUG_ACCESS, debugAccessRefusal, type DebugAccessPolicy } from './debug-access.js';
import { CpuProfiler, heapSnapshotStream } from './debug-profiler.js';
import { LIMIT_SETTING_DEFS } from './limits-settings.js';
import type { CountersRoutes } from '../operator/counters-routes.js';
import type { OperatorRoutes } from '../operator/operator-routes.js';
import { silentLogger, type TransportLogger } from './transport-logger.js';

export interface DebugServerOptions {
  /** The rule set currently in force (undefined before the first successful load). */
  rules: () => RuleSet | undefined;
  stats: StatsStore;
  /** Worker mode: /stats shows these service-wide totals (from the primary) instead of `stats`, this process's own. */
  statsTotals?: (() => Promise<StatsStore>) | undefined;
  logger?: TransportLogger | undefined;
  /** Upper bound of `?seconds=` for CPU profiles (default 120). */
  maxProfileSeconds?: number | undefined;
  timeouts?: HttpTimeouts | undefined;
  /** Most open connections (default DEBUG_MAX_CONNECTIONS' default; 0 = no limit). */
  maxConnections?: number | undefined;
  /** The operator page under /operator (absent: OPERATOR_PAGE=off, those paths answer 404). */
  operator?: OperatorRoutes | undefined;
  /** /counters and /counters/reset (operator/counters-routes.ts; absent with OPERATOR_PAGE=off). */
  counters?: CountersRoutes | undefined;
  /** Who is answered (DEBUG_ACCESS, DEBUG_ALLOWED_HOSTS); default loopback peers naming a loopback host or an IP address. */
  access?: DebugAccessPolicy | undefined;
  /** A heap snapshot whose client reads nothing for this long is abandoned (ms; default 60 s), so it cannot hold the one snapshot slot and its memory. */
  snapshotIdleMs?: number | undefined;
}

export interface DebugServer {
  listen(host: string, port: number): Promise<void>;
  address(): AddressInfo | string | null;
  /** Stops accepting, ends a running CPU profile, closes the connections. */
  close(): Promise<void>;
}

const DEFAULT_PROFILE_SECONDS = 30;
const DEFAULT_SNAPSHOT_IDLE_MS = 60_000;
/** Seconds a refused profile or snapshot suggests waiting (Retry-After). */
const BUSY_RETRY_SECONDS = 10;
/** A refused request is logged at most this often (with the count since the last line). */
const REFUSAL_LOG_MS = 60_000;

/** Sent with every answer: nothing here may be cached, sniffed into HTML or framed. */
const COMMON_HEADERS: Readonly<Record<string, string>> = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

const ENDPOINTS: Readonly<Record<string, string>> = {
  '/debug/pprof/': 'root of various pprof endpoints. hit for help.',
  '/debug/pprof/heap': 'heap snapshot (.heapsnapshot), load it in Chrome DevTools > Memory',
  '/debug/pprof/profile': 'CPU profiling endpoint: ?seconds=N (default 30) gives a .cpuprofile for Chrome DevTools > Performance',
  '/rlconfig': 'print out the currently loaded configuration for debugging',
  '/stats': 'print out stats',
};

function indexText(entries: Readonly<Record<string, string>>): string {
  return Object.keys(entries)
    .sort()
    .map((p) => `${p}: ${entries[p] ?? ''}\n`)
    .join('');
}

function formatNumber(v: number): string {
  return Number.isInteger(v) ? String(v) : String(Number(v.toFixed(6)));
}

function statName(name: string, tags: Readonly<Record<string, string>>): string {
  let out = name;
  for (const k of Object.keys(tags).sort()) out += `.__${k}=${tags[k] ?? ''}`;
  return out;
}

/** The `/stats` lines, unsorted: counters (totals), gauges (current values), timers (count and sum in ms). */
function* statsLines(stats: StatsStore): Generator<string> {
  for (const c of stats.allCounters()) yield `${statName(c.name, c.tags)}: ${formatNumber(c.total)}`;
  for (const g of stats.allGauges()) yield `${statName(g.name, g.tags)}: ${formatNumber(g.current)}`;
  for (const t of stats.allTimers()) yield `${statName(t.name, t.tags)}: count=${t.count} sum_ms=${formatNumber(t.sumMs)}`;
}

/** `/stats` text in one string, sorted (tests and small registries; the endpoint streams). */
export function statsText(stats: StatsStore): string {
  const lines = [...statsLines(stats)];
  lines.sort();
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

/** Lines formatted, sorted or merged per turn of the event loop while /stats is produced. */
const STATS_SLICE = 4096;

/** Min-heap over the heads of sorted runs, for the k-way merge. */
class RunHeap {
  private readonly heap: { run: string[]; at: number }[] = [];
  push(run: string[]): void {
    if (run.length === 0) return;
    this.heap.push({ run, at: 0 });
    this.up(this.heap.length - 1);
  }
  get size(): number {
    return this.heap.length;
  }
  /** Removes and returns the smallest head. */
  pop(): string {
    const top = this.heap[0]!;
    const line = top.run[top.at++]!;
    if (top.at === top.run.length) {
      const last = this.heap.pop()!;
      if (this.heap.length > 0) this.heap[0] = last;
    }
    if (this.heap.length > 0) this.down(0);
    return line;
  }
  private head(i: number): string {
    const h = this.heap[i]!;
    return h.run[h.at]!;
  }
  private swap(i: number, j: number): void {
    const t = this.heap[i]!;
    this.heap[i] = this.heap[j]!;
    this.heap[j] = t;
  }
  private up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.head(p) <= this.head(i)) return;
      this.swap(i, p);
      i = p;
    }
  }
  private down(i: number): void {
    const n = this.heap.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.head(l) < this.head(m)) m = l;
      if (r < n && this.head(r) < this.head(m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}

/**
 * The `/stats` text (same content and order as `statsText`) in chunks, yielding to the event
 * loop between slices of STATS_SLICE lines: a sort of the whole registry in one go blocked the
 * process for seconds with 400k series. Slices are sorted as they are formatted, then merged.
 */
export async function* statsTextChunks(stats: StatsStore): AsyncGenerator<string> {
  const heap = new RunHeap();
  let run: string[] = [];
  for (const line of statsLines(stats)) {
    run.push(line);
    if (run.length === STATS_SLICE) {
      heap.push(run.sort());
      run = [];
      await nextTurn();
    }
  }
  heap.push(run.sort());
  while (heap.size > 0) {
    let chunk = '';
    for (let i = 0; i < STATS_SLICE && heap.size > 0; i++) chunk += heap.pop() + '\n';
    yield chunk;
    await nextTurn();
  }
}

function sendText(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...COMMON_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function sendBusy(res: ServerResponse, what: string): void {
  sendText(res, 503, `${what} is already being taken; one at a time, try again when it is done\n`, { 'retry-after': String(BUSY_RETRY_SECONDS) });
}

function fileStamp(d: Date): string {
  return d.toISOString().replace(/[:.]/g, '-');
}

class DebugServerImpl {
  readonly server: http.Server;
  private readonly profiler = new CpuProfiler();
  /** A heap snapshot is being taken or sent (released when its response ends or its client goes). */
  private snapshotBusy = false;
  private readonly logger: TransportLogger;
  private readonly access: DebugAccessPolicy;
  private refused = 0;
  private lastRefusalLog = -Infinity;
  private readonly maxSeconds: number;
  private endpoints: Readonly<Record<string, string>>;

  constructor(private readonly opts: DebugServerOptions) {
    this.logger = opts.logger ?? silentLogger;
    this.maxSeconds = opts.maxProfileSeconds ?? 120;
    this.access = opts.access ?? DEFAULT_DEBUG_ACCESS;
    this.endpoints = opts.operator === undefined ? ENDPOINTS : { ...ENDPOINTS, '/operator/': 'operator page: rules, reloads, top over-limit descriptors, rates, store (loopback clients only unless OPERATOR_PAGE=on)' };
    if (opts.counters !== undefined) {
      this.endpoints = { ...this.endpoints, '/counters': 'counters of one descriptor: ?domain=<d>&entry=<key>=<value>...; POST /counters/reset with COUNTERS_RESET_ENABLED=true' };
    }
    this.server = createBoundedHttpServer(opts.timeouts ?? DEFAULT_HTTP_TIMEOUTS, (req, res) => {
      guard.requestStarted(req, res);
      this.route(req, res).catch((err: unknown) => {
        this.logger.error({ err }, 'debug request failed');
        if (!res.headersSent) sendText(res, 500, `${err instanceof Error ? err.message : String(err)}\n`);
        else res.destroy();
      });
    });
    const guard = new ConnectionGuard(this.server, {
      maxConnections: opts.maxConnections ?? Number(LIMIT_SETTING_DEFS.debugMaxConnections.default),
      name: 'debug server',
      setting: LIMIT_SETTING_DEFS.debugMaxConnections.name,
      logger: this.logger,
      headersTimeoutMs: (opts.timeouts ?? DEFAULT_HTTP_TIMEOUTS).headersTimeoutMs,
    });
  }

  /** The access rule, before anything else: no route, method check or 404 answers a refused client. */
  private admitted(req: IncomingMessage, res: ServerResponse): boolean {
    const why = debugAccessRefusal(this.access, req.socket.remoteAddress, req.headers.host);
    if (why === undefined) return true;
    this.refused += 1;
    const now = performance.now();
    if (now - this.lastRefusalLog >= REFUSAL_LOG_MS) {
      this.logger.warn(
        { remote: req.socket.remoteAddress, host: req.headers.host?.slice(0, 100), refusedSinceLastLine: this.refused },
        'debug server refused a request (DEBUG_ACCESS / DEBUG_ALLOWED_HOSTS)',
      );
      this.lastRefusalLog = now;
      this.refused = 0;
    }
    sendText(res, 403, why);
    return false;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The access rule comes first, for every route (counters included).
    if (!this.admitted(req, res)) {
      req.resume();
      return;
    }
    // Before the body is drained and the GET-only rule: a reset is a POST with a JSON body.
    if (this.opts.counters?.handle(req, res) === true) return;
    req.resume();
    const url = new URL(req.url ?? '/', 'http://debug');
    const path = url.pathname;
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      sendText(res, 405, `method ${req.method ?? ''} not allowed; use GET\n`, { allow: 'GET, HEAD' });
      return;
    }
    if (this.opts.operator?.handle(req, res, path) === true) return;
    switch (path) {
      case '/':
        sendText(res, 200, indexText(this.endpoints));
        return;
      case '/rlconfig':
        sendText(res, 200, this.opts.rules()?.dump() ?? '');
        return;
      case '/stats':
        if (head) {
          res.writeHead(200, { ...COMMON_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
          res.end();
        } else await this.stats(res);
        return;
      case '/debug/pprof':
        res.writeHead(301, { ...COMMON_HEADERS, location: '/debug/pprof/', 'content-length': 0 });
        res.end();
        return;
      case '/debug/pprof/':
        sendText(res, 200, indexText(Object.fromEntries(Object.entries(ENDPOINTS).filter(([p]) => p.startsWith('/debug/pprof/') && p !== '/debug/pprof/'))));
        return;
      case '/debug/pprof/profile':
        await this.cpuProfile(url, res, head);
        return;
      case '/debug/pprof/heap':
        this.heap(res, head);
        return;
      default:
        sendText(res, 404, indexText(this.endpoints));
    }
  }

  private async cpuProfile(url: URL, res: ServerResponse, head: boolean): Promise<void> {
    const raw = url.searchParams.get('seconds');
    const seconds = raw === null || raw === '' ? DEFAULT_PROFILE_SECONDS : Number(raw);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > this.maxSeconds) {
      sendText(res, 400, `seconds must be an integer between 1 and ${this.maxSeconds}\n`);
      return;
    }
    if (this.profiler.busy) {
      sendBusy(res, 'a CPU profile');
      return;
    }
    const stamp = fileStamp(new Date());
    const headers = {
      ...COMMON_HEADERS,
      'content-type': 'application/json',
      'content-disposition': `attachment; filename="ratelimit-${stamp}.cpuprofile"`,
    };
    if (head) {
      res.writeHead(200, headers);
      res.end();
      return;
    }
    // A client that gives up should not leave the profiler running for the full period.
    const stop = new AbortController();
    res.once('close', () => stop.abort());
    this.logger.info({ seconds }, 'taking a CPU profile');
    const profile = await this.profiler.profile(seconds * 1000, stop.signal);
    if (res.destroyed) return;
    const body = JSON.stringify(profile);
    res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  private async stats(res: ServerResponse): Promise<void> {
    // Read before the head is sent, so a primary that does not answer gives a 500 with the reason.
    const store = this.opts.statsTotals !== undefined ? await this.opts.statsTotals() : this.opts.stats;
    res.writeHead(200, { ...COMMON_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
    for await (const chunk of statsTextChunks(store)) {
      if (res.destroyed) return;
      if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
    }
    res.end();
  }

  /**
   * One snapshot at a time: the isolate pauses while V8 walks the heap, and the snapshot (its
   * graph and the JSON buffered for the client) takes several times the heap in memory until it
   * has been sent. A second request meanwhile gets 503; HEAD answers the status without taking one.
   */
  private heap(res: ServerResponse, head: boolean): void {
    if (this.snapshotBusy) {
      sendBusy(res, 'a heap snapshot');
      return;
    }
    const stamp = fileStamp(new Date());
    res.writeHead(200, {
      ...COMMON_HEADERS,
      'content-type': 'application/json',
      'content-disposition': `attachment; filename="ratelimit-${stamp}.heapsnapshot"`,
    });
    if (head) {
      res.end();
      return;
    }
    this.snapshotBusy = true;
    const started = performance.now();
    let bytes = 0;
    const release = (): void => {
      this.snapshotBusy = false;
      this.logger.info({ bytes, ms: Math.round(performance.now() - started), complete: res.writableFinished }, 'heap snapshot sent');
    };
    res.once('close', release);
    // A client that stops reading would keep the buffered snapshot (and the slot) for as long as
    // its connection lives.
    res.setTimeout(this.opts.snapshotIdleMs ?? DEFAULT_SNAPSHOT_IDLE_MS, () => {
      this.logger.warn({}, 'heap snapshot abandoned: the client read nothing for too long');
      res.destroy();
    });
    this.logger.info({}, 'taking a heap snapshot (the process pauses meanwhile)');
    const snapshot = heapSnapshotStream();
    snapshot.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    snapshot.on('error', (err) => {
      this.logger.error({ err }, 'heap snapshot failed');
      res.destroy();
    });
    res.once('close', () => snapshot.destroy());
    snapshot.pipe(res);
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        this.server.on('error', (err: Error) => this.logger.error({ err }, 'debug server error'));
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    this.profiler.cancel();
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    // Debug requests are not worth waiting for at shutdown.
    this.server.closeAllConnections();
    await closed;
  }
}

export function createDebugServer(opts: DebugServerOptions): DebugServer {
  const impl = new DebugServerImpl(opts);
  return {
    listen: (host, port) => impl.listen(host, port),
    address: () => impl.server.address(),
    close: () => impl.close(),
  };
}
