import type { MarketSnapshot } from '../market/market-snapshots.js';
import { isBaseInterval, type BaseInterval } from '../domain/intervals.js';
import type { Candle, FxQuote, FxSnapshot, Ticker, VenueTicker } from '../domain/market.js';
import type { StoredMarketState } from './types.js';

/** In-progress candles by `liveCandleKey(symbol, base)`, as the ingesting replica last fetched them. */
export type LiveCandles = ReadonlyMap<string, Candle>;

export const liveCandleKey = (symbol: string, base: BaseInterval): string => `${symbol}\u0000${base}`;

const NO_LIVE: LiveCandles = new Map();

/** The market state as the ingesting replica publishes it: the snapshot, the coin list and the in-progress candles. */
export interface SharedMarket {
  snapshot: MarketSnapshot;
  symbols: readonly string[];
  live: LiveCandles;
}

/** One in-progress candle: symbol, base, open time, open, high, low, close, volume. */
type EncodedCandle = [string, string, number, number, number, number, number, number | null];

interface Encoded {
  v: 1;
  symbols: string[];
  tickers: Ticker[];
  /** `quotes` (currency, bid, ask, high, low, time) and `sources` are absent in states written before they were shared. */
  fx: { time: number; rates: [string, number][]; quotes?: [string, number, number, number, number, number][]; sources?: [string, string][] };
  /** Absent in states written before history was shared. */
  live?: EncodedCandle[];
  /** Per-exchange tickers (already bounded by MARKET_EXCHANGE_TICKERS_MAX); absent in older states. */
  venues?: EncodedVenue[];
}

/** exchange, pair, base, target, last, base volume, quote volume, USD per target, bid, ask, time, status. */
type EncodedVenue = [string, string, string, string, number, number, number, number | null, number | null, number | null, number, VenueTicker['status']];
const VENUE_STATUS: ReadonlySet<string> = new Set(['used', 'unused', 'outlier', 'stale']);

/**
 * JSON text of a snapshot. Every replica, the writer included, serves what `decodeMarketState`
 * makes of this text, so all of them answer with the same numbers (and so the same bodies and
 * ETags) for the same version.
 */
export function encodeMarketState(snapshot: MarketSnapshot, symbols: readonly string[], live: LiveCandles = NO_LIVE): string {
  const e: Encoded = { v: 1, symbols: [...symbols], tickers: [...snapshot.tickers.values()], fx: { time: snapshot.fx.time, rates: [...snapshot.fx.rates] } };
  if (snapshot.fx.quotes !== undefined) e.fx.quotes = [...snapshot.fx.quotes].map(([c, q]) => [c, q.bid, q.ask, q.high, q.low, q.time]);
  if (snapshot.fx.sources !== undefined) e.fx.sources = [...snapshot.fx.sources];
  if (snapshot.venues !== undefined) e.venues = snapshot.venues.map((v) => [v.exchange, v.pair, v.base, v.target, v.last, v.baseVolume, v.quoteVolume, v.usdPerTarget, v.bid, v.ask, v.time, v.status]);
  if (live.size > 0) {
    e.live = [];
    for (const [key, k] of live) {
      const [symbol = '', base = ''] = key.split('\u0000');
      e.live.push([symbol, base, k.time, k.open, k.high, k.low, k.close, k.volume]);
    }
  }
  return JSON.stringify(e);
}

const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** The snapshot stored under `stored.version`; throws naming what is malformed. */
export function decodeMarketState(stored: StoredMarketState): SharedMarket {
  const e = JSON.parse(stored.body) as Partial<Encoded>;
  if (e.v !== 1 || !Array.isArray(e.symbols) || !Array.isArray(e.tickers) || e.fx === undefined || !finite(e.fx.time) || !Array.isArray(e.fx.rates)) {
    throw new Error(`market state version ${stored.version}: not a version-1 market state`);
  }
  const tickers = new Map<string, Ticker>();
  for (const t of e.tickers) {
    if (typeof t?.symbol !== 'string' || !finite(t.lastPrice) || !finite(t.closeTime)) throw new Error(`market state version ${stored.version}: malformed ticker`);
    tickers.set(t.symbol, t);
  }
  const rates = new Map<string, number>();
  for (const r of e.fx.rates) {
    if (!Array.isArray(r) || typeof r[0] !== 'string' || !finite(r[1])) throw new Error(`market state version ${stored.version}: malformed FX rate`);
    rates.set(r[0], r[1]);
  }
  let quotes: Map<string, FxQuote> | undefined;
  for (const q of Array.isArray(e.fx.quotes) ? e.fx.quotes : []) {
    if (!Array.isArray(q) || typeof q[0] !== 'string' || ![q[1], q[2], q[3], q[4], q[5]].every(finite)) throw new Error(`market state version ${stored.version}: malformed FX quote`);
    (quotes ??= new Map()).set(q[0], { bid: q[1], ask: q[2], high: q[3], low: q[4], time: q[5] });
  }
  let sources: Map<string, string> | undefined;
  for (const x of Array.isArray(e.fx.sources) ? e.fx.sources : []) {
    if (!Array.isArray(x) || typeof x[0] !== 'string' || typeof x[1] !== 'string') throw new Error(`market state version ${stored.version}: malformed FX source`);
    (sources ??= new Map()).set(x[0], x[1]);
  }
  let venues: VenueTicker[] | undefined;
  const orNull = (x: unknown): x is number | null => x === null || finite(x);
  for (const v of Array.isArray(e.venues) ? e.venues : []) {
    if (!Array.isArray(v) || ![v[0], v[1], v[2], v[3]].every((x) => typeof x === 'string') || ![v[4], v[5], v[6], v[10]].every(finite) || ![v[7], v[8], v[9]].every(orNull) || !VENUE_STATUS.has(v[11])) {
      throw new Error(`market state version ${stored.version}: malformed exchange ticker`);
    }
    (venues ??= []).push({ exchange: v[0], pair: v[1], base: v[2], target: v[3], last: v[4], baseVolume: v[5], quoteVolume: v[6], usdPerTarget: v[7], bid: v[8], ask: v[9], time: v[10], status: v[11] });
  }
  const fx: FxSnapshot = { time: e.fx.time, rates };
  if (quotes !== undefined) fx.quotes = quotes;
  if (sources !== undefined) fx.sources = sources;
  const live = new Map<string, Candle>();
  for (const c of Array.isArray(e.live) ? e.live : []) {
    if (!Array.isArray(c) || typeof c[0] !== 'string' || typeof c[1] !== 'string' || !isBaseInterval(c[1]) || ![c[2], c[3], c[4], c[5], c[6]].every(finite) || !(c[7] === null || finite(c[7]))) {
      throw new Error(`market state version ${stored.version}: malformed in-progress candle`);
    }
    live.set(liveCandleKey(c[0], c[1]), { time: c[2], open: c[3], high: c[4], low: c[5], close: c[6], volume: c[7] });
  }
  const symbols = e.symbols.filter((s): s is string => typeof s === 'string');
  const snapshot: MarketSnapshot = { version: stored.version, fetchedAt: stored.fetchedAt, tickers, fx };
  if (venues !== undefined) snapshot.venues = venues;
  return { snapshot, symbols, live };
}
