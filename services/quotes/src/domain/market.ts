import type { BaseInterval } from './intervals.js';

/** One OHLCV candle in USD. `time` is the bucket's open time (Unix seconds). */
export interface Candle {
  time: number;
  open: number;
  high: number;
  low: number;
  close: number;
  /**
   * Traded value in USD (the quote-asset volume) as the source reports it; null when the source
   * reports only base-asset volume (it is never approximated from base volume and a price).
   */
  volume: number | null;
}

/** Rolling 24 h statistics of one coin in USD, as exchanges publish them. */
export interface Ticker {
  symbol: string;
  lastPrice: number;
  /** Price 24 h before `closeTime`. */
  openPrice: number;
  priceChange: number;
  /** Percent units: 0.5 means 0.5 %. */
  priceChangePercent: number;
  highPrice: number;
  lowPrice: number;
  /** Traded value over the window, in USD. */
  quoteVolume: number;
  /** Window start and end (milliseconds). */
  openTime: number;
  closeTime: number;
  /** When known, market cap = lastPrice x circulatingSupply. */
  circulatingSupply?: number;
}

/**
 * One exchange's 24 h ticker of one pair, as ingested before aggregation (CoinGecko's
 * `/coins/{id}/tickers` and `/exchanges`): prices in the pair's quote currency (`target`).
 */
export interface VenueTicker {
  /** The exchange's ccxt id (e.g. `binance`). */
  exchange: string;
  /** ccxt's unified symbol, e.g. `BTC/USDT`. */
  pair: string;
  base: string;
  target: string;
  last: number;
  /** 24 h volume in base units. */
  baseVolume: number;
  /** 24 h traded value in `target`. */
  quoteVolume: number;
  /** US dollars per unit of `target` when the ticker was taken (1 for USD-stable quotes); null when unknown. */
  usdPerTarget: number | null;
  /** Best bid and ask, where the exchange's ticker carries them. */
  bid: number | null;
  ask: number | null;
  /** Source time (ms). */
  time: number;
  /**
   * What the aggregation made of it: `used` in the coin's price; `unused` fresh but not the
   * exchange's most liquid pair; `outlier` left out as deviating from the other exchanges;
   * `stale` older than MARKET_STALE_AFTER.
   */
  status: 'used' | 'unused' | 'outlier' | 'stale';
}

/** What one ticker refresh gives: the aggregated coin tickers and the per-exchange tickers behind them. */
export interface MarketTickers {
  coins: Ticker[];
  venues: VenueTicker[];
}

export interface CandlePageRequest {
  symbol: string;
  base: BaseInterval;
  /** Open times in [from, to), Unix seconds. */
  from: number;
  to: number;
  /** Most candles one page may carry. */
  limit: number;
}

export interface CandlePage {
  /** Closed candles sorted by time. */
  candles: Candle[];
  /** Where to continue when the page was cut at `limit`; absent when [from, to) is exhausted. */
  nextFrom?: number;
}

/**
 * Where quotes come from (simulated here; exchanges through ccxt later). Every call may fail;
 * callers keep the last good data and report staleness rather than crash.
 */
export interface MarketSource {
  /** Short name shown in `X-Data-Source` (e.g. `simulated`). */
  readonly kind: string;
  /** Symbols this source can quote, upper case. */
  listSymbols(): Promise<readonly string[]>;
  /**
   * Latest 24 h tickers for many coins in one call (coins the source cannot quote are left out),
   * with the per-exchange tickers they were aggregated from.
   */
  tickers(symbols: readonly string[]): Promise<MarketTickers>;
  /** One page of closed candles of a base series. */
  candles(req: CandlePageRequest): Promise<CandlePage>;
  /**
   * The base candle still in progress at `asOf` (Unix seconds): the bucket opening at
   * bucketStart(base, asOf), as traded so far; undefined when nothing has traded in it yet or
   * the source cannot tell.
   */
  liveCandle?(symbol: string, base: BaseInterval, asOf: number): Promise<Candle | undefined>;
  /** Releases connections and streams (live sources). */
  close?(): Promise<void>;
}

/**
 * One currency's dealer quote in an official bulletin (BCB PTAX): BRL per unit of the currency,
 * buying (bid) and selling (ask) rates of the bulletin used, and the extremes of that day's
 * bulletins.
 */
export interface FxQuote {
  bid: number;
  ask: number;
  high: number;
  low: number;
  /** When the bulletin was published (milliseconds). */
  time: number;
}

/** Rates are "1 USD = rate units of the currency". */
export interface FxSnapshot {
  /** When the rates were observed (milliseconds). */
  time: number;
  rates: ReadonlyMap<string, number>;
  /** Official bid/ask quotes against BRL by currency (PTAX, or the simulated FX), where the source has them. */
  quotes?: ReadonlyMap<string, FxQuote>;
  /** Which source gave each currency's rate (a layered source); absent: the FX source's own kind. */
  sources?: ReadonlyMap<string, string>;
}

export interface DailyRate {
  /** `YYYY-MM-DD` (UTC). Days without a fixing (weekends, holidays) are simply absent. */
  date: string;
  rate: number;
}

export interface FxSource {
  readonly kind: string;
  /** Currencies it can convert to (USD is implicit). */
  readonly currencies: readonly string[];
  latest(): Promise<FxSnapshot>;
  /** Daily fixings of USD->currency with dates in [fromDate, toDate]. */
  daily(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]>;
}
