// The debug server (reference §4.4; DEBUG_HOST:DEBUG_PORT, default 0.0.0.0:6070). Plain text, GET:
//   /                         index: one `<path>: <help>` line per endpoint, sorted by path
//   /rlconfig                 the loaded rules in upstream's dump format (empty when none)
//   /stats                    every counter, gauge and timer with its current value, sorted —
//                             the real rate-limit statistics (upstream prints only Go expvars)
//   /debug/pprof/             index of the profiling endpoints (Node equivalents of Go's pprof):
//   /debug/pprof/profile      CPU profile for ?seconds=N (default 30, 1..120) as a .cpuprofile
//   /debug/pprof/heap         heap snapshot as a .heapsnapshot
// Both profiles load in Chrome DevTools (Performance / Memory tab, "Load profile").
// Unknown paths answer 404 with the index as the body (upstream answers them 200 with the index;
// a 404 tells scripts they asked for something that does not exist, the body still guides people).
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RuleSet } from '../config/rule-set.js';
import type { StatsStore } from '../stats/stats-store.js';
import { CpuProfiler, heapSnapshotStream } from './debug-profiler.js';
import { silentLogger, type TransportLogger } from './transport-logger.js';

export interface DebugServerOptions {
  /** The rule set currently in force (undefined before the first successful load). */
  rules: () => RuleSet | undefined;
  stats: StatsStore;
  logger?: TransportLogger | undefined;
  /** Upper bound of `?seconds=` for CPU profiles (default 120). */
  maxProfileSeconds?: number | undefined;
}

export interface DebugServer {
  listen(host: string, port: number): Promise<void>;
  address(): AddressInfo | string | null;
  /** Stops accepting, ends a running CPU profile, closes the connections. */
  close(): Promise<void>;
}

const DEFAULT_PROFILE_SECONDS = 30;

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

/** `/stats` text: counters (totals), gauges (current values), timers (count and sum in ms). */
export function statsText(stats: StatsStore): string {
  const lines: string[] = [];
  for (const c of stats.allCounters()) lines.push(`${statName(c.name, c.tags)}: ${formatNumber(c.total)}`);
  for (const g of stats.allGauges()) lines.push(`${statName(g.name, g.tags)}: ${formatNumber(g.current)}`);
  for (const t of stats.allTimers()) lines.push(`${statName(t.name, t.tags)}: count=${t.count} sum_ms=${formatNumber(t.sumMs)}`);
  lines.sort();
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

function sendText(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function fileStamp(d: Date): string {
  return d.toISOString().replace(/[:.]/g, '-');
}

class DebugServerImpl {
  readonly server: http.Server;
  private readonly profiler = new CpuProfiler();
  private readonly logger: TransportLogger;
  private readonly maxSeconds: number;

  constructor(private readonly opts: DebugServerOptions) {
    this.logger = opts.logger ?? silentLogger;
    this.maxSeconds = opts.maxProfileSeconds ?? 120;
    this.server = http.createServer((req, res) => {
      this.route(req, res).catch((err: unknown) => {
        this.logger.error({ err }, 'debug request failed');
        if (!res.headersSent) sendText(res, 500, `${err instanceof Error ? err.message : String(err)}\n`);
        else res.destroy();
      });
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://debug');
    const path = url.pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendText(res, 405, `method ${req.method ?? ''} not allowed; use GET\n`, { allow: 'GET, HEAD' });
      return;
    }
    switch (path) {
      case '/':
        sendText(res, 200, indexText(ENDPOINTS));
        return;
      case '/rlconfig':
        sendText(res, 200, this.opts.rules()?.dump() ?? '');
        return;
      case '/stats':
        sendText(res, 200, statsText(this.opts.stats));
        return;
      case '/debug/pprof':
        res.writeHead(301, { location: '/debug/pprof/', 'content-length': 0 });
        res.end();
        return;
      case '/debug/pprof/':
        sendText(res, 200, indexText(Object.fromEntries(Object.entries(ENDPOINTS).filter(([p]) => p.startsWith('/debug/pprof/') && p !== '/debug/pprof/'))));
        return;
      case '/debug/pprof/profile':
        await this.cpuProfile(url, res);
        return;
      case '/debug/pprof/heap':
        this.heap(res);
        return;
      default:
        sendText(res, 404, indexText(ENDPOINTS));
    }
  }

  private async cpuProfile(url: URL, res: ServerResponse): Promise<void> {
    const raw = url.searchParams.get('seconds');
    const seconds = raw === null || raw === '' ? DEFAULT_PROFILE_SECONDS : Number(raw);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > this.maxSeconds) {
      sendText(res, 400, `seconds must be an integer between 1 and ${this.maxSeconds}\n`);
      return;
    }
    if (this.profiler.busy) {
      sendText(res, 409, 'a CPU profile is already being taken; try again when it is done\n');
      return;
    }
    const stamp = fileStamp(new Date());
    // A client that gives up should not leave the profiler running for the full period.
    const stop = new AbortController();
    res.once('close', () => stop.abort());
    const profile = await this.profiler.profile(seconds * 1000, stop.signal);
    if (res.destroyed) return;
    const body = JSON.stringify(profile);
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-disposition': `attachment; filename="ratelimit-${stamp}.cpuprofile"`,
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  }

  private heap(res: ServerResponse): void {
    const stamp = fileStamp(new Date());
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-disposition': `attachment; filename="ratelimit-${stamp}.heapsnapshot"`,
    });
    const snapshot = heapSnapshotStream();
    snapshot.on('error', (err) => {
      this.logger.error({ err }, 'heap snapshot failed');
      res.destroy();
    });
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
