// Counters an operator can see and reset on the debug port (docs/ratelimit.md, "Counters on the debug
// port"; limitador's /counters, gubernator's reset):
//   GET  /counters?domain=<d>&entry=<key>=<value>&entry=...   every limit the descriptor matches:
//        its store key(s), stored value, count, remaining and seconds until reset, read from the
//        configured store (one get) and explained by the engine's own arithmetic (counter-view.ts)
//   POST /counters/reset  {"domain": "...", "entries": [{"key": "...", "value": "..."}]}
//        deletes those keys (and forgets them in this process's local over-limit cache); off unless
//        COUNTERS_RESET_ENABLED=true; every reset is logged with the remote address and counted.
// Access: the operator page's rule (OPERATOR_PAGE): loopback clients naming a loopback host unless
// `on`. A reset must be a POST with a JSON body and, when the browser sends an Origin, a loopback
// one: a web page elsewhere cannot make a browser reset counters (a cross-site form cannot send
// JSON, and fetch with JSON needs a preflight this server never grants).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { counterView, limitKeys, unitName, type Clock, type Counter, type CounterStore, type DescriptorEntry, type Limit, type LocalOverLimitCache, type RuleSet, type StatsStore } from '@rls/engine';
import type { RequestLimits } from '@rls/rls-proto';
import { isLoopbackAddress, isLoopbackHost } from '../server/debug-access.js';

export const COUNTERS_PATH = '/counters';
export const COUNTERS_RESET_PATH = '/counters/reset';
/** Largest reset body read (a descriptor at the request bounds is far smaller). */
export const MAX_RESET_BODY_BYTES = 16 * 1024;

export interface CountersLogger {
  warn(obj: object, msg: string): void;
}

export interface CountersRoutesOptions {
  readonly mode: 'loopback' | 'on';
  readonly resetEnabled: boolean;
  readonly rules: () => RuleSet | undefined;
  /** The configured store itself (not the traced or timed wrappers: these reads are not traffic). */
  readonly store: CounterStore;
  /** This process's local over-limit cache, when on. */
  readonly localCache: () => LocalOverLimitCache | undefined;
  readonly cacheKeyPrefix: string;
  readonly clock: Clock;
  readonly stats: StatsStore;
  readonly logger: CountersLogger;
  /** MAX_DESCRIPTOR_ENTRIES and MAX_DESCRIPTOR_ENTRY_BYTES bound a looked-up descriptor as they bound a request. */
  readonly requestLimits: RequestLimits;
}

export interface LimitCounter {
  readonly name: string;
  /** `10/SECOND`, `100/5 × MINUTE`. */
  readonly limit: string;
  readonly algorithm: string;
  readonly windowSeconds: number;
  readonly key: string;
  readonly previousKey?: string;
  /** The stored value (a bucket: its theoretical arrival time in µs). */
  readonly value: number;
  readonly previous?: number;
  readonly count: number;
  readonly remaining: number;
  readonly resetSeconds: number;
}

export interface CountersAnswer {
  readonly domain: string;
  readonly entries: readonly DescriptorEntry[];
  readonly store: string;
  readonly unlimited: boolean;
  readonly limits: readonly LimitCounter[];
}

const HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8' };

function json(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...HEADERS, 'content-length': Buffer.byteLength(text), ...extra });
  res.end(text);
}

class BadInput extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class CountersRoutes {
  private readonly resets: Counter;
  private readonly refused: Counter;

  constructor(private readonly opts: CountersRoutesOptions) {
    this.resets = opts.stats.counter('ratelimit.operator.counters_reset');
    this.refused = opts.stats.counter('ratelimit.operator.counters_reset_refused');
  }

  /** Answers /counters and /counters/reset (true), or leaves the request (false, body untouched). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://debug');
    const path = url.pathname;
    if (path !== COUNTERS_PATH && path !== COUNTERS_RESET_PATH) return false;
    if (this.opts.mode === 'loopback' && !(isLoopbackAddress(req.socket.remoteAddress) && isLoopbackHost(req.headers.host))) {
      req.resume();
      json(res, 403, { error: 'the counters answer only loopback clients that name a loopback host (OPERATOR_PAGE=loopback); reach them through 127.0.0.1, or set OPERATOR_PAGE=on on a private network' });
      return true;
    }
    const done = path === COUNTERS_PATH ? this.lookupRoute(req, res, url) : this.resetRoute(req, res);
    done.catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof BadInput) json(res, err.status, { error: err.message });
      else json(res, 503, { error: `the ${this.opts.store.kind} store did not answer: ${err instanceof Error ? err.message : String(err)}` });
    });
    return true;
  }

  private async lookupRoute(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    req.resume();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(res, 405, { error: `method ${req.method ?? ''} not allowed; use GET (POST ${COUNTERS_RESET_PATH} resets)` }, { allow: 'GET, HEAD' });
      return;
    }
    const domain = url.searchParams.get('domain') ?? '';
    const entries = url.searchParams.getAll('entry').map((raw) => {
      const eq = raw.indexOf('=');
      if (eq <= 0) throw new BadInput(400, `entry '${raw.slice(0, 100)}' must be key=value`);
      return { key: raw.slice(0, eq), value: raw.slice(eq + 1) };
    });
    json(res, 200, await this.lookup(domain, entries));
  }

  /** The descriptor's limits with their store values (throws BadInput 400/404/503). */
  async lookup(domain: string, entries: readonly DescriptorEntry[]): Promise<CountersAnswer> {
    const { limits, keys } = this.keysOf(domain, entries);
    const values = keys.length === 0 ? [] : await this.opts.store.get(keys.flatMap((k) => (k.previousKey === undefined ? [k.key] : [k.key, k.previousKey])));
    const nowMs = this.opts.clock.now();
    let at = 0;
    const out: LimitCounter[] = limits.map((limit, i) => {
      const k = keys[i]!;
      const value = values[at++] ?? 0;
      const previous = k.previousKey === undefined ? undefined : (values[at++] ?? 0);
      const view = counterView(limit, value, previous ?? 0, nowMs);
      return {
        name: limit.name,
        limit: `${limit.requestsPerUnit}/${limit.unitMultiplier === 1 ? '' : `${limit.unitMultiplier} × `}${unitName(limit.unit)}`,
        algorithm: limit.algorithm,
        windowSeconds: limit.windowSeconds,
        key: k.key,
        ...(k.previousKey !== undefined ? { previousKey: k.previousKey, previous: previous ?? 0 } : {}),
        value,
        ...view,
      };
    });
    return { domain, entries, store: this.opts.store.kind, unlimited: limits.length === 0, limits: out };
  }

  private keysOf(domain: string, entries: readonly DescriptorEntry[]): { limits: readonly Limit[]; keys: { key: string; previousKey?: string }[] } {
    const bounds = this.opts.requestLimits;
    if (domain === '') throw new BadInput(400, 'domain must not be empty');
    if (entries.length === 0) throw new BadInput(400, 'a descriptor needs at least one entry (entry=key=value)');
    if (entries.length > bounds.maxEntriesPerDescriptor) throw new BadInput(400, `more than ${bounds.maxEntriesPerDescriptor} entries (MAX_DESCRIPTOR_ENTRIES)`);
    for (const e of entries) {
      if (Buffer.byteLength(e.key) + Buffer.byteLength(e.value) > bounds.maxEntryBytes) throw new BadInput(400, `an entry is longer than ${bounds.maxEntryBytes} bytes (MAX_DESCRIPTOR_ENTRY_BYTES)`);
    }
    const rules = this.opts.rules();
    if (rules === undefined) throw new BadInput(503, 'no rate limit configuration loaded');
    const found = rules.lookup(domain, entries);
    if (found === undefined) throw new BadInput(404, `no rule with a limit matches this descriptor in domain '${domain.slice(0, 200)}'`);
    const nowSeconds = Math.floor(this.opts.clock.now() / 1000);
    const keys = found.limits.map((l) => limitKeys(this.opts.cacheKeyPrefix, domain, entries, found.sharePatterns, l, nowSeconds));
    return { limits: found.limits, keys };
  }

  private async resetRoute(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const remote = req.socket.remoteAddress ?? '';
    const refuse = (status: number, error: string, extra: Record<string, string> = {}): void => {
      req.resume();
      this.refused.inc();
      json(res, status, { error }, extra);
    };
    if (req.method !== 'POST') return refuse(405, `method ${req.method ?? ''} not allowed; use POST with a JSON body`, { allow: 'POST' });
    if (!this.opts.resetEnabled) return refuse(403, 'counter reset is off; set COUNTERS_RESET_ENABLED=true to allow it');
    const origin = req.headers.origin;
    if (origin !== undefined && !isLoopbackHost(hostOf(origin))) return refuse(403, `a reset from origin ${origin.slice(0, 100)} is refused: only pages on a loopback host may reset`);
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return refuse(415, 'a reset body must be application/json: {"domain": "...", "entries": [{"key": "...", "value": "..."}]}');
    const body = await readBody(req, MAX_RESET_BODY_BYTES);
    if (body === undefined) return refuse(413, `a reset body is at most ${MAX_RESET_BODY_BYTES} bytes`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return refuse(400, 'the body is not valid JSON');
    }
    const { domain, entries } = descriptorOf(parsed);
    const { keys } = this.keysOf(domain, entries);
    const all = keys.flatMap((k) => (k.previousKey === undefined ? [k.key] : [k.key, k.previousKey]));
    const del = this.opts.store.delete?.bind(this.opts.store);
    if (del === undefined) throw new BadInput(501, `the ${this.opts.store.kind} store cannot reset counters`);
    await del(all);
    const cache = this.opts.localCache();
    for (const k of all) cache?.forget(k);
    this.resets.inc();
    this.opts.logger.warn({ remote, domain, entries, keys: all }, 'counters reset by an operator');
    json(res, 200, { reset: all, domain, entries });
  }
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

/** The body, or undefined when it is longer than `max` bytes (reading stops there). */
function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(size > max ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function descriptorOf(v: unknown): { domain: string; entries: DescriptorEntry[] } {
  const o = v as { domain?: unknown; entries?: unknown } | null;
  if (o === null || typeof o !== 'object' || typeof o.domain !== 'string' || !Array.isArray(o.entries)) {
    throw new BadInput(400, 'expected {"domain": "...", "entries": [{"key": "...", "value": "..."}]}');
  }
  const entries = (o.entries as unknown[]).map((e) => {
    const x = e as { key?: unknown; value?: unknown } | null;
    if (x === null || typeof x !== 'object' || typeof x.key !== 'string' || typeof (x.value ?? '') !== 'string') throw new BadInput(400, 'every entry needs a string key and value');
    return { key: x.key, value: (x.value ?? '') as string };
  });
  return { domain: o.domain, entries };
}
