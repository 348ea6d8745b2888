import type { CandleRepository } from '../store/types.js';
import type { Candle, MarketSource } from '../market/types.js';
import { BASE_OF, bucketEnd, bucketStart, type BaseInterval, type Interval } from './intervals.js';
import { resample, type SeriesPoint } from './resample.js';

export interface HistoryServiceDeps {
  candles: CandleRepository;
  source: MarketSource;
  /** Candles asked of the source per page. */
  pageSize?: number;
  /** Served series kept in memory (closed candles never change, so a series is reused until a new base candle closes). */
  cacheEntries?: number;
  /**
   * Seconds an in-progress candle is reused for later as-of instants in the same bucket (default
   * 10): with streamed tickers the as-of instant moves every second, the exchange is asked at
   * most this often per series.
   */
  liveReuseSeconds?: number;
}

/**
 * Serves candle series from the store, filling it from the market source on first use. Each
 * base series keeps one contiguous covered span; a request only fetches what lies outside it.
 */
export class HistoryService {
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly pageSize: number;
  private readonly cache = new Map<string, readonly SeriesPoint[]>();
  private readonly cacheEntries: number;
  /** Per base series, the newest in-progress candle asked for (one entry per series, so bounded by the series count). */
  private readonly live = new Map<string, { asOf: number; candle: Promise<Candle | undefined> }>();
  private readonly liveReuse: number;
  constructor(private readonly deps: HistoryServiceDeps) {
    this.pageSize = deps.pageSize ?? 5000;
    this.cacheEntries = deps.cacheEntries ?? 512;
    this.liveReuse = deps.liveReuseSeconds ?? 10;
  }

  /**
   * Candles of `interval` whose buckets start in [from, asOf): the closed base candles, plus the
   * base candle still in progress at `asOf` (today's for daily series), so the newest bucket
   * grows as trading goes on. Its `closeTime` is `asOf`.
   */
  async series(symbol: string, interval: Interval, from: number, asOf: number): Promise<readonly SeriesPoint[]> {
    const closed = await this.closedSeries(symbol, interval, from, asOf);
    const live = await this.liveCandle(symbol, BASE_OF[interval], asOf);
    if (live === undefined || live.time < from || live.time >= asOf) return closed;
    return withLiveCandle(closed, live, interval, asOf);
  }

  /** The source's in-progress base candle at `asOf`, shared by requests near the same instant; undefined when unknown or failing. */
  private liveCandle(symbol: string, base: BaseInterval, asOf: number): Promise<Candle | undefined> {
    const source = this.deps.source;
    if (source.liveCandle === undefined) return Promise.resolve(undefined);
    const key = `${symbol}\u0000${base}`;
    const hit = this.live.get(key);
    if (hit !== undefined && hit.asOf <= asOf && asOf - hit.asOf < this.liveReuse && bucketStart(base, hit.asOf) === bucketStart(base, asOf)) return hit.candle;
    // A failing source costs the newest bucket only, never the closed history.
    const candle = source.liveCandle(symbol, base, asOf).catch(() => undefined);
    this.live.set(key, { asOf, candle });
    return candle;
  }

  /** Candles of `interval` whose buckets start in [from, asOf) and whose base candles closed by `asOf`. */
  private async closedSeries(symbol: string, interval: Interval, from: number, asOf: number): Promise<readonly SeriesPoint[]> {
    const base = BASE_OF[interval];
    const to = bucketStart(base, asOf); // base candles opening before this have closed
    if (to <= from) return [];
    const key = `${symbol}|${interval}|${from}|${to}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    await this.ensure(symbol, base, from, to);
    const rows = await this.deps.candles.range(symbol, base, from, to);
    const out =
      interval === base
        ? rows.map((k): SeriesPoint => ({ time: k.time, open: k.open, high: k.high, low: k.low, close: k.close, volume: k.volume, closeTime: bucketEnd(base, k.time) }))
        : resample(base, rows, interval);
    if (this.cache.size >= this.cacheEntries) {
      const oldest = this.cache.keys().next();
      if (oldest.done !== true) this.cache.delete(oldest.value);
    }
    this.cache.set(key, out);
    return out;
  }

  /** Makes sure base candles with open time in [from, to) are stored. */
  async ensure(symbol: string, base: BaseInterval, from: number, to: number): Promise<void> {
    const key = `${symbol}\u0000${base}`;
    // Requests for the same series queue up, so concurrent misses fetch once.
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(() => this.fill(symbol, base, from, to));
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    try {
      await run;
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    }
  }

  private async fill(symbol: string, base: BaseInterval, from: number, to: number): Promise<void> {
    const cov = await this.deps.candles.coverage(symbol, base);
    if (cov === undefined) {
      const last = await this.fetch(symbol, base, from, to);
      if (last !== undefined) await this.deps.candles.setCoverage(symbol, base, { from, to: Math.min(to, last) });
      return;
    }
    let { from: covFrom, to: covTo } = cov;
    // Gaps reach to the covered span, so the span stays contiguous even for a disjoint request.
    if (from < covFrom) {
      await this.fetch(symbol, base, from, covFrom);
      covFrom = from; // nothing before a coin's first trade is still "covered"
    }
    if (to > covTo) {
      const last = await this.fetch(symbol, base, covTo, to);
      // The newest edge only advances over candles the source really had: one it has not
      // finished yet (clock skew, late publication) is asked for again next time.
      if (last !== undefined) covTo = Math.min(to, last);
    }
    if (covFrom !== cov.from || covTo !== cov.to) await this.deps.candles.setCoverage(symbol, base, { from: covFrom, to: covTo });
  }

  /** Stores the source's candles in [from, to); returns the end of the newest one, if any. */
  private async fetch(symbol: string, base: BaseInterval, from: number, to: number): Promise<number | undefined> {
    let cursor: number | undefined = from;
    let last: number | undefined;
    while (cursor !== undefined && cursor < to) {
      const page = await this.deps.source.candles({ symbol, base, from: cursor, to, limit: this.pageSize });
      const ok: Candle[] = page.candles.filter((k) => k.time >= from && k.time < to);
      if (ok.length > 0) {
        await this.deps.candles.upsert(symbol, base, ok);
        last = bucketEnd(base, ok[ok.length - 1]!.time);
      }
      cursor = page.nextFrom;
    }
    return last;
  }
}

/** `closed` with the in-progress base candle merged into its bucket of `interval` (or appended as a new bucket). */
function withLiveCandle(closed: readonly SeriesPoint[], live: Candle, interval: Interval, asOf: number): SeriesPoint[] {
  const start = bucketStart(interval, live.time);
  const last = closed[closed.length - 1];
  if (last === undefined || last.time < start) {
    return [...closed, { time: start, open: live.open, high: live.high, low: live.low, close: live.close, volume: live.volume, closeTime: asOf }];
  }
  if (last.time !== start || last.closeTime > live.time) return [...closed]; // already holds it (cannot happen with closed candles only)
  const merged: SeriesPoint = {
    time: start,
    open: last.open,
    high: Math.max(last.high, live.high),
    low: Math.min(last.low, live.low),
    close: live.close,
    volume: last.volume === null || live.volume === null ? null : last.volume + live.volume,
    closeTime: asOf,
  };
  return [...closed.slice(0, -1), merged];
}
