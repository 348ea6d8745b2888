import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { MarketSource } from '../domain/market.js';
import type { BackfillState, BackfillStateRepository, CandleRepository } from '../domain/repositories.js';
import { findGaps } from './gaps.js';
import type { HistoryService } from './history-service.js';
import type { BackfillWindow } from './history-settings.js';
import { alignUp, bucketEnd, bucketStart, DAY, type BaseInterval } from '../domain/intervals.js';

export interface BackfillDeps {
  source: MarketSource;
  candles: CandleRepository;
  states: BackfillStateRepository;
  history: HistoryService;
  clock: Clock;
  log: Logger;
  windows: readonly BackfillWindow[];
  /** Candles asked per page (exchanges cap it, Binance at 1000). */
  pageSize?: number;
  /** Buckets at the recent end re-checked for gaps on every sync. */
  recentGapBuckets?: number;
}

export type SeriesOutcome = 'done' | 'failed';

/**
 * Fills base series from the market source page by page, saving the cursor after every page so
 * a restart resumes where it stopped; then keeps them current (incremental sync) and refetches
 * gaps. Rate limiting is the source's job (ccxt throttles to each exchange's request weights),
 * and series are worked one at a time so a backfill never bursts.
 */
export class Backfiller {
  private readonly pageSize: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  constructor(private readonly deps: BackfillDeps) {
    this.pageSize = deps.pageSize ?? 1000;
  }

  private nowS(): number {
    return Math.floor(this.deps.clock.now() / 1000);
  }

  /** Runs or resumes one series' backfill until it reaches the present (done) or the source fails. */
  async backfillSeries(symbol: string, window: BackfillWindow): Promise<SeriesOutcome> {
    const { base } = window;
    const end = bucketStart(base, this.nowS()); // candles opening before this have closed
    let st = await this.deps.states.get(symbol, base);
    if (st === undefined) {
      const from = window.days === null ? 0 : alignUp(base, this.nowS() - window.days * DAY);
      st = { symbol, base, from, cursor: from, done: false, updatedAt: this.deps.clock.now(), lastError: null };
      await this.deps.states.put(st);
    }
    if (st.done) return 'done';
    while (st.cursor < end && !this.stopped) {
      let page;
      try {
        page = await this.deps.source.candles({ symbol, base, from: st.cursor, to: end, limit: this.pageSize });
      } catch (err) {
        st = { ...st, updatedAt: this.deps.clock.now(), lastError: (err as Error).message };
        await this.deps.states.put(st);
        this.deps.log.error({ symbol, base, cursor: st.cursor, err: (err as Error).message }, 'backfill stopped; it resumes from the saved cursor');
        return 'failed';
      }
      const start = st.cursor;
      const ok = page.candles.filter((k) => k.time >= start && k.time < end);
      if (ok.length > 0) await this.deps.candles.upsert(symbol, base, ok);
      // A final page only covers up to its newest candle: one not yet published is asked again by the sync.
      const lastEnd: number = ok.length > 0 ? bucketEnd(base, ok[ok.length - 1]!.time) : st.cursor;
      const next: number = page.nextFrom ?? Math.max(lastEnd, st.cursor);
      const covered: number = page.nextFrom ?? lastEnd;
      const cursor = await this.extendCoverage(symbol, base, st.from, Math.max(covered, st.cursor));
      st = { ...st, cursor: Math.max(next, cursor), updatedAt: this.deps.clock.now(), lastError: null };
      if (page.nextFrom === undefined) st = { ...st, done: true };
      await this.deps.states.put(st);
      if (st.done) break;
    }
    if (st.cursor >= end && !st.done) {
      st = { ...st, done: true };
      await this.deps.states.put(st);
    }
    if (st.done) this.deps.log.info({ symbol, base }, 'backfill complete');
    return st.done ? 'done' : 'failed';
  }

  /**
   * Merges [from, to) into the series' covered span when they touch; returns where the backfill
   * may continue (past an already covered span it reached).
   */
  private async extendCoverage(symbol: string, base: BaseInterval, from: number, to: number): Promise<number> {
    const cov = await this.deps.candles.coverage(symbol, base);
    if (cov === undefined) {
      if (to > from) await this.deps.candles.setCoverage(symbol, base, { from, to });
      return to;
    }
    if (cov.from > to) return to; // still before the covered span: keep the cursor only
    const merged = { from: Math.min(cov.from, from), to: Math.max(cov.to, to) };
    if (merged.from !== cov.from || merged.to !== cov.to) await this.deps.candles.setCoverage(symbol, base, merged);
    return merged.to;
  }

  /** Brings a series up to the present from its covered end (through the history service's fill). */
  async sync(symbol: string, base: BaseInterval): Promise<void> {
    const cov = await this.deps.candles.coverage(symbol, base);
    if (cov === undefined) return;
    await this.deps.history.ensure(symbol, base, cov.from, bucketStart(base, this.nowS()));
  }

  /** Refetches missing candles inside the covered span (optionally only its last `buckets`); returns the gaps left unfilled. */
  async refillGaps(symbol: string, base: BaseInterval, recentBuckets?: number): Promise<{ found: number; remaining: number }> {
    const cov = await this.deps.candles.coverage(symbol, base);
    if (cov === undefined) return { found: 0, remaining: 0 };
    let from = cov.from;
    if (recentBuckets !== undefined) {
      let f = bucketStart(base, cov.to - 1);
      for (let i = 1; i < recentBuckets && f > cov.from; i++) f = bucketStart(base, f - 1);
      from = Math.max(cov.from, f);
    }
    const times = (await this.deps.candles.range(symbol, base, from, cov.to)).map((k) => k.time);
    // Inside the span only: the tail belongs to the sync.
    const gaps = findGaps(base, times, from, times.length === 0 ? from : bucketEnd(base, times[times.length - 1]!));
    let remaining = 0;
    for (const g of gaps) {
      let cursor: number | undefined = g.from;
      let got = 0;
      while (cursor !== undefined && cursor < g.to) {
        const page = await this.deps.source.candles({ symbol, base, from: cursor, to: g.to, limit: this.pageSize });
        const ok = page.candles.filter((k) => k.time >= g.from && k.time < g.to);
        if (ok.length > 0) await this.deps.candles.upsert(symbol, base, ok);
        got += ok.length;
        cursor = page.nextFrom;
      }
      const want = await this.deps.candles.count(symbol, base, g.from, g.to);
      if (got === 0 || want === 0) remaining++;
    }
    if (gaps.length > 0) this.deps.log.info({ symbol, base, gaps: gaps.length, unfilled: remaining }, 'history gaps refetched');
    return { found: gaps.length, remaining };
  }

  /** One pass over every coin and window: backfill (resuming), then sync and recent gap checks of finished series. */
  async runOnce(symbols: readonly string[]): Promise<Map<string, SeriesOutcome>> {
    const out = new Map<string, SeriesOutcome>();
    for (const symbol of symbols) {
      for (const w of this.deps.windows) {
        if (this.stopped) return out;
        const key = `${symbol}/${w.base}`;
        const outcome = await this.backfillSeries(symbol, w);
        out.set(key, outcome);
        if (outcome !== 'done') continue;
        try {
          await this.sync(symbol, w.base);
          await this.refillGaps(symbol, w.base, this.deps.recentGapBuckets ?? 1000);
        } catch (err) {
          out.set(key, 'failed');
          this.deps.log.warn({ symbol, base: w.base, err: (err as Error).message }, 'history sync failed; retried next cycle');
        }
      }
    }
    return out;
  }

  /** Runs passes every `intervalMs` (never two at once) until `stop()`. */
  start(symbols: () => readonly string[], intervalMs: number): void {
    const tick = (): void => {
      this.running ??= this.runOnce(symbols())
        .then(() => undefined, (err: unknown) => this.deps.log.error({ err }, 'history pass failed'))
        .finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.running;
  }
}

export type { BackfillState };
