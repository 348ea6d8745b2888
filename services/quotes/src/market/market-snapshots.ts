import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { FxSnapshot, FxSource, MarketSource, Ticker } from './types.js';

/** Everything a quote needs, fetched together and swapped as one immutable object. */
export interface MarketSnapshot {
  /** Increments on every successful refresh; response caches key on it. */
  version: number;
  fetchedAt: number;
  tickers: ReadonlyMap<string, Ticker>;
  fx: FxSnapshot;
}

export interface MarketSnapshotsDeps {
  market: MarketSource;
  fx: FxSource;
  clock: Clock;
  symbols: readonly string[];
  /** Milliseconds between refreshes. */
  refreshMs: number;
  log: Logger;
  /**
   * on-demand (default): a request after `refreshMs` refreshes and waits for it (the simulated
   * source answers at once). background: a timer refreshes every `refreshMs` and requests never
   * wait on an upstream (exchanges may retry for a while), except for the very first snapshot.
   */
  mode?: 'on-demand' | 'background';
}

const EMPTY_FX: FxSnapshot = { time: 0, rates: new Map() };

/**
 * Latest tickers for every listed coin and the latest FX rates, refreshed at most every
 * `refreshMs` on demand (one refresh in flight at a time). A failed refresh keeps the previous
 * snapshot; the quote service turns data that grew too old into 503s.
 */
export class MarketSnapshots {
  private snap: MarketSnapshot = { version: 0, fetchedAt: -Infinity, tickers: new Map(), fx: EMPTY_FX };
  private lastAttempt = -Infinity;
  private inflight: Promise<void> | undefined;
  constructor(private readonly deps: MarketSnapshotsDeps) {}

  private timer: NodeJS.Timeout | undefined;

  /** Background mode: refresh now and then every `refreshMs` until `stop()`. */
  start(): void {
    if (this.deps.mode !== 'background' || this.timer !== undefined) return;
    void this.refreshNow();
    this.timer = setInterval(() => void this.refreshNow(), this.deps.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Refreshes at once (joining one already running). */
  async refreshNow(): Promise<MarketSnapshot> {
    this.inflight ??= this.refresh().finally(() => (this.inflight = undefined));
    await this.inflight;
    return this.snap;
  }

  /**
   * The snapshot a request would get right now when that needs no refresh (no waiting), else
   * undefined: the synchronous check of the cached-response fast path.
   */
  peek(): MarketSnapshot | undefined {
    if (this.deps.mode === 'background') return this.snap.version > 0 ? this.snap : undefined;
    const now = this.deps.clock.now();
    return now - this.lastAttempt >= this.deps.refreshMs || now < this.lastAttempt ? undefined : this.snap;
  }

  async current(): Promise<MarketSnapshot> {
    if (this.deps.mode === 'background') return this.snap.version > 0 ? this.snap : await this.refreshNow();
    const now = this.deps.clock.now();
    // A clock that moved backwards (tests, NTP steps) also forces a refresh.
    if (now - this.lastAttempt >= this.deps.refreshMs || now < this.lastAttempt) {
      this.inflight ??= this.refresh().finally(() => (this.inflight = undefined));
      await this.inflight;
    }
    return this.snap;
  }

  private async refresh(): Promise<void> {
    this.lastAttempt = this.deps.clock.now();
    // Tickers and rates fail independently: each keeps its last good value.
    const [tickers, fx] = await Promise.allSettled([this.deps.market.tickers(this.deps.symbols), this.deps.fx.latest()]);
    if (tickers.status === 'rejected') this.deps.log.error({ err: tickers.reason as unknown }, 'market refresh failed; keeping the previous tickers');
    if (fx.status === 'rejected') this.deps.log.error({ err: fx.reason as unknown }, 'FX refresh failed; keeping the previous rates');
    if (tickers.status === 'rejected' && fx.status === 'rejected') return;
    this.snap = {
      version: this.snap.version + 1,
      fetchedAt: this.deps.clock.now(),
      tickers: tickers.status === 'fulfilled' ? new Map(tickers.value.map((t) => [t.symbol, t])) : this.snap.tickers,
      fx: fx.status === 'fulfilled' ? fx.value : this.snap.fx,
    };
  }
}
