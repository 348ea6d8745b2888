import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import { valueFormat } from '../domain/value-precision.js';
import type { FxHistory, RateOn } from './fx-history.js';
import { HistoryService } from './history-service.js';
import { bucketStart, type Interval } from '../domain/intervals.js';
import { EARLIEST_DATA } from './range-rules.js';
import type { SeriesView } from './series-block.js';

/** A time window in Unix milliseconds, [fromMs, toMs), and the candle interval. */
export interface HistoryTimeWindow {
  fromMs: number;
  toMs: number;
  interval: Interval;
}

/**
 * One candle in the requested currency, rounded as every answer is (value-precision.ts). Prices
 * are null before the currency's first FX fixing; volume is null also when the source reports
 * none.
 */
export interface PricedCandle {
  /** Bucket start, Unix milliseconds. */
  timeMs: number;
  open: number | null;
  high: number | null;
  low: number | null;
  close: number | null;
  volume: number | null;
}

export interface PricedHistoryDeps {
  history: HistoryService;
  fxHistory: FxHistory;
  clock: Clock;
  /** Most candles one call may produce (QUOTES_HISTORY_MAX_POINTS). */
  maxPoints: number;
  /** Candles per chunk (default 2,000). */
  chunkPoints?: number;
}

/** A series ready to be written: its points, the rate lookup and the value formats of the currency. */
export interface PricedView {
  view: SeriesView;
  rateOn: RateOn;
  /** A digest of the FX fixings used (for ETags). */
  fxStamp: string;
  currency: string;
}

/**
 * The point at `i` of a priced view, converted at the rate of its close day (UTC; the last fixing
 * on or before it). The one conversion both APIs use.
 */
export function pricedPoint(pv: PricedView, i: number): PricedCandle {
  const p = pv.view.point(i);
  const fmt = valueFormat(pv.currency);
  const r = pv.rateOn(Math.floor((p.closeTime - 1) / 86_400));
  if (r === null) return { timeMs: p.time * 1000, open: null, high: null, low: null, close: null, volume: null };
  return {
    timeMs: p.time * 1000,
    open: fmt.price(p.open * r),
    high: fmt.price(p.high * r),
    low: fmt.price(p.low * r),
    close: fmt.price(p.close * r),
    volume: p.volume === null ? null : fmt.amount(p.volume * r),
  };
}

/**
 * Candle history over an explicit time window, in any currency with daily FX history: the entry
 * point for APIs other than brapi's (the CoinGecko-compatible one: market_chart, market_chart/range,
 * ohlc, sparklines). Bounded by the same per-request budget as `/api/v2/crypto`.
 */
export class PricedHistory {
  private readonly chunkPoints: number;
  constructor(private readonly deps: PricedHistoryDeps) {
    this.chunkPoints = Math.max(1, deps.chunkPoints ?? 2000);
  }

  get maxPoints(): number {
    return this.deps.maxPoints;
  }

  /**
   * The series of `symbol` in `currency` whose buckets start in [fromMs, toMs) (the start aligned
   * down to its bucket; the end capped at now, with the in-progress candle when the window
   * reaches now). Throws QuotesError HISTORY_TOO_LARGE when the window may hold more than
   * `maxPoints` candles (pass `coins` when one answer covers several coins).
   */
  async view(symbol: string, currency: string, w: HistoryTimeWindow, coins = 1): Promise<PricedView> {
    const asOf = Math.floor(this.deps.clock.now() / 1000);
    if (!Number.isFinite(w.fromMs) || !Number.isFinite(w.toMs)) throw new QuotesError('DATES_INVALID', { reason: 'the window must have finite bounds' });
    const from = bucketStart(w.interval, Math.max(0, Math.floor(w.fromMs / 1000)));
    const to = Math.min(asOf, Math.ceil(w.toMs / 1000));
    const points = to <= from ? 0 : coins * HistoryService.pointsBound(w.interval, Math.max(from, bucketStart(w.interval, EARLIEST_DATA)), to);
    if (points > this.deps.maxPoints) throw new QuotesError('HISTORY_TOO_LARGE', { limit: this.deps.maxPoints, points });
    const view = await this.deps.history.view(symbol, w.interval, from, Math.max(from, to), asOf);
    const { rateOn, stamp } = await this.deps.fxHistory.rates(currency);
    return { view, rateOn, fxStamp: stamp, currency };
  }

  /** The window's candles in chunks of at most `chunkPoints`, yielding to the event loop between chunks. */
  async *chunks(symbol: string, currency: string, w: HistoryTimeWindow): AsyncGenerator<PricedCandle[]> {
    const pv = await this.view(symbol, currency, w);
    const n = pv.view.length;
    for (let i = 0; i < n; ) {
      // One chunk per event-loop turn, in turn with every other history request.
      await this.deps.history.turns.next();
      const end = Math.min(n, i + this.chunkPoints);
      const out: PricedCandle[] = [];
      for (; i < end; i++) out.push(pricedPoint(pv, i));
      yield out;
    }
  }

  /** All of the window's candles at once (bounded by `maxPoints`). */
  async series(symbol: string, currency: string, w: HistoryTimeWindow): Promise<PricedCandle[]> {
    const out: PricedCandle[] = [];
    for await (const c of this.chunks(symbol, currency, w)) for (const k of c) out.push(k);
    return out;
  }
}
