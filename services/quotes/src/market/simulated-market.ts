import type { Clock } from '../clock.js';
import { bucketEnd, bucketStart, DAY, type BaseInterval } from '../domain/intervals.js';
import { USD_PEGGED } from './currencies.js';
import { hash01, hashString, octaveNoise, walkOctaves, type Octave } from './price-noise.js';
import { REFERENCE_COINS, type ReferenceCoin } from './reference-coins.js';
import type { Candle, CandlePage, CandlePageRequest, MarketSource, MarketTickers, Ticker, VenueTicker } from '../domain/market.js';

export interface SimulatedMarketOptions {
  seed: number;
  clock: Clock;
  coins?: readonly ReferenceCoin[];
  /** The instant (Unix seconds) at which each coin trades at its reference price; default 2026-01-01. */
  anchor?: number;
}

const DEFAULT_ANCHOR = Date.UTC(2026, 0, 1) / 1000;
/** The exchange id of the simulated market's per-exchange tickers. */
export const SIMULATED_EXCHANGE = 'simulated';
/** Sample spacing for daily candles: octaves of 16 min and longer are linear between samples. */
const DAY_SAMPLE = 960;

interface SimCoin {
  ref: ReferenceCoin;
  key: number;
  listed: number;
  logRef: number;
  logListRatio: number;
  octaves: Octave[];
  noiseAtAnchor: number;
  /** Log-size of minute wicks and of the sub-sample wiggle left out by daily sampling. */
  wick: number;
  fine: number;
  minuteVolume: number;
  pegged: boolean;
}

function roundDigits(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** About six significant digits, like an exchange tick size that scales with the price. */
function priceDigits(p: number): number {
  if (!(p > 0)) return 2;
  return Math.min(14, Math.max(0, 5 - Math.floor(Math.log10(p))));
}

/**
 * A deterministic market: every coin's log price is a trend from its listing price to its
 * reference price plus multi-octave noise, a pure function of (seed, symbol, time). Candles of
 * 1 minute are exact samples of that path; 30 m and 1 h candles aggregate them exactly; daily
 * candles sample the path every 16 minutes and months aggregate the days. Tickers are computed
 * from the last 1 440 one-minute candles, so they agree with the candles.
 */
export class SimulatedMarket implements MarketSource {
  readonly kind = 'simulated';
  private readonly clock: Clock;
  private readonly coins = new Map<string, SimCoin>();
  private readonly anchor: number;
  private tickerCache: { asOf: number; bySymbol: Map<string, Ticker> } = { asOf: -1, bySymbol: new Map() };

  constructor(opts: SimulatedMarketOptions) {
    this.clock = opts.clock;
    this.anchor = opts.anchor ?? DEFAULT_ANCHOR;
    for (const ref of opts.coins ?? REFERENCE_COINS) {
      const key = hashString(`${opts.seed}:${ref.symbol}`);
      const octaves = walkOctaves(ref.volatility, 60, 4, 11);
      const listed = Date.parse(`${ref.listed}T00:00:00Z`) / 1000;
      const coin: SimCoin = {
        ref,
        key,
        listed,
        logRef: Math.log(ref.price),
        logListRatio: Math.log(ref.listPrice / ref.price),
        octaves,
        noiseAtAnchor: octaveNoise(key, octaves, this.anchor),
        wick: (octaves[0]?.amplitude ?? 0) * 0.8,
        fine: (octaves[0]?.amplitude ?? 0) + (octaves[1]?.amplitude ?? 0),
        minuteVolume: ref.dailyVolume / 1440,
        pegged: USD_PEGGED.has(ref.symbol),
      };
      this.coins.set(ref.symbol, coin);
    }
  }

  listSymbols(): Promise<readonly string[]> {
    return Promise.resolve([...this.coins.keys()]);
  }

  /** First instant (Unix seconds) the coin has candles; exposed for tests and docs. */
  listedAt(symbol: string): number | undefined {
    return this.coins.get(symbol)?.listed;
  }

  /** The simulated mid price at instant `t` (seconds), before rounding. */
  priceAt(symbol: string, t: number): number {
    const c = this.coins.get(symbol);
    if (c === undefined) throw new Error(`unknown simulated coin ${symbol}`);
    return this.price(c, t);
  }

  private price(c: SimCoin, t: number): number {
    if (c.pegged) return 1;
    const trend = t < this.anchor ? (c.logListRatio * (this.anchor - t)) / (this.anchor - c.listed) : 0;
    return Math.exp(c.logRef + trend + octaveNoise(c.key, c.octaves, t) - c.noiseAtAnchor);
  }

  private minuteCandle(c: SimCoin, s: number, open?: number): Candle {
    const m = s / 60;
    const volume = roundDigits(c.minuteVolume * (0.25 + 1.5 * hash01(c.key, 103, m)), 2);
    if (c.pegged) return { time: s, open: 1, high: 1, low: 1, close: 1, volume };
    const o = open ?? this.price(c, s);
    const cl = this.price(c, s + 60);
    const hi = Math.max(o, cl) * Math.exp(hash01(c.key, 101, m) * c.wick);
    const lo = Math.min(o, cl) * Math.exp(-hash01(c.key, 102, m) * c.wick);
    const d = priceDigits(o);
    const mid = (o + cl) / 2;
    return {
      time: s,
      open: roundDigits(o, d),
      high: roundDigits(hi, d),
      low: roundDigits(lo, d),
      close: roundDigits(cl, d),
      volume: roundDigits(volume * (mid / c.ref.price), 2),
    };
  }

  private minuteCandles(c: SimCoin, from: number, to: number): Candle[] {
    const out: Candle[] = [];
    let open: number | undefined;
    for (let s = from; s < to; s += 60) {
      const k = this.minuteCandle(c, s, open);
      open = c.pegged ? undefined : this.price(c, s + 60);
      out.push(k);
    }
    return out;
  }

  private dayCandle(c: SimCoin, s: number): Candle {
    const h = hash01(c.key, 104, s / DAY);
    const volume = c.ref.dailyVolume * (0.6 + 0.8 * h);
    if (c.pegged) return { time: s, open: 1, high: 1, low: 1, close: 1, volume: roundDigits(volume, 2) };
    let hi = -Infinity;
    let lo = Infinity;
    let sum = 0;
    let n = 0;
    for (let t = s; t <= s + DAY; t += DAY_SAMPLE) {
      const p = this.price(c, t);
      if (p > hi) hi = p;
      if (p < lo) lo = p;
      sum += p;
      n++;
    }
    const o = this.price(c, s);
    const cl = this.price(c, s + DAY);
    hi = Math.max(hi, o, cl) * Math.exp(hash01(c.key, 105, s / DAY) * c.fine);
    lo = Math.min(lo, o, cl) * Math.exp(-hash01(c.key, 106, s / DAY) * c.fine);
    const d = priceDigits(o);
    return {
      time: s,
      open: roundDigits(o, d),
      high: roundDigits(hi, d),
      low: roundDigits(lo, d),
      close: roundDigits(cl, d),
      volume: roundDigits(volume * (sum / n / c.ref.price), 2),
    };
  }

  private candleAt(c: SimCoin, base: BaseInterval, s: number): Candle | undefined {
    switch (base) {
      case '1m':
        return this.minuteCandle(c, s);
      case '30m':
      case '1h':
        return aggregate(s, this.minuteCandles(c, Math.max(s, c.listed), bucketEnd(base, s)));
      case '1d':
        return this.dayCandle(c, s);
      case '1mo': {
        const days: Candle[] = [];
        const end = bucketEnd('1mo', s);
        for (let d = Math.max(s, c.listed); d < end; d += DAY) days.push(this.dayCandle(c, d));
        return aggregate(s, days);
      }
    }
  }

  candles(req: CandlePageRequest): Promise<CandlePage> {
    const c = this.coins.get(req.symbol);
    if (c === undefined) return Promise.resolve({ candles: [] });
    const now = Math.floor(this.clock.now() / 1000);
    const first = bucketStart(req.base, c.listed);
    let s = bucketStart(req.base, Math.max(req.from, first));
    if (s < req.from) s = bucketEnd(req.base, s);
    const out: Candle[] = [];
    while (s < req.to && bucketEnd(req.base, s) <= now) {
      if (out.length >= req.limit) return Promise.resolve({ candles: out, nextFrom: s });
      const k = this.candleAt(c, req.base, s);
      if (k !== undefined) out.push(k);
      s = bucketEnd(req.base, s);
    }
    return Promise.resolve({ candles: out });
  }

  /**
   * The minute in progress at `t` (seconds), traded so far: open at the minute's start, close at
   * `t` on the same path, the minute's volume pro rata. Undefined at a minute boundary.
   */
  private partialMinute(c: SimCoin, t: number): Candle | undefined {
    const m = Math.floor(t / 60) * 60;
    if (t <= m || m < c.listed) return undefined;
    const full = this.minuteCandle(c, m);
    if (c.pegged) return { ...full, volume: roundDigits((full.volume ?? 0) * ((t - m) / 60), 2) };
    const o = this.price(c, m);
    const cl = this.price(c, t);
    const d = priceDigits(o);
    return { time: m, open: roundDigits(o, d), high: roundDigits(Math.max(o, cl), d), low: roundDigits(Math.min(o, cl), d), close: roundDigits(cl, d), volume: roundDigits((full.volume ?? 0) * ((t - m) / 60), 2) };
  }

  /**
   * The in-progress base candle: the closed minutes (and, for a month, closed days) of its bucket
   * so far, and the minute in progress up to `asOf`, so its close is the ticker's last price.
   */
  liveCandle(symbol: string, base: BaseInterval, asOf: number): Promise<Candle | undefined> {
    const c = this.coins.get(symbol);
    const start = bucketStart(base, asOf);
    const minutesEnd = Math.floor(asOf / 60) * 60;
    if (c === undefined || start >= asOf || asOf <= c.listed) return Promise.resolve(undefined);
    const partial = this.partialMinute(c, asOf);
    const upTo = (from: number): Candle[] => [...this.minuteCandles(c, Math.max(from, c.listed), minutesEnd), ...(partial === undefined ? [] : [partial])];
    if (base !== '1mo') return Promise.resolve(aggregate(start, upTo(start)));
    const today = bucketStart('1d', asOf);
    const parts: Candle[] = [];
    for (let d = Math.max(start, c.listed); d < today; d += DAY) parts.push(this.dayCandle(c, d));
    const todayAgg = aggregate(today, upTo(today));
    if (todayAgg !== undefined) parts.push(todayAgg);
    return Promise.resolve(aggregate(start, parts));
  }

  /**
   * Tickers at the current second (the path moves between minutes, so every refresh shows
   * motion), with one simulated exchange's ticker per coin.
   */
  tickers(symbols: readonly string[]): Promise<MarketTickers> {
    const asOf = Math.floor(this.clock.now() / 1000);
    if (this.tickerCache.asOf !== asOf) this.tickerCache = { asOf, bySymbol: new Map() };
    const out: Ticker[] = [];
    const venues: VenueTicker[] = [];
    for (const sym of symbols) {
      const c = this.coins.get(sym);
      if (c === undefined || c.listed > asOf - DAY) continue;
      let t = this.tickerCache.bySymbol.get(sym);
      if (t === undefined) {
        t = this.ticker(c, asOf);
        this.tickerCache.bySymbol.set(sym, t);
      }
      out.push(t);
      venues.push(this.venueTicker(c, t));
    }
    return Promise.resolve({ coins: out, venues });
  }

  /** The coin on the simulated exchange: its ticker against USDT (USDT itself against USD), with a spread of 0.04-0.2 %. */
  private venueTicker(c: SimCoin, t: Ticker): VenueTicker {
    const half = 0.0002 + 0.0008 * hash01(c.key, 107, 0);
    const d = priceDigits(t.lastPrice);
    const target = c.ref.symbol === 'USDT' ? 'USD' : 'USDT';
    return {
      exchange: SIMULATED_EXCHANGE,
      pair: `${c.ref.symbol}/${target}`,
      base: c.ref.symbol,
      target,
      last: t.lastPrice,
      baseVolume: t.lastPrice > 0 ? t.quoteVolume / t.lastPrice : 0,
      quoteVolume: t.quoteVolume,
      usdPerTarget: 1,
      bid: roundDigits(t.lastPrice * (1 - half), d + 1),
      ask: roundDigits(t.lastPrice * (1 + half), d + 1),
      time: t.closeTime,
      status: 'used',
    };
  }

  /** Per coin, the minute candles of the last ticker window, slid forward instead of rebuilt. */
  private readonly windows = new Map<string, { asOf: number; candles: Candle[] }>();

  private tickerWindow(c: SimCoin, asOf: number): Candle[] {
    const w = this.windows.get(c.ref.symbol);
    if (w !== undefined && asOf >= w.asOf && asOf - w.asOf < DAY) {
      if (asOf > w.asOf) {
        w.candles.push(...this.minuteCandles(c, w.asOf, asOf));
        w.candles.splice(0, (asOf - w.asOf) / 60);
        w.asOf = asOf;
      }
      return w.candles;
    }
    const candles = this.minuteCandles(c, asOf - DAY, asOf);
    this.windows.set(c.ref.symbol, { asOf, candles });
    return candles;
  }

  private ticker(c: SimCoin, asOf: number): Ticker {
    const minute = Math.floor(asOf / 60) * 60;
    const partial = this.partialMinute(c, asOf);
    const window = this.tickerWindow(c, minute);
    const agg = aggregate(minute - DAY, partial === undefined ? window : [...window, partial]);
    if (agg === undefined) throw new Error('empty ticker window');
    const d = priceDigits(agg.open);
    const change = roundDigits(agg.close - agg.open, d);
    return {
      symbol: c.ref.symbol,
      lastPrice: agg.close,
      openPrice: agg.open,
      priceChange: change,
      priceChangePercent: roundDigits((change / agg.open) * 100, 6),
      highPrice: agg.high,
      lowPrice: agg.low,
      quoteVolume: roundDigits(agg.volume, 2),
      openTime: (minute - DAY) * 1000,
      closeTime: asOf * 1000,
      circulatingSupply: c.ref.supply,
    };
  }
}

/** OHLCV of consecutive candles, stamped `time` (simulated candles always carry a volume). */
export function aggregate(time: number, candles: readonly Candle[]): (Candle & { volume: number }) | undefined {
  const first = candles[0];
  const last = candles[candles.length - 1];
  if (first === undefined || last === undefined) return undefined;
  let high = -Infinity;
  let low = Infinity;
  let volume = 0;
  for (const k of candles) {
    if (k.high > high) high = k.high;
    if (k.low < low) low = k.low;
    volume += k.volume ?? 0;
  }
  return { time, open: first.open, high, low, close: last.close, volume };
}
