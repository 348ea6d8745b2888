import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { bucketEnd, bucketStart, type BaseInterval } from '../domain/intervals.js';
import { aggregateQuotes, type ExchangeQuote } from './aggregate-tickers.js';
import { USD_PEGGED } from './currencies.js';
import type { ExchangeClient, PairTicker } from './exchange-client.js';
import { PairCatalog, type Pair } from './pair-catalog.js';
import type { UpstreamCounters } from './retry.js';
import type { SupplySource } from './supply-source.js';
import type { Candle, CandlePage, CandlePageRequest, FxSnapshot, MarketSource, MarketTickers, Ticker, VenueTicker } from '../domain/market.js';

export interface ExchangeMarketDeps {
  /** In order of preference: the first exchange with a USD-stable pair serves a coin's candles. */
  clients: readonly ExchangeClient[];
  clock: Clock;
  log: Logger;
  counters: UpstreamCounters;
  outlierPercent: number;
  fiatPairs: readonly string[];
  /** Pair tickers older than this (ms) are not aggregated. */
  staleMs: number;
  /** Live USD->fiat rates, to price fiat-quoted pairs. */
  fxLatest?: () => Promise<FxSnapshot>;
  supply?: SupplySource;
  /** Stream tickers over WebSocket too. */
  websocket?: boolean;
}

const TIMEFRAME: Readonly<Record<BaseInterval, string>> = { '1m': '1m', '30m': '30m', '1h': '1h', '1d': '1d', '1mo': '1M' };
/** Pegged coins get synthetic 1-USD candles from here on (nothing earlier is meaningful). */
const PEGGED_FROM = Date.UTC(2015, 0, 1) / 1000;

/**
 * Live market data from the configured exchanges. Tickers: one batched call per exchange; per
 * coin and exchange the most liquid USD-stable pair (else an allowed fiat pair at the live FX
 * rate); exchanges combined by volume with outliers left out. Every exchange's last good
 * tickers are kept, so one failing exchange (or all, for a while) does not blank the market;
 * the quote service turns data older than the stale limit into 503s.
 */
export class ExchangeMarket implements MarketSource {
  readonly kind = 'exchange';
  private catalog: PairCatalog | undefined;
  private loading: Promise<PairCatalog> | undefined;
  /** `${exchange}|${pair}` -> newest ticker seen (REST or stream). */
  private readonly latest = new Map<string, PairTicker>();
  private streaming = false;

  constructor(private readonly deps: ExchangeMarketDeps) {}

  private order(): string[] {
    return this.deps.clients.map((c) => c.id);
  }

  /** Loads every exchange's market list once (retried on the next call if all failed). */
  async pairs(): Promise<PairCatalog> {
    if (this.catalog !== undefined) return this.catalog;
    this.loading ??= (async () => {
      const lists = await Promise.allSettled(this.deps.clients.map(async (c) => [c.id, await c.markets()] as const));
      const ok = new Map<string, Awaited<ReturnType<ExchangeClient['markets']>>>();
      for (const [i, r] of lists.entries()) {
        if (r.status === 'fulfilled') ok.set(r.value[0], r.value[1]);
        else this.deps.log.error({ exchange: this.deps.clients[i]?.id, err: (r.reason as Error).message }, 'loading markets failed; exchange left out');
      }
      if (ok.size === 0) throw new Error('no exchange answered its market list');
      return new PairCatalog(ok, this.deps.fiatPairs);
    })().finally(() => (this.loading = undefined));
    this.catalog = await this.loading;
    return this.catalog;
  }

  async listSymbols(): Promise<readonly string[]> {
    return (await this.pairs()).coins();
  }

  private remember(exchange: string, ts: readonly PairTicker[]): void {
    for (const t of ts) {
      const key = `${exchange}|${t.symbol}`;
      const prev = this.latest.get(key);
      if (prev === undefined || t.time >= prev.time) this.latest.set(key, t);
    }
  }

  /** Starts the ticker streams (once); REST refreshes continue as a fallback. */
  async startStreams(symbols: readonly string[]): Promise<void> {
    if (this.streaming || this.deps.websocket !== true) return;
    this.streaming = true;
    const cat = await this.pairs();
    for (const c of this.deps.clients) {
      const pairs = this.pairsOn(cat, c.id, symbols);
      if (pairs.length === 0) continue;
      const ok = await c.stream(pairs, (ts) => this.remember(c.id, ts)).catch((err: unknown) => {
        this.deps.log.warn({ exchange: c.id, err: (err as Error).message }, 'ticker stream could not start');
        return false;
      });
      this.deps.log.info({ exchange: c.id, pairs: pairs.length, streaming: ok }, ok ? 'streaming tickers over WebSocket' : 'no WebSocket support; REST refresh only');
    }
  }

  private pairsOn(cat: PairCatalog, exchange: string, symbols: readonly string[]): string[] {
    const out = new Set<string>();
    for (const s of symbols) for (const p of cat.pairs(s).get(exchange) ?? []) out.add(p.symbol);
    for (const p of cat.fxPairs) if (p.exchange === exchange) out.add(p.symbol);
    return [...out];
  }

  async tickers(symbols: readonly string[]): Promise<MarketTickers> {
    const cat = await this.pairs();
    const results = await Promise.allSettled(
      this.deps.clients.map(async (c) => {
        const list = this.pairsOn(cat, c.id, symbols);
        this.remember(c.id, await c.tickers(list));
      }),
    );
    let failed = 0;
    for (const [i, r] of results.entries()) {
      if (r.status === 'rejected') {
        failed++;
        this.deps.log.error({ exchange: this.deps.clients[i]?.id, err: (r.reason as Error).message }, 'ticker refresh failed; keeping the last good tickers');
      }
    }
    if (failed === results.length && this.latest.size === 0) throw new Error('no exchange answered tickers');
    await this.deps.supply?.refresh();
    const needsFx = this.deps.fiatPairs.length > 0 || symbols.some((s) => USD_PEGGED.has(s));
    const fx = needsFx && this.deps.fxLatest !== undefined ? await this.deps.fxLatest().catch(() => undefined) : undefined;
    const now = this.deps.clock.now();
    const out: Ticker[] = [];
    const venues: VenueTicker[] = [];
    for (const coin of symbols) {
      const collect = (allowStale: boolean): ExchangeQuote[] => {
        const qs: ExchangeQuote[] = [];
        for (const [exchange, pairs] of cat.pairs(coin)) {
          const q = this.bestQuote(exchange, pairs, fx, now, allowStale);
          if (q !== undefined) qs.push(q);
        }
        return qs;
      };
      // Stale data is still passed on when nothing fresher exists, so the answer can say how old it is.
      let quotes = collect(false);
      if (quotes.length === 0) quotes = collect(true);
      let used: ReadonlySet<string> = new Set(quotes.map((q) => `${q.exchange}|${q.pair}`));
      let outliers: ReadonlySet<string> = new Set();
      if (USD_PEGGED.has(coin)) {
        if (quotes.length > 0) {
          const time = Math.min(...quotes.map((q) => q.time));
          const quoteVolume = quotes.reduce((s, q) => s + q.quoteVolume, 0);
          out.push({ symbol: coin, lastPrice: 1, openPrice: 1, priceChange: 0, priceChangePercent: 0, highPrice: 1, lowPrice: 1, quoteVolume, openTime: time - 86_400_000, closeTime: time });
        }
      } else {
        const agg = aggregateQuotes(coin, quotes, this.deps.outlierPercent);
        if (agg !== undefined) {
          for (const o of agg.outliers) {
            this.deps.counters.add(`${o.exchange}.outliers`);
            this.deps.log.warn({ coin, exchange: o.exchange, deviationPercent: Math.round(o.deviationPercent * 100) / 100, threshold: this.deps.outlierPercent }, 'exchange price left out as an outlier');
          }
          const supply = this.deps.supply?.supply(coin);
          out.push(supply === undefined ? agg.ticker : { ...agg.ticker, circulatingSupply: supply });
          const byExchange = new Map(quotes.map((q) => [q.exchange, `${q.exchange}|${q.pair}`]));
          used = new Set(agg.used.map((e) => byExchange.get(e) ?? ''));
          outliers = new Set(agg.outliers.map((o) => byExchange.get(o.exchange) ?? ''));
        }
      }
      venues.push(...this.venueTickers(cat, coin, fx, now, used, outliers));
    }
    return { coins: out, venues };
  }

  /** Every ingested pair of `coin` on every exchange, with what the aggregation made of it. */
  private venueTickers(cat: PairCatalog, coin: string, fx: FxSnapshot | undefined, now: number, used: ReadonlySet<string>, outliers: ReadonlySet<string>): VenueTicker[] {
    const out: VenueTicker[] = [];
    for (const [exchange, pairs] of cat.pairs(coin)) {
      for (const p of pairs) {
        const key = `${exchange}|${p.symbol}`;
        const t = this.latest.get(key);
        if (t === undefined) continue;
        const rate = p.kind === 'usd' ? 1 : fx?.rates.get(p.quote);
        const status: VenueTicker['status'] = outliers.has(key) ? 'outlier' : now - t.time > this.deps.staleMs ? 'stale' : used.has(key) ? 'used' : 'unused';
        out.push({
          exchange,
          pair: p.symbol,
          base: p.base,
          target: p.quote,
          last: t.last,
          baseVolume: t.baseVolume ?? (t.last > 0 ? t.quoteVolume / t.last : 0),
          quoteVolume: t.quoteVolume,
          usdPerTarget: rate === undefined || !(rate > 0) ? null : p.kind === 'usd' ? 1 : 1 / rate,
          bid: t.bid ?? null,
          ask: t.ask ?? null,
          time: t.time,
          status,
        });
      }
    }
    return out;
  }

  /** The exchange's most liquid fresh USD-stable pair, else its most liquid allowed fiat pair, in USD. */
  private bestQuote(exchange: string, pairs: readonly Pair[], fx: FxSnapshot | undefined, now: number, allowStale: boolean): ExchangeQuote | undefined {
    let best: { t: PairTicker; usdPerUnit: number; kind: Pair['kind'] } | undefined;
    for (const p of pairs) {
      const t = this.latest.get(`${exchange}|${p.symbol}`);
      if (t === undefined || (!allowStale && now - t.time > this.deps.staleMs)) continue;
      let usdPerUnit = 1;
      if (p.kind === 'fiat') {
        const rate = fx?.rates.get(p.quote);
        if (rate === undefined || !(rate > 0)) continue;
        usdPerUnit = 1 / rate;
      }
      const better =
        best === undefined || (best.kind === 'fiat' && p.kind === 'usd') || (best.kind === p.kind && t.quoteVolume * usdPerUnit > best.t.quoteVolume * best.usdPerUnit);
      if (better) best = { t, usdPerUnit, kind: p.kind };
    }
    if (best === undefined) return undefined;
    const { t, usdPerUnit: k } = best;
    if (k === 1) return { exchange, pair: t.symbol, last: t.last, open: t.open, high: t.high, low: t.low, quoteVolume: t.quoteVolume, time: t.time };
    return { exchange, pair: t.symbol, last: t.last * k, open: t.open * k, high: t.high * k, low: t.low * k, quoteVolume: t.quoteVolume * k, time: t.time };
  }

  /** USD->fiat rates implied by stablecoin/fiat pairs (USDT/BRL, EUR/USDT), most liquid first; for exchange-derived FX. */
  async fiatRates(): Promise<{ time: number; rates: Map<string, number> }> {
    const cat = await this.pairs();
    const best = new Map<string, { rate: number; volume: number; time: number }>();
    for (const p of cat.fxPairs) {
      const t = this.latest.get(`${p.exchange}|${p.symbol}`);
      if (t === undefined) continue;
      // USDT/BRL: BRL per dollar; EUR/USDT: dollars per euro.
      const [cur, rate] = p.kind === 'fiat' ? [p.quote, t.last] : [p.base, 1 / t.last];
      const cand = { rate, volume: p.kind === 'fiat' ? t.quoteVolume / t.last : t.quoteVolume, time: t.time };
      const prev = best.get(cur);
      if (prev === undefined || cand.volume > prev.volume) best.set(cur, cand);
    }
    const times = [...best.values()].map((b) => b.time);
    return { time: times.length === 0 ? 0 : Math.min(...times), rates: new Map([...best].map(([c, b]) => [c, b.rate])) };
  }

  /** The exchange and pair serving a coin's candles: the most liquid USD-stable pair (when tickers have told us) on the first exchange having one. */
  private async candlePair(symbol: string): Promise<{ client: ExchangeClient; pair: string } | undefined> {
    const cat = await this.pairs();
    const pairs = cat.candlePairs(symbol, this.order());
    const first = pairs[0];
    if (first === undefined) return undefined;
    let pair = first;
    let vol = -1;
    for (const p of pairs) {
      const v = this.latest.get(`${p.exchange}|${p.symbol}`)?.quoteVolume ?? -1;
      if (v > vol) [pair, vol] = [p, v];
    }
    const client = this.deps.clients.find((c) => c.id === pair.exchange);
    return client === undefined ? undefined : { client, pair: pair.symbol };
  }

  async candles(req: CandlePageRequest): Promise<CandlePage> {
    const nowS = Math.floor(this.deps.clock.now() / 1000);
    if (USD_PEGGED.has(req.symbol)) return this.peggedCandles(req, nowS);
    const src = await this.candlePair(req.symbol);
    if (src === undefined) return { candles: [] };
    const limit = Math.max(1, Math.min(1000, req.limit));
    const rows = await src.client.ohlcv(src.pair, TIMEFRAME[req.base], req.from * 1000, limit);
    const candles: Candle[] = [];
    let lastOpen: number | undefined;
    for (const r of rows) {
      const time = Math.floor(r.time / 1000);
      lastOpen = time;
      if (time < req.from || time >= req.to || bucketEnd(req.base, time) > nowS) continue;
      // The pair's quote is USD-stable, so its quote volume is the traded value in USD.
      candles.push({ time, open: r.open, high: r.high, low: r.low, close: r.close, volume: r.quoteVolume });
    }
    const full = rows.length >= limit;
    if (full && lastOpen !== undefined && bucketEnd(req.base, lastOpen) < req.to) return { candles, nextFrom: bucketEnd(req.base, lastOpen) };
    return { candles };
  }

  async liveCandle(symbol: string, base: BaseInterval, asOf: number): Promise<Candle | undefined> {
    const start = bucketStart(base, asOf);
    if (start >= asOf) return undefined;
    if (USD_PEGGED.has(symbol)) return { time: start, open: 1, high: 1, low: 1, close: 1, volume: 0 };
    const src = await this.candlePair(symbol);
    if (src === undefined) return undefined;
    const rows = await src.client.ohlcv(src.pair, TIMEFRAME[base], start * 1000, 1);
    const r = rows.find((x) => Math.floor(x.time / 1000) === start);
    return r === undefined ? undefined : { time: start, open: r.open, high: r.high, low: r.low, close: r.close, volume: r.quoteVolume };
  }

  private peggedCandles(req: CandlePageRequest, nowS: number): CandlePage {
    const out: Candle[] = [];
    let s = bucketStart(req.base, Math.max(req.from, PEGGED_FROM));
    if (s < req.from) s = bucketEnd(req.base, s);
    while (s < req.to && bucketEnd(req.base, s) <= nowS) {
      if (out.length >= req.limit) return { candles: out, nextFrom: s };
      out.push({ time: s, open: 1, high: 1, low: 1, close: 1, volume: 0 });
      s = bucketEnd(req.base, s);
    }
    return { candles: out };
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.deps.clients.map((c) => c.close()));
  }
}
