import type { CandleRepository } from '../domain/repositories.js';
import type { Candle, MarketSource } from '../domain/market.js';
import { BlockCache } from './block-cache.js';
import { BASE_OF, bucketCount, bucketEnd, bucketStart, fixedGrid, type BaseInterval, type Interval } from '../domain/intervals.js';
import { resample, type SeriesPoint } from './resample.js';
import { SeriesBlock, SeriesView, type SeriesBlockBuilder } from './series-block.js';
import { TurnQueue } from './turn-queue.js';

export interface HistoryServiceDeps {
  candles: CandleRepository;
  source: MarketSource;
  /** Candles asked of the source per page. */
  pageSize?: number;
  /**
   * Bytes of closed series kept in memory (QUOTES_HISTORY_CACHE_BYTES; closed candles never
   * change, so a series is reused until a new base candle closes). Default 64 MiB.
   */
  cacheBytes?: number;
  /**
   * Base candles read from the store per chunk (default 5,000): between chunks the event loop
   * runs other requests, so one long series never holds the process for more than one chunk.
   */
  chunkCandles?: number;
  /** Where history work waits for its turns (shared with the writers of history answers). */
  turns?: TurnQueue;
  /**
   * Seconds an in-progress candle is reused for later as-of instants in the same bucket (default
   * 10): with streamed tickers the as-of instant moves every second, the exchange is asked at
   * most this often per series.
   */
  liveReuseSeconds?: number;
  /**
   * Several replicas (cluster/replication.ts): whether a request may fill missing candles from
   * the source now (only the replica holding the ingest lease may). Absent: always.
   */
  mayFetch?: () => boolean;
  /**
   * Several replicas: where the in-progress candle comes from instead of the source (the one the
   * ingesting replica published with the current market state). With it, closed candles are read
   * only within the stored coverage, so a block cached before the ingesting replica stored the
   * newest closed candles is never served after they arrived: every replica reads the same rows.
   */
  sharedLive?: (symbol: string, base: BaseInterval, asOf: number) => Promise<Candle | undefined>;
}

/** Base lengths in seconds (the monthly base has none: it is read whole, a few hundred rows at most). */
const BASE_SECONDS: Readonly<Partial<Record<BaseInterval, number>>> = Object.freeze({ '1m': 60, '30m': 1800, '1h': 3600, '1d': 86_400 });

/*
 * Other APIs (the CoinGecko-compatible charts, sparklines) read history through PricedHistory
 * (priced-history.ts; built in compose.ts as the `pricedHistory` service): an explicit window
 * `{ fromMs, toMs, interval }`, a currency, the same budget and chunking as /api/v2/crypto.
 */

/**
 * Serves candle series from the store, filling it from the market source on first use. Each
 * base series keeps one contiguous covered span; a request only fetches what lies outside it.
 * Series are read in bounded chunks, aggregated by the database, into compact blocks
 * (series-block.ts) kept in an LRU bounded in bytes.
 */
export class HistoryService {
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly pageSize: number;
  readonly cache: BlockCache;
  private readonly chunkCandles: number;
  /** Closed blocks being read, so concurrent identical requests read once. */
  private readonly reading = new Map<string, Promise<SeriesBlock>>();
  /** Per series (symbol and interval), the cache key of its newest block: a later window extends it instead of reading it all again. */
  private readonly newest = new Map<string, { key: string; from: number; to: number }>();
  readonly turns: TurnQueue;
  /** Per base series, the newest in-progress candle asked for (one entry per series, so bounded by the series count). */
  private readonly live = new Map<string, { asOf: number; candle: Promise<Candle | undefined> }>();
  private readonly liveReuse: number;
  constructor(private readonly deps: HistoryServiceDeps) {
    this.pageSize = deps.pageSize ?? 5000;
    this.cache = new BlockCache(deps.cacheBytes ?? 64 * 1024 * 1024);
    this.chunkCandles = Math.max(100, deps.chunkCandles ?? 5000);
    this.turns = deps.turns ?? new TurnQueue();
    this.liveReuse = deps.sharedLive === undefined ? (deps.liveReuseSeconds ?? 10) : 0;
  }

  /**
   * Candles of `interval` whose buckets start in [from, asOf): the closed base candles, plus the
   * base candle still in progress at `asOf` (today's for daily series), so the newest bucket
   * grows as trading goes on. Its `closeTime` is `asOf`. (A convenience over `view`.)
   */
  async series(symbol: string, interval: Interval, from: number, asOf: number): Promise<readonly SeriesPoint[]> {
    return (await this.view(symbol, interval, from, asOf, asOf)).toArray();
  }

  /**
   * Candles of `interval` whose buckets start in [from, to), `to` <= `asOf`: base candles closed
   * by `asOf`, plus the one in progress at `asOf` when its bucket lies in the window (its
   * `closeTime` is then `asOf`).
   */
  async view(symbol: string, interval: Interval, from: number, to: number, asOf: number): Promise<SeriesView> {
    const base = BASE_OF[interval];
    const closedTo = Math.min(to, bucketStart(base, asOf)); // base candles opening before this have closed
    const closed = await this.closedBlock(symbol, interval, from, closedTo);
    const liveStart = bucketStart(base, asOf);
    if (liveStart < from || liveStart >= to) return new SeriesView(closed, closed.length, undefined);
    const live = await this.liveCandle(symbol, base, asOf);
    if (live === undefined || live.time < from || live.time >= asOf) return new SeriesView(closed, closed.length, undefined);
    return withLiveCandle(closed, live, interval, asOf);
  }

  /** Upper bound of the points `view` returns for this window (for request budgets, before any work). */
  static pointsBound(interval: Interval, from: number, to: number): number {
    return bucketCount(interval, from, to);
  }

  /** The source's in-progress base candle at `asOf`, shared by requests near the same instant; undefined when unknown or failing. */
  private liveCandle(symbol: string, base: BaseInterval, asOf: number): Promise<Candle | undefined> {
    if (this.deps.sharedLive !== undefined) return this.deps.sharedLive(symbol, base, asOf);
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

  /** Buckets of `interval` starting in [from, to) aggregated from the base candles with open time in [from, to). */
  private async closedBlock(symbol: string, interval: Interval, from: number, to: number): Promise<SeriesBlock> {
    if (to <= from) return SeriesBlock.EMPTY;
    if (this.deps.sharedLive === undefined) return this.cachedBlock(symbol, interval, from, to);
    const base = BASE_OF[interval];
    if (this.mayFetch()) await this.ensure(symbol, base, from, to);
    // Only what the stored coverage vouches for: closed candles the ingesting replica stored.
    const cov = await this.deps.candles.coverage(symbol, base);
    if (cov === undefined) return SeriesBlock.EMPTY;
    const f = Math.max(from, cov.from);
    const t = Math.min(to, cov.to);
    return t <= f ? SeriesBlock.EMPTY : this.cachedBlock(symbol, interval, f, t, false);
  }

  private mayFetch(): boolean {
    return this.deps.mayFetch?.() ?? true;
  }

  private cachedBlock(symbol: string, interval: Interval, from: number, to: number, fill = true): Promise<SeriesBlock> {
    const key = `${symbol}|${interval}|${from}|${to}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    let p = this.reading.get(key);
    if (p === undefined) {
      p = (async () => {
        const base = BASE_OF[interval];
        if (fill && this.mayFetch()) await this.ensure(symbol, base, from, to);
        const series = `${symbol}|${interval}`;
        const prev = this.newest.get(series);
        const prevBlock = prev !== undefined && prev.from <= from && from < prev.to && prev.to <= to ? this.cache.peek(prev.key) : undefined;
        const block = await this.readBlock(symbol, interval, base, from, to, prevBlock);
        this.cache.set(key, block);
        if (prev === undefined || prev.to <= to) this.newest.set(series, { key, from, to });
        return block;
      })().finally(() => this.reading.delete(key));
      this.reading.set(key, p);
    }
    return p;
  }

  /**
   * Reads the stored series chunk by chunk, one chunk per turn of the event loop. With `prev`
   * (a block of the same series over an earlier window [prevFrom, prevTo) with prevFrom <= from),
   * its complete buckets from `from` on are copied and only the rest is read: its last bucket may
   * have been partial, so it is read again.
   */
  private async readBlock(symbol: string, interval: Interval, base: BaseInterval, from: number, to: number, prev?: SeriesBlock): Promise<SeriesBlock> {
    const out = SeriesBlock.builder(bucketCount(interval, from, to) + 1);
    const baseLen = BASE_SECONDS[base];
    const grid = fixedGrid(interval);
    let start = from;
    if (prev !== undefined && prev.length > 0 && grid !== undefined) {
      const i0 = prev.indexAt(from);
      const last = prev.length - 1;
      if (i0 < last) out.pushRaw(prev.raw(i0, last));
      start = Math.max(from, prev.time(last));
    }
    if (baseLen === undefined || grid === undefined) {
      // Monthly base (1mo, 3mo): at most twelve rows a year, read at once.
      const rows = await this.deps.candles.range(symbol, base, from, to);
      for (const p of interval === base ? rows.map((k) => basePoint(base, k)) : resample(base, rows, interval)) append(out, p);
      return out.build();
    }
    const identity = grid.length === baseLen;
    // A whole number of buckets per chunk, so a chunk boundary never splits one (append merges if it does).
    const span = Math.max(1, Math.floor((this.chunkCandles * baseLen) / grid.length)) * grid.length;
    for (let cursor = start; cursor < to; cursor += span) {
      const end = Math.min(to, cursor + span);
      await this.turns.next();
      if (identity) {
        for (const k of await this.deps.candles.range(symbol, base, cursor, end)) append(out, { time: bucketStart(interval, k.time), open: k.open, high: k.high, low: k.low, close: k.close, volume: k.volume, closeTime: bucketEnd(base, k.time) });
      } else {
        for (const b of await this.deps.candles.buckets(symbol, base, cursor, end, grid.length, grid.offset)) {
          append(out, { time: b.time, open: b.open, high: b.high, low: b.low, close: b.close, volume: b.volume, closeTime: bucketEnd(base, b.lastTime) });
        }
      }
    }
    return out.build();
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
      // A page is generated or parsed and stored in one go: one page per event-loop turn.
      await this.turns.next();
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

function basePoint(base: BaseInterval, k: Candle): SeriesPoint {
  return { time: k.time, open: k.open, high: k.high, low: k.low, close: k.close, volume: k.volume, closeTime: bucketEnd(base, k.time) };
}

/** Appends `p`, merging it into the last point when both belong to the same bucket. */
function append(out: SeriesBlockBuilder, p: SeriesPoint): void {
  const last = out.last();
  if (last !== undefined && last.time === p.time) out.replaceLast(merge(last, p));
  else out.push(p.time, p.open, p.high, p.low, p.close, p.volume, p.closeTime);
}

/** `a` followed by `b` in the same bucket. */
function merge(a: SeriesPoint, b: { open: number; high: number; low: number; close: number; volume: number | null }, closeTime?: number): SeriesPoint {
  return {
    time: a.time,
    open: a.open,
    high: Math.max(a.high, b.high),
    low: Math.min(a.low, b.low),
    close: b.close,
    volume: a.volume === null || b.volume === null ? null : a.volume + b.volume,
    closeTime: closeTime ?? (b as Partial<SeriesPoint>).closeTime ?? a.closeTime,
  };
}

/** `closed` with the in-progress base candle merged into its bucket of `interval` (or appended as a new bucket). */
function withLiveCandle(closed: SeriesBlock, live: Candle, interval: Interval, asOf: number): SeriesView {
  const start = bucketStart(interval, live.time);
  const n = closed.length;
  const last = n === 0 ? undefined : closed.point(n - 1);
  if (last === undefined || last.time < start) {
    return new SeriesView(closed, n, { time: start, open: live.open, high: live.high, low: live.low, close: live.close, volume: live.volume, closeTime: asOf });
  }
  if (last.time !== start || last.closeTime > live.time) return new SeriesView(closed, n, undefined); // already holds it (cannot happen with closed candles only)
  return new SeriesView(closed, n - 1, merge(last, live, asOf));
}
