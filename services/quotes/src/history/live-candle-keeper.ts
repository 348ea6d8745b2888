import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Candle, MarketSource } from '../domain/market.js';
import type { CandleRepository } from '../domain/repositories.js';
import type { FxHistory } from './fx-history.js';
import type { HistoryService } from './history-service.js';
import { BASE_INTERVALS, bucketEnd, bucketStart, type BaseInterval } from '../domain/intervals.js';

/** Finer bases whose buckets tile each base's (UTC), coarsest first: an in-progress candle can be built from them. */
const FINER: Readonly<Record<BaseInterval, readonly BaseInterval[]>> = Object.freeze({ '1m': [], '30m': ['1m'], '1h': ['30m', '1m'], '1d': ['1h', '30m', '1m'], '1mo': ['1d'] });

export interface LiveCandleKeeperDeps {
  source: MarketSource;
  candles: CandleRepository;
  history: HistoryService;
  fxHistory: FxHistory;
  /** Currencies whose daily fixings are kept current (the FX source's). */
  fxCurrencies: readonly string[];
  clock: Clock;
  log: Logger;
  /** Coins kept current (HISTORY_BACKFILL_COINS). */
  symbols: () => readonly string[];
  /** Base series kept current (those of HISTORY_BACKFILL_WINDOWS). */
  bases: readonly BaseInterval[];
  /** Key of a series in the table `current()` returns. */
  key: (symbol: string, base: BaseInterval) => string;
}

/**
 * What the ingesting replica does so that every replica can serve history from the database
 * alone (cluster/replication.ts publishes `current()` with each market snapshot). One pass, run
 * on the market refresh cadence, never two at once, one upstream call at a time:
 * - each kept series whose stored coverage reaches its newest closed bucket or the one before is
 *   brought up to the present (a kline request only when a bucket closed since the last pass; a
 *   series further behind is the backfill's to catch up);
 * - the in-progress candle of each kept series goes into the table `current()` returns: built from
 *   a finer kept series when that one is stored up to its own in-progress bucket (today's daily
 *   candle = today's closed hourly candles + this hour's so far: the exchange's own numbers,
 *   aggregated as the exchange does), else fetched; so a pass costs about one kline request per
 *   coin (its finest series), plus one per series whose bucket closed since the last pass;
 * - the daily FX fixings of every currency are fetched once a UTC day into the store.
 */
export class LiveCandleKeeper {
  private table: ReadonlyMap<string, Candle> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  constructor(private readonly deps: LiveCandleKeeperDeps) {}

  /** The in-progress candles of the last pass (replaced whole when a pass ends); undefined before the first pass ended. */
  readonly current = (): ReadonlyMap<string, Candle> | undefined => this.table;

  /** One pass (see the class comment); joins one already running. */
  runOnce(): Promise<void> {
    this.running ??= this.pass()
      .catch((err: unknown) => this.deps.log.error({ err }, 'keeping history current failed; retried next pass'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    const { source, candles, history, log } = this.deps;
    const next = new Map<string, Candle>();
    const bases = BASE_INTERVALS.filter((b) => this.deps.bases.includes(b)); // finest first
    for (const symbol of this.deps.symbols()) {
      /** Per base of this coin: where its stored coverage starts, when it reaches its in-progress bucket. */
      const current = new Map<BaseInterval, number>();
      for (const base of bases) {
        if (this.stopped) return;
        const now = Math.floor(this.deps.clock.now() / 1000);
        const closedTo = bucketStart(base, now);
        try {
          let cov = await candles.coverage(symbol, base);
          if (cov !== undefined && cov.to < closedTo && bucketEnd(base, bucketEnd(base, cov.to)) >= closedTo) {
            await history.ensure(symbol, base, cov.from, closedTo);
            cov = await candles.coverage(symbol, base);
          }
          if (cov !== undefined && cov.to >= closedTo) current.set(base, cov.from);
          const live = (await this.built(symbol, base, now, next, current)) ?? (source.liveCandle === undefined ? undefined : await source.liveCandle(symbol, base, now));
          if (live !== undefined) next.set(this.deps.key(symbol, base), live);
        } catch (err) {
          // That series' newest bucket goes missing for a pass; the others are unaffected.
          log.warn({ symbol, base, err: (err as Error).message }, 'refreshing the in-progress candle failed');
        }
      }
    }
    if (this.stopped) return;
    this.table = next;
    // Beside the candle passes: a first load of every currency's fixings may take a while.
    this.fxRunning ??= this.refreshFx().finally(() => (this.fxRunning = undefined));
  }

  /**
   * The in-progress candle of `base` at `now` from a finer series of this pass: its stored closed
   * candles since the bucket opened and its own in-progress one. Undefined when no finer series
   * is current (then the source is asked).
   */
  private async built(symbol: string, base: BaseInterval, now: number, next: ReadonlyMap<string, Candle>, current: ReadonlyMap<BaseInterval, number>): Promise<Candle | undefined> {
    const start = bucketStart(base, now);
    for (const f of FINER[base]) {
      const live = next.get(this.deps.key(symbol, f));
      const from = current.get(f);
      const fStart = bucketStart(f, now);
      if (live === undefined || live.time !== fStart || from === undefined || from > start) continue;
      const parts = [...(fStart > start ? await this.deps.candles.range(symbol, f, start, fStart) : []), live];
      const first = parts[0]!;
      let { high, low, volume } = first;
      for (const k of parts.slice(1)) {
        high = Math.max(high, k.high);
        low = Math.min(low, k.low);
        volume = volume === null || k.volume === null ? null : volume + k.volume;
      }
      return { time: start, open: first.open, high, low, close: live.close, volume };
    }
    return undefined;
  }

  private fxRunning: Promise<void> | undefined;

  private async refreshFx(): Promise<void> {
    for (const currency of this.deps.fxCurrencies) {
      if (this.stopped) return;
      // Fetches at most once a UTC day (FxHistory's own rule); failures are logged there.
      await this.deps.fxHistory.rates(currency).catch(() => undefined);
    }
  }

  /** Runs a pass now and then every `intervalMs` until `stop()`. */
  start(intervalMs: number): void {
    if (this.timer !== undefined || this.stopped) return;
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.running;
    await this.fxRunning;
  }
}
