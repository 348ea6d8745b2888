import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { FxHistory, RateOn } from '../history/fx-history.js';
import { HistoryService } from '../history/history-service.js';
import { bucketStart, DAY, type Interval } from '../domain/intervals.js';
import { EARLIEST_DATA } from '../history/range-rules.js';
import type { SeriesPoint } from '../history/resample.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { FIAT_CURRENCIES, isFiat, USD_PEGGED, usdRate } from '../market/currencies.js';
import type { MarketSnapshot, MarketSnapshots } from '../market/market-snapshots.js';
import type { Ticker } from '../domain/market.js';

/** One coin of a board: its ticker (USD) and its place by market cap. */
export interface BoardCoin {
  symbol: string;
  id: string;
  name: string;
  ticker: Ticker;
  /** USD market cap (price x circulating supply); null when the supply is unknown. */
  capUsd: number | null;
  /** 1-based rank by USD market cap among the coins with one; null without a market cap. */
  rank: number | null;
}

/** The coins of one market snapshot with fresh tickers, ranked; built once per snapshot. */
export interface Board {
  snap: MarketSnapshot;
  /** The snapshot's instant (Unix seconds): the newest ticker close. */
  asOf: number;
  /** Ranked by market cap (coins without one after, by volume). */
  coins: readonly BoardCoin[];
  byId: ReadonlyMap<string, BoardCoin>;
  bySymbol: ReadonlyMap<string, BoardCoin>;
  /** Lower-case vs_currencies this board can convert into (supported_vs_currencies). */
  vsCurrencies: readonly string[];
}

/**
 * CoinGecko's crypto vs_currencies (those of its `/simple/supported_vs_currencies` list) that a
 * deployment can offer when it tracks the coin.
 */
export const CRYPTO_VS: readonly string[] = ['btc', 'eth', 'ltc', 'bch', 'bnb', 'eos', 'xrp', 'xlm', 'link', 'dot', 'sol'];

export interface MarketDataDeps {
  snapshots: MarketSnapshots;
  history: HistoryService;
  fxHistory: FxHistory;
  catalog: CoinCatalog;
  clock: Clock;
  /** A ticker or FX rate older than this (ms) is not served. */
  staleMs: number;
  /** Most candles one chart request may cover (QUOTES_HISTORY_MAX_POINTS); more is a 400. */
  maxPoints: number;
}

/** Hourly closes of the last 7 days (USD), kept per coin until the next hourly candle closes. */
export interface WeekMemo {
  /** Start of the hour in progress (Unix seconds). */
  hour: number;
  /** Close of the hourly candle that ended 7 days before `hour` (the 7-day reference). */
  weekAgo: number | undefined;
  /** Closes of the hourly candles that ended in (hour - 7 days, hour], oldest first. */
  closes: readonly number[];
}

/**
 * The market data behind every /api/v3 view: the ranked board of the current snapshot, the
 * conversion into a vs_currency, and the candle-derived figures (7-day sparkline, 1h / 7d / 30d
 * reference prices, chart series). Memos are bounded by the number of listed coins.
 */
export class MarketData {
  private boardCache: Board | undefined;
  private readonly weeks = new Map<string, { hour: number; memo: Promise<WeekMemo> }>();
  /** Per coin and window: the daily reference close, kept for the day. */
  private readonly dailyRefs = new Map<string, { day: number; close: Promise<number | undefined> }>();

  constructor(readonly deps: MarketDataDeps) {}

  /** The board of the current snapshot; 503 when no coin has a fresh ticker. */
  async board(): Promise<Board> {
    const snap = await this.deps.snapshots.current();
    const cached = this.boardCache;
    if (cached?.snap === snap) return cached;
    const now = this.deps.clock.now();
    const { catalog } = this.deps;
    const coins: BoardCoin[] = [];
    let newest = 0;
    for (const symbol of catalog.symbols) {
      const t = snap.tickers.get(symbol);
      if (t === undefined || !(t.lastPrice > 0) || now - t.closeTime > this.deps.staleMs) continue;
      newest = Math.max(newest, t.closeTime);
      const cap = t.circulatingSupply !== undefined && t.circulatingSupply > 0 ? t.lastPrice * t.circulatingSupply : null;
      coins.push({ symbol, id: catalog.ids.id(symbol) ?? symbol.toLowerCase(), name: catalog.get(symbol)?.name ?? symbol, ticker: t, capUsd: cap, rank: null });
    }
    if (coins.length === 0) throw new QuotesError('QUOTE_UNAVAILABLE', { coins: ['market data'] });
    coins.sort((a, b) => (b.capUsd ?? -1) - (a.capUsd ?? -1) || b.ticker.quoteVolume - a.ticker.quoteVolume || (a.id < b.id ? -1 : 1));
    let rank = 0;
    for (const c of coins) if (c.capUsd !== null) c.rank = ++rank;
    const bySymbol = new Map(coins.map((c) => [c.symbol, c]));
    const fxFresh = now - snap.fx.time <= this.deps.staleMs;
    const vs: string[] = [];
    for (const f of FIAT_CURRENCIES) if (f === 'USD' || (fxFresh && (snap.fx.rates.get(f) ?? 0) > 0)) vs.push(f.toLowerCase());
    for (const c of CRYPTO_VS) if (bySymbol.has(c.toUpperCase())) vs.push(c);
    const board: Board = {
      snap,
      asOf: Math.floor(newest / 1000),
      coins,
      byId: new Map(coins.map((c) => [c.id, c])),
      bySymbol,
      vsCurrencies: Object.freeze(vs),
    };
    this.boardCache = board;
    return board;
  }

  /** Units of `vs` (lower case) per USD on `board`; 400 `invalid vs_currency` when it cannot convert. */
  rate(board: Board, vs: string): number {
    if (!board.vsCurrencies.includes(vs)) throw new QuotesError('CURRENCY_INVALID');
    const r = usdRate(board.snap, vs.toUpperCase());
    if (r === undefined) throw new QuotesError('CURRENCY_INVALID');
    return r;
  }

  /**
   * USD closes of the closed hourly candles of the last 7 days (oldest first) and the close of
   * the candle just before them (the 7-day reference), as of `asOf` (Unix seconds).
   */
  week(symbol: string, asOf: number): Promise<WeekMemo> {
    const hour = bucketStart('1h', asOf);
    const hit = this.weeks.get(symbol);
    if (hit?.hour === hour) return hit.memo;
    const start = hour - 7 * DAY;
    const memo = this.deps.history.series(symbol, '1h', start - 3600, hour).then((points): WeekMemo => {
      const closed = points.filter((p) => p.closeTime <= hour);
      const before = closed.find((p) => p.time === start - 3600);
      return { hour, weekAgo: before?.close, closes: closed.filter((p) => p.time >= start).map((p) => p.close) };
    });
    // A failure is not kept: the next request asks again.
    memo.catch(() => this.weeks.delete(symbol));
    this.weeks.set(symbol, { hour, memo });
    return memo;
  }

  /** USD close of the daily candle that ended `days` days before today's started (the reference of a daily window). */
  daysAgo(symbol: string, asOf: number, days: number): Promise<number | undefined> {
    const day = bucketStart('1d', asOf - days * DAY);
    const key = `${symbol}|${days}`;
    const hit = this.dailyRefs.get(key);
    if (hit?.day === day) return hit.close;
    const close = this.deps.history
      .series(symbol, '1d', day - DAY, day)
      .then((pts) => pts.find((p) => p.time === day - DAY)?.close)
      .catch(() => undefined);
    this.dailyRefs.set(key, { day, close });
    return close;
  }

  /**
   * USD price references of a coin for the windows in `want`: 1h (the hourly close nearest to
   * `asOf` - 1 h, so at most 30 minutes off), 24h (the ticker's open), 7d (the hourly close 7 days
   * before the current hour), 14d / 30d / 60d / 200d / 1y (the daily close that many days before
   * today).
   */
  async references(c: BoardCoin, asOf: number, want: ReadonlySet<ChangeWindow>): Promise<PriceRefs> {
    const refs: PriceRefs = { '24h': c.ticker.openPrice };
    if (want.has('1h') || want.has('7d')) {
      const w = await this.week(c.symbol, asOf);
      refs['7d'] = w.weekAgo;
      const n = w.closes.length;
      refs['1h'] = asOf - w.hour < 1800 ? w.closes[n - 2] : w.closes[n - 1];
    }
    for (const k of want) {
      const days = DAILY_WINDOWS[k];
      if (days !== undefined) refs[k] = await this.daysAgo(c.symbol, asOf, days);
    }
    return refs;
  }

  /**
   * Candles of `interval` with buckets starting in [from, asOf), the newest one in progress;
   * HISTORY_TOO_LARGE (400) when the window may hold more than `maxPoints` candles.
   */
  series(symbol: string, interval: Interval, from: number, asOf: number): Promise<readonly SeriesPoint[]> {
    const points = asOf <= from ? 0 : HistoryService.pointsBound(interval, Math.max(from, bucketStart(interval, EARLIEST_DATA)), asOf);
    if (points > this.deps.maxPoints) return Promise.reject(new QuotesError('HISTORY_TOO_LARGE', { limit: this.deps.maxPoints, points }));
    return this.deps.history.series(symbol, interval, Math.max(from, 0), asOf);
  }

  /** Daily FX fixings of a fiat currency (units per USD by UTC day; the last earlier fixing carried). */
  fxRateOn(currency: string): Promise<RateOn> {
    return this.deps.fxHistory.lookup(currency);
  }

  /**
   * Historical conversion into `vs` for points of `interval`: fiat at the daily fixing of each
   * point's UTC close date (as /api/v2/crypto history), USD-pegged 1:1, a crypto vs_currency by
   * that coin's close in the same bucket. Returns a function of a point giving units per USD.
   */
  async historicalRate(vs: string, interval: Interval, from: number, asOf: number): Promise<(p: SeriesPoint) => number | null> {
    const upper = vs.toUpperCase();
    if (upper === 'USD' || USD_PEGGED.has(upper)) return () => 1;
    if (isFiat(upper)) {
      const rateOn: RateOn = await this.deps.fxHistory.lookup(upper);
      return (p) => rateOn(Math.floor((p.closeTime - 1) / DAY));
    }
    const quote = await this.series(upper, interval, from, asOf);
    const byTime = new Map(quote.map((p) => [p.time, p.close]));
    return (p) => {
      const q = byTime.get(p.time);
      return q !== undefined && q > 0 ? 1 / q : null;
    };
  }
}

/** Price change windows: CoinGecko's names. */
export type ChangeWindow = '1h' | '24h' | '7d' | '14d' | '30d' | '60d' | '200d' | '1y';
/** Windows measured against the daily close that many days back. */
const DAILY_WINDOWS: Readonly<Partial<Record<ChangeWindow, number>>> = { '14d': 14, '30d': 30, '60d': 60, '200d': 200, '1y': 365 };
/**
 * The UTC day (days since the epoch) whose FX fixing converts a window's reference close (its
 * close date, as for chart points); undefined for 1h and 24h, which use the current rate.
 */
export function referenceDay(k: ChangeWindow, asOf: number): number | undefined {
  if (k === '7d') return Math.floor((bucketStart('1h', asOf) - 7 * DAY - 1) / DAY);
  const days = DAILY_WINDOWS[k];
  return days === undefined ? undefined : bucketStart('1d', asOf - days * DAY) / DAY - 1;
}

/** USD reference prices (the price at the start of each window), where known. */
export type PriceRefs = Partial<Record<ChangeWindow, number | undefined>>;
