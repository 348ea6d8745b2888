import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { FxSnapshot, FxSource, MarketSource, Ticker, VenueTicker } from '../domain/market.js';

/** Everything a quote needs, fetched together and swapped as one immutable object. */
export interface MarketSnapshot {
  /** Increments on every successful refresh; response caches key on it. */
  version: number;
  fetchedAt: number;
  tickers: ReadonlyMap<string, Ticker>;
  fx: FxSnapshot;
  /** Per-exchange tickers of the same refresh, most traded (USD) first, at most MARKET_EXCHANGE_TICKERS_MAX. */
  venues?: readonly VenueTicker[];
}

/** The `max` most traded per-exchange tickers (USD value; unknown conversions last), in that order. */
export function boundVenues(venues: readonly VenueTicker[], max: number): VenueTicker[] {
  const usd = (v: VenueTicker): number => (v.usdPerTarget === null ? -1 : v.quoteVolume * v.usdPerTarget);
  return [...venues].sort((a, b) => usd(b) - usd(a) || (a.exchange < b.exchange ? -1 : a.exchange > b.exchange ? 1 : a.pair < b.pair ? -1 : 1)).slice(0, max);
}

export interface MarketSnapshotsDeps {
  market: MarketSource;
  fx: FxSource;
  clock: Clock;
  symbols: readonly string[];
  /** Milliseconds between refreshes. */
  refreshMs: number;
  /** Most per-exchange tickers kept with a snapshot (MARKET_EXCHANGE_TICKERS_MAX); default 5000. */
  maxVenues?: number;
  log: Logger;
  /**
   * on-demand (default): a request after `refreshMs` refreshes and waits for it (the simulated
   * source answers at once). background: a timer refreshes every `refreshMs` and requests never
   * wait on an upstream (exchanges may retry for a while), except for the very first snapshot.
   */
  mode?: 'on-demand' | 'background';
  /**
   * Several replicas (cluster/replication.ts): whether this replica may ask the sources now
   * (it holds the ingest lease), asked before every refresh. A replica that may not never asks
   * them; its snapshots come through `adopt`. Absent: always.
   */
  mayIngest?: () => boolean;
  /**
   * Several replicas: stores a freshly fetched snapshot for every replica and returns it as
   * stored (its shared version), which is what this replica then serves too; undefined when the
   * write was refused (this replica's ingest term ended), and the snapshot is dropped.
   */
  publish?: (snap: MarketSnapshot) => Promise<MarketSnapshot | undefined>;
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
  private readonly listeners = new Set<(snap: MarketSnapshot) => void>();

  /**
   * Calls `listener` with every new snapshot, right after it is swapped in (the live-price
   * streams fan out from here). Returns the function that removes it. A throwing listener is
   * logged and never stops the others or the refresh.
   */
  onSnapshot(listener: (snap: MarketSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private notify(): void {
    for (const l of this.listeners) {
      try {
        l(this.snap);
      } catch (err) {
        this.deps.log.error({ err }, 'snapshot listener failed');
      }
    }
  }

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

  /** The snapshot held now, never refreshing (version 0 before the first): for observers such as the metrics. */
  held(): MarketSnapshot {
    return this.snap;
  }

  /**
   * Serves `snap` (from the shared market state) when it is newer than the current snapshot;
   * listeners hear of it as of a refresh. Returns whether it was taken.
   */
  adopt(snap: MarketSnapshot): boolean {
    if (snap.version <= this.snap.version) return false;
    this.snap = snap;
    this.notify();
    return true;
  }

  /** Version of the snapshot served now (0 before the first). */
  latestVersion(): number {
    return this.snap.version;
  }

  private mayIngest(): boolean {
    return this.deps.mayIngest?.() ?? true;
  }

  /**
   * The snapshot a request gets: the one held, at once, unless a refresh is due (on demand: the
   * refresh interval passed; background: none yet), then after that refresh.
   */
  current(): MaybePromise<MarketSnapshot> {
    if (this.deps.mode === 'background') return this.snap.version > 0 || !this.mayIngest() ? this.snap : this.refreshNow();
    const now = this.deps.clock.now();
    // A clock that moved backwards (tests, NTP steps) also forces a refresh.
    if (now - this.lastAttempt >= this.deps.refreshMs || now < this.lastAttempt) {
      this.inflight ??= this.refresh().finally(() => (this.inflight = undefined));
      return this.inflight.then(() => this.snap);
    }
    return this.snap;
  }

  private async refresh(): Promise<void> {
    if (!this.mayIngest()) return;
    this.lastAttempt = this.deps.clock.now();
    // Tickers and rates fail independently: each keeps its last good value.
    const [tickers, fx] = await Promise.allSettled([this.deps.market.tickers(this.deps.symbols), this.deps.fx.latest()]);
    if (tickers.status === 'rejected') this.deps.log.error({ err: tickers.reason as unknown }, 'market refresh failed; keeping the previous tickers');
    if (fx.status === 'rejected') this.deps.log.error({ err: fx.reason as unknown }, 'FX refresh failed; keeping the previous rates');
    if (tickers.status === 'rejected' && fx.status === 'rejected') return;
    const next: MarketSnapshot = {
      version: this.snap.version + 1,
      fetchedAt: this.deps.clock.now(),
      tickers: tickers.status === 'fulfilled' ? new Map(tickers.value.coins.map((t) => [t.symbol, t])) : this.snap.tickers,
      fx: fx.status === 'fulfilled' ? fx.value : this.snap.fx,
    };
    const venues = tickers.status === 'fulfilled' ? boundVenues(tickers.value.venues, this.deps.maxVenues ?? 5000) : this.snap.venues;
    if (venues !== undefined) next.venues = venues;
    if (this.deps.publish === undefined) {
      this.snap = next;
      this.notify();
      return;
    }
    let stored: MarketSnapshot | undefined;
    try {
      stored = await this.deps.publish(next);
    } catch (err) {
      this.deps.log.error({ err }, 'writing the shared market state failed; other replicas keep the previous one');
      return;
    }
    if (stored !== undefined) this.adopt(stored);
  }
}
