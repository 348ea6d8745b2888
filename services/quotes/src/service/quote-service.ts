import { createHash } from 'node:crypto';
import type { Plan } from '../accounts/plans.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { FxHistory } from '../history/fx-history.js';
import type { HistoryService } from '../history/history-service.js';
import { historyWindow, type HistoryParams } from '../history/range-rules.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import type { MarketSnapshot, MarketSnapshots } from '../market/market-snapshots.js';
import type { Ticker } from '../market/types.js';
import { valueFormat } from './value-precision.js';

export interface CryptoRequest {
  /** Upper-case, de-duplicated, all known to the catalogue. */
  coins: readonly string[];
  currency: string;
  history: HistoryParams | undefined;
  plan: Plan;
  /** Origin used for absolute icon URLs. */
  baseUrl: string;
}

export interface CryptoResult {
  /** The JSON text of the `coins` array. */
  coinsJson: string;
  etag: string;
  /** Seconds until fresher data may exist. */
  maxAgeSeconds: number;
}

export interface QuoteServiceDeps {
  snapshots: MarketSnapshots;
  history: HistoryService;
  fxHistory: FxHistory;
  catalog: CoinCatalog;
  clock: Clock;
  /** A ticker or FX rate older than this (ms) is not served. */
  staleMs: number;
  refreshMs: number;
  /** Most responses kept in the cache. */
  cacheEntries?: number;
}

interface HistoricalPoint {
  date: number;
  open: number | null;
  high: number | null;
  low: number | null;
  close: number | null;
  volume: number | null;
  adjustedClose: number | null;
}

function cacheKey(req: CryptoRequest): string {
  return `${req.currency}|${req.history?.range ?? ''}|${req.history?.interval ?? ''}|${req.plan.id}|${req.baseUrl}|${req.coins.join(',')}`;
}

/**
 * Assembles brapi `Coin` records: latest tickers converted at the latest rate, and history
 * converted point by point at the rate of each candle's UTC close date. Responses are cached
 * per market snapshot, so repeated identical requests cost a map lookup.
 */
export class QuoteService {
  private readonly cache = new Map<string, CryptoResult & { version: number }>();
  private readonly cacheEntries: number;
  constructor(private readonly deps: QuoteServiceDeps) {
    this.cacheEntries = deps.cacheEntries ?? 2000;
  }

  async quote(req: CryptoRequest): Promise<CryptoResult> {
    const snap = await this.deps.snapshots.current();
    const now = this.deps.clock.now();
    const problem = this.problem(snap, req, now);
    if (problem !== undefined) throw problem;
    const rate = snap.fx.rates.get(req.currency) as number;
    const maxAgeSeconds = this.maxAge(snap, now);
    const key = cacheKey(req);
    const hit = this.cache.get(key);
    if (hit !== undefined && hit.version === snap.version) return { coinsJson: hit.coinsJson, etag: hit.etag, maxAgeSeconds };

    const coins = await Promise.all(req.coins.map((c) => this.coin(c, snap.tickers.get(c) as Ticker, req, rate)));
    const coinsJson = JSON.stringify(coins);
    const etag = `W/"${createHash('sha1').update(coinsJson).digest('base64url')}"`;
    if (this.cache.size >= this.cacheEntries) {
      const oldest = this.cache.keys().next();
      if (oldest.done !== true) this.cache.delete(oldest.value);
    }
    this.cache.set(key, { coinsJson, etag, maxAgeSeconds, version: snap.version });
    return { coinsJson, etag, maxAgeSeconds };
  }

  /**
   * The answer `quote` would give when it is already cached and needs no refresh, else
   * undefined (also for every error case, which `quote` then reports). Synchronous and free of
   * side effects, so a caller may ask it before admitting a request.
   */
  cachedQuote(req: CryptoRequest): CryptoResult | undefined {
    const snap = this.deps.snapshots.peek();
    if (snap === undefined) return undefined;
    const now = this.deps.clock.now();
    if (this.problem(snap, req, now) !== undefined) return undefined;
    const hit = this.cache.get(cacheKey(req));
    if (hit === undefined || hit.version !== snap.version) return undefined;
    return { coinsJson: hit.coinsJson, etag: hit.etag, maxAgeSeconds: this.maxAge(snap, now) };
  }

  private maxAge(snap: MarketSnapshot, now: number): number {
    return Math.max(0, Math.ceil((snap.fetchedAt + this.deps.refreshMs - now) / 1000));
  }

  /** Why `req` cannot be answered from `snap` (missing or stale data), or undefined. */
  private problem(snap: MarketSnapshot, req: CryptoRequest, now: number): QuotesError | undefined {
    let missing: string[] | undefined;
    let stale: string[] | undefined;
    let oldest = Infinity;
    for (const c of req.coins) {
      const t = snap.tickers.get(c);
      if (t === undefined || !(t.lastPrice > 0)) (missing ??= []).push(c);
      // Old data is never served as current: the answer says how old it is.
      else if (now - t.closeTime > this.deps.staleMs) {
        (stale ??= []).push(c);
        oldest = Math.min(oldest, t.closeTime);
      }
    }
    if (missing !== undefined) return new QuotesError('QUOTE_UNAVAILABLE', { coins: missing });
    const limitSeconds = Math.round(this.deps.staleMs / 1000);
    if (stale !== undefined) return new QuotesError('QUOTE_UNAVAILABLE', { coins: stale, ageSeconds: Math.floor((now - oldest) / 1000), limitSeconds });
    const rate = snap.fx.rates.get(req.currency);
    if (rate === undefined || !(rate > 0)) return new QuotesError('QUOTE_UNAVAILABLE', { coins: [`USD/${req.currency}`] });
    if (req.currency !== 'USD' && now - snap.fx.time > this.deps.staleMs) {
      return new QuotesError('QUOTE_UNAVAILABLE', { coins: [`USD/${req.currency}`], ageSeconds: Math.floor((now - snap.fx.time) / 1000), limitSeconds });
    }
    return undefined;
  }

  private async coin(symbol: string, t: Ticker, req: CryptoRequest, rate: number): Promise<Record<string, unknown>> {
    const info = this.deps.catalog.get(symbol);
    const fmt = valueFormat(req.currency);
    const low = t.lowPrice * rate;
    const high = t.highPrice * rate;
    // Key order follows brapi's documented example, for clients that compare text.
    const out: Record<string, unknown> = {
      currency: req.currency,
      currencyRateFromUSD: fmt.rate(rate),
      coinName: info?.name ?? symbol,
      coin: symbol,
      regularMarketChange: fmt.price(t.priceChange * rate),
      regularMarketPrice: fmt.price(t.lastPrice * rate),
      regularMarketChangePercent: fmt.percent(t.priceChangePercent),
      regularMarketDayLow: fmt.price(low),
      regularMarketDayHigh: fmt.price(high),
      regularMarketDayRange: fmt.dayRange(low, high),
      regularMarketVolume: fmt.amount(t.quoteVolume * rate),
      marketCap: t.circulatingSupply === undefined ? 0 : fmt.amount(t.lastPrice * t.circulatingSupply * rate),
      regularMarketTime: new Date(t.closeTime).toISOString(),
      coinImageUrl: `${req.baseUrl}/icons/${symbol.toLowerCase()}.svg`,
    };
    if (req.history !== undefined) {
      const asOf = Math.floor(t.closeTime / 1000);
      const w = historyWindow(req.history, asOf, req.plan);
      const points = await this.deps.history.series(symbol, w.usedInterval, w.from, w.to);
      const rateOn = await this.deps.fxHistory.lookup(req.currency);
      const hist: HistoricalPoint[] = points.map((p) => {
        const r = rateOn(Math.floor((p.closeTime - 1) / 86_400));
        if (r === null) return { date: p.time, open: null, high: null, low: null, close: null, volume: null, adjustedClose: null };
        const close = fmt.price(p.close * r);
        return { date: p.time, open: fmt.price(p.open * r), high: fmt.price(p.high * r), low: fmt.price(p.low * r), close, volume: p.volume === null ? null : fmt.amount(p.volume * r), adjustedClose: close };
      });
      out.usedInterval = w.usedInterval;
      out.usedRange = w.usedRange;
      out.historicalDataPrice = hist;
      out.validRanges = req.plan.ranges;
      out.validIntervals = req.plan.intervals;
    }
    return out;
  }
}
