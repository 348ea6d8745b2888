import type { Exchange } from 'ccxt';
import type * as CcxtNamespace from 'ccxt';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { backoffMs, parseRetryAfter, withRetry, type FailureClass, type RetryPolicy, type UpstreamCounters } from './retry.js';

/** A spot market as the exchange lists it, in ccxt's unified naming (`BTC/USDT`). */
export interface SpotMarket {
  symbol: string;
  base: string;
  quote: string;
}

/** A 24 h ticker of one pair, prices in the pair's quote currency. */
export interface PairTicker {
  symbol: string;
  last: number;
  open: number;
  high: number;
  low: number;
  /** Traded value in the quote currency. */
  quoteVolume: number;
  /** Source time (ms): the end of the exchange's 24 h window or the stream event. */
  time: number;
  /** 24 h volume in base units (quote volume / last when the exchange gives only that). */
  baseVolume?: number;
  /** Best bid and ask, where the ticker carries them. */
  bid?: number;
  ask?: number;
}

/** One kline as the exchange reports it; prices in the pair's quote currency. */
export interface OhlcvRow {
  /** Open time, milliseconds. */
  time: number;
  open: number;
  high: number;
  low: number;
  close: number;
  /**
   * Traded value in the quote currency (Binance's kline field 7, "quote asset volume"); null
   * where the exchange's klines (as ccxt returns them) carry only base volume.
   */
  quoteVolume: number | null;
}

/** What the market layer needs from one exchange; ccxt behind it, fakes never needed (tests use fake servers). */
export interface ExchangeClient {
  readonly id: string;
  markets(): Promise<SpotMarket[]>;
  /** One batched call for many pairs; pairs the exchange did not answer are absent. */
  tickers(symbols: readonly string[]): Promise<PairTicker[]>;
  /** Klines opening at or after `sinceMs`, ascending, the newest possibly still in progress. */
  ohlcv(symbol: string, timeframe: string, sinceMs: number, limit: number): Promise<OhlcvRow[]>;
  /** Streams tickers until `stop()`; false when the exchange has no WebSocket support in ccxt. */
  stream(symbols: readonly string[], onTickers: (t: PairTicker[]) => void): Promise<boolean>;
  close(): Promise<void>;
}

export interface CcxtClientOptions {
  id: string;
  /** Replaces the origin of every REST URL of the exchange (paths kept). */
  restUrl?: string;
  /** Replaces the origin of every WebSocket URL; default derived from restUrl. */
  wsUrl?: string;
  timeoutMs: number;
  /** ms per unit of request weight for ccxt's throttle; undefined keeps ccxt's value for the exchange. */
  rateLimitMs?: number;
  retry: RetryPolicy;
  clock: Clock;
  counters: UpstreamCounters;
  log: Logger;
}

// ccxt is 60 MB of JavaScript: loaded on first use, so the simulated quick start never pays for it.
type CcxtModule = typeof CcxtNamespace;
let ccxtModule: Promise<CcxtModule> | undefined;
export function loadCcxt(): Promise<CcxtModule> {
  ccxtModule ??= import('ccxt');
  return ccxtModule;
}

function rewriteOrigin(value: string, base: string): string {
  const u = new URL(value);
  const b = new URL(base);
  const prefix = b.pathname.replace(/\/+$/, '');
  return `${b.protocol}//${b.host}${prefix}${u.pathname}${u.search}`;
}

/** Every URL string under `urls.api`, REST ones onto `rest`, ws(s) ones onto `ws`. */
function rewriteApiUrls(node: unknown, rest: string | undefined, ws: string | undefined): unknown {
  if (typeof node === 'string') {
    if (!/^[a-z]+:\/\//.test(node)) return node;
    const isWs = /^wss?:/.test(node);
    const target = isWs ? ws : rest;
    return target === undefined ? node : rewriteOrigin(node, target);
  }
  if (node !== null && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = rewriteApiUrls(v, rest, ws);
    return out;
  }
  return node;
}

const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/**
 * Exchanges answering Binance's spot `GET /api/v3/klines`, whose rows carry the quote-asset
 * volume (field 7) that ccxt's fetchOHLCV drops; they are asked through ccxt's raw endpoint
 * method, keeping ccxt's URL handling, throttling and error mapping.
 */
const BINANCE_KLINES: ReadonlySet<string> = new Set(['binance', 'binanceus']);

/** Binance klines `[openTime, o, h, l, c, baseVolume, closeTime, quoteVolume, ...]`, prices as decimal strings. */
async function binanceKlines(ex: Exchange, symbol: string, timeframe: string, sinceMs: number, limit: number): Promise<OhlcvRow[]> {
  await ex.loadMarkets();
  const market = ex.market(symbol); // BadSymbol for an unknown pair, as fetchOHLCV would throw
  const interval = (ex.timeframes as Record<string, string | undefined>)[timeframe] ?? timeframe;
  const endpoint = (ex as unknown as Record<string, unknown>).publicGetKlines;
  if (typeof endpoint !== 'function') throw new TypeError(`ccxt ${ex.id} has no publicGetKlines`);
  const rows = await (endpoint as (p: Record<string, unknown>) => Promise<unknown>).call(ex, { symbol: market.id, interval, startTime: sinceMs, limit });
  if (!Array.isArray(rows)) throw new TypeError('klines payload is not an array');
  return rows.map((r: unknown): OhlcvRow => {
    if (!Array.isArray(r) || r.length < 8) throw new TypeError('malformed kline row');
    const v = [r[0], r[1], r[2], r[3], r[4], r[7]].map((x) => (typeof x === 'string' || typeof x === 'number' ? Number(x) : NaN));
    if (!v.every(Number.isFinite)) throw new TypeError('malformed kline row');
    const [time, open, high, low, close, quoteVolume] = v as [number, number, number, number, number, number];
    return { time, open, high, low, close, quoteVolume };
  });
}

/**
 * One exchange through ccxt: markets, batched tickers, OHLCV pages and (optionally) the ticker
 * stream. Calls are throttled by ccxt to the exchange's request weights, retried with backoff,
 * and a 429/418 answer pauses every call to that exchange until its Retry-After has passed.
 */
export class CcxtExchangeClient implements ExchangeClient {
  readonly id: string;
  private rest: Promise<Exchange> | undefined;
  private ws: Exchange | undefined;
  private stopped = false;
  private pausedUntil = 0;
  constructor(private readonly opts: CcxtClientOptions) {
    this.id = opts.id;
  }

  private wsBase(): string | undefined {
    if (this.opts.wsUrl !== undefined) return this.opts.wsUrl;
    return this.opts.restUrl?.replace(/^http/, 'ws');
  }

  private async make(pro: boolean): Promise<Exchange | undefined> {
    const ccxt = await loadCcxt();
    const registry = (pro ? ccxt.pro : ccxt) as unknown as Record<string, new (config: Record<string, unknown>) => Exchange>;
    const Ctor = registry[this.id];
    if (Ctor === undefined) {
      if (pro) return undefined;
      throw new Error(`ccxt has no exchange "${this.id}"`);
    }
    const probe = new Ctor({});
    const config: Record<string, unknown> = { timeout: this.opts.timeoutMs, enableRateLimit: true };
    if (this.opts.rateLimitMs !== undefined) config.rateLimit = this.opts.rateLimitMs;
    if (this.opts.restUrl !== undefined || this.opts.wsUrl !== undefined) {
      config.urls = { ...probe.urls, api: rewriteApiUrls(probe.urls.api, this.opts.restUrl, this.wsBase()) };
    }
    const ex = new Ctor(config);
    // Spot only: otherwise loadMarkets also asks futures hosts (Binance's default types).
    const fm = (ex.options as Record<string, unknown>).fetchMarkets as { types?: unknown } | undefined;
    if (fm !== undefined && Array.isArray(fm.types)) fm.types = ['spot'];
    if (pro && /^ws:/.test(this.wsBase() ?? '')) await ex.loadHttpProxyAgent(); // plain ws:// needs it in Node
    return ex;
  }

  private exchange(): Promise<Exchange> {
    this.rest ??= this.make(false).then((e) => e as Exchange);
    this.rest.catch(() => (this.rest = undefined));
    return this.rest;
  }

  private classify(ex: Exchange | undefined, ccxt: CcxtModule, err: unknown): FailureClass {
    const headers = (ex?.last_response_headers ?? {}) as Record<string, string>;
    const retryAfterRaw = Object.entries(headers).find(([k]) => k.toLowerCase() === 'retry-after')?.[1];
    const retryAfterMs = parseRetryAfter(retryAfterRaw, this.opts.clock.now());
    const after = retryAfterMs === undefined ? {} : { retryAfterMs };
    if (err instanceof ccxt.RequestTimeout) return { retryable: true, reason: 'timeout' };
    if (err instanceof ccxt.DDoSProtection || err instanceof ccxt.RateLimitExceeded) {
      const banned = /\b418\b/.test((err as Error).message);
      return { retryable: true, reason: banned ? 'banned' : 'rate-limited', ...after };
    }
    if (err instanceof ccxt.BadSymbol || err instanceof ccxt.BadRequest || err instanceof ccxt.NotSupported || err instanceof ccxt.AuthenticationError || err instanceof ccxt.PermissionDenied) {
      return { retryable: false, reason: 'rejected' };
    }
    if (err instanceof ccxt.BadResponse || err instanceof ccxt.NullResponse) return { retryable: true, reason: 'malformed' };
    if (err instanceof ccxt.NetworkError) return { retryable: true, reason: 'network' };
    if (err instanceof ccxt.ExchangeError) return { retryable: true, reason: 'exchange-error' };
    // TypeError, SyntaxError and our own shape checks: the payload was not what the API promises.
    return { retryable: true, reason: 'malformed' };
  }

  private async call<T>(what: string, fn: (ex: Exchange) => Promise<T>): Promise<T> {
    const ccxt = await loadCcxt();
    const ex = await this.exchange();
    const upstream = `${this.id}.${what}`;
    return withRetry(
      upstream,
      async () => {
        const wait = this.pausedUntil - this.opts.clock.now();
        if (wait > 0) await this.opts.retry.sleep(wait);
        this.opts.counters.add(`${this.id}.requests`);
        return await fn(ex);
      },
      (err) => this.classify(ex, ccxt, err),
      this.opts.retry,
      {
        onFailure: (failure, attempt, waitMs, err) => {
          this.opts.counters.add(`${this.id}.failures`);
          this.opts.counters.add(`${this.id}.${failure.reason}`);
          if (failure.retryAfterMs !== undefined) this.pausedUntil = Math.max(this.pausedUntil, this.opts.clock.now() + failure.retryAfterMs);
          this.opts.log.warn({ exchange: this.id, call: what, reason: failure.reason, attempt, retryInMs: waitMs, err: (err as Error).message }, waitMs === undefined ? 'exchange call failed' : 'exchange call failed; retrying');
        },
      },
    );
  }

  async markets(): Promise<SpotMarket[]> {
    const list = await this.call('markets', async (ex) => {
      const m = await ex.loadMarkets(true);
      if (m === null || typeof m !== 'object' || Object.keys(m).length === 0) throw new TypeError('empty market list');
      return m;
    });
    const out: SpotMarket[] = [];
    for (const m of Object.values(list)) {
      if (m === undefined || m.spot !== true || m.active === false || typeof m.base !== 'string' || typeof m.quote !== 'string') continue;
      out.push({ symbol: m.symbol, base: m.base, quote: m.quote });
    }
    return out;
  }

  async tickers(symbols: readonly string[]): Promise<PairTicker[]> {
    if (symbols.length === 0) return [];
    const raw = await this.call('tickers', async (ex) => {
      // Past ~100 pairs Binance-style weights make "all tickers" the cheaper single call.
      const r = await (symbols.length > 100 ? ex.fetchTickers() : ex.fetchTickers([...symbols]));
      if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new TypeError('tickers payload is not an object');
      return r;
    });
    return Object.values(raw).flatMap((t) => {
      const p = t === undefined ? undefined : toPairTicker(t);
      return p === undefined ? [] : [p];
    });
  }

  async ohlcv(symbol: string, timeframe: string, sinceMs: number, limit: number): Promise<OhlcvRow[]> {
    return await this.call('ohlcv', async (ex) => {
      if (BINANCE_KLINES.has(this.id)) return await binanceKlines(ex, symbol, timeframe, sinceMs, limit);
      // ccxt's unified rows are [t, o, h, l, c, baseVolume]: the quote volume is not there.
      const rows = (await ex.fetchOHLCV(symbol, timeframe, sinceMs, limit)) as unknown;
      if (!Array.isArray(rows)) throw new TypeError('OHLCV payload is not an array');
      return rows.map((r: unknown): OhlcvRow => {
        if (!Array.isArray(r) || r.length < 6 || !r.slice(0, 6).every(finite)) throw new TypeError('malformed OHLCV row');
        const [time, open, high, low, close] = r as number[];
        return { time: time!, open: open!, high: high!, low: low!, close: close!, quoteVolume: null };
      });
    });
  }

  async stream(symbols: readonly string[], onTickers: (t: PairTicker[]) => void): Promise<boolean> {
    this.ws ??= await this.make(true);
    const ws = this.ws;
    if (ws === undefined || ws.has.watchTickers !== true) return false;
    void (async () => {
      let failures = 0;
      while (!this.stopped) {
        try {
          const got = await ws.watchTickers([...symbols]);
          failures = 0;
          const list = Object.values(got).flatMap((t) => {
            const p = t === undefined ? undefined : toPairTicker(t);
            return p === undefined ? [] : [p];
          });
          if (list.length > 0) onTickers(list);
        } catch (err) {
          if (this.stopped) return;
          failures++;
          this.opts.counters.add(`${this.id}.stream-failures`);
          const wait = backoffMs(this.opts.retry, failures);
          this.opts.log.warn({ exchange: this.id, err: (err as Error).message, retryInMs: wait }, 'ticker stream failed; reconnecting');
          await this.opts.retry.sleep(wait);
        }
      }
    })();
    return true;
  }

  async close(): Promise<void> {
    this.stopped = true;
    const rest = this.rest;
    await Promise.allSettled([this.ws?.close(), rest?.then((e) => e.close())]);
  }
}

function toPairTicker(t: { symbol?: unknown; last?: unknown; close?: unknown; open?: unknown; high?: unknown; low?: unknown; quoteVolume?: unknown; baseVolume?: unknown; timestamp?: unknown; bid?: unknown; ask?: unknown }): PairTicker | undefined {
  const last = finite(t.last) ? t.last : finite(t.close) ? t.close : undefined;
  if (typeof t.symbol !== 'string' || last === undefined || !(last > 0) || !finite(t.timestamp)) return undefined;
  const open = finite(t.open) && t.open > 0 ? t.open : last;
  const high = finite(t.high) ? Math.max(t.high, last) : last;
  const low = finite(t.low) && t.low > 0 ? Math.min(t.low, last) : last;
  const quoteVolume = finite(t.quoteVolume) ? t.quoteVolume : finite(t.baseVolume) ? t.baseVolume * last : 0;
  const out: PairTicker = { symbol: t.symbol, last, open, high, low, quoteVolume, time: t.timestamp, baseVolume: finite(t.baseVolume) ? t.baseVolume : quoteVolume / last };
  // A crossed or empty book side is not a quote.
  if (finite(t.bid) && finite(t.ask) && t.bid > 0 && t.ask >= t.bid) [out.bid, out.ask] = [t.bid, t.ask];
  return out;
}
