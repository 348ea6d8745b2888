import type { Logger } from 'pino';
import type { MarketSnapshot, MarketSnapshots } from '../market/market-snapshots.js';
import type { SharedMarket } from './market-state-codec.js';
import { bucketStart, type BaseInterval } from '../domain/intervals.js';
import type { Candle } from '../domain/market.js';
import { LeaderElection } from './leader-election.js';
import { decodeMarketState, encodeMarketState, liveCandleKey, type LiveCandles } from './market-state-codec.js';
import type { ClusterStore } from './types.js';

export type ReplicaRole = 'all' | 'api' | 'ingest';

/** The lease every ingesting replica competes for. */
export const INGEST_LEASE = 'ingest';

export interface ReplicationOptions {
  cluster: ClusterStore;
  role: ReplicaRole;
  /** Unique per process (host, pid, random). */
  holder: string;
  leaseMs: number;
  /** How often a replica that does not ingest checks the shared state's version. */
  pollMs: number;
  /** Monotonic milliseconds. */
  now: () => number;
  log: Logger;
}

/** What the ingesting replica runs: exchange polling (MarketSnapshots), streams, backfill. */
export interface Ingestion {
  start(): Promise<void>;
  /** Stops every upstream activity; called before the replica's term can have ended. */
  stop(): Promise<void>;
}

/**
 * One replica among several on PostgreSQL. Replicas with role `all` or `ingest` compete for the
 * ingest lease (LeaderElection); the holder runs the Ingestion and publishes each snapshot it
 * fetches to the shared market state, with the in-progress candles its keeper holds
 * (history/live-candle-keeper.ts; every replica's history serves those, see `liveCandle`).
 * Every other replica (and the holder before it is elected) checks the state's version every
 * `pollMs` and serves the stored snapshot when it changed, so every replica serves identical
 * data for the same version, at most `pollMs` (plus a query) behind the writer.
 */
export class Replication {
  readonly election: LeaderElection | undefined;
  private symbols: readonly string[] = [];
  private poller: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private snapshots: MarketSnapshots | undefined;
  private ingestion: Ingestion | undefined;
  private lostHandler: (reason: string) => void = () => undefined;
  private stopped = false;
  /** In-progress candles published with the snapshot served now (adopted together with it). */
  private live: LiveCandles = new Map();
  /** This replica's last write, until MarketSnapshots serves its version. */
  private published: { version: number; live: LiveCandles } | undefined;
  /** What the ingesting replica publishes as in-progress candles (history/live-candle-keeper.ts). */
  private liveSource: () => LiveCandles | undefined = () => undefined;

  constructor(private readonly o: ReplicationOptions) {
    if (o.role !== 'api') {
      this.election = new LeaderElection({
        lease: o.cluster.lease,
        name: INGEST_LEASE,
        holder: o.holder,
        ttlMs: o.leaseMs,
        now: o.now,
        log: o.log,
        onElected: () => {
          this.ingestion?.start().catch((err: unknown) => o.log.error({ err }, 'starting ingestion failed'));
        },
        onLost: (reason) => {
          // Before anything else: no upstream call may start after this point (isLeader() is
          // already false for every ingest step).
          const stopping = this.ingestion?.stop() ?? Promise.resolve();
          stopping.catch((err: unknown) => o.log.error({ err }, 'stopping ingestion failed')).finally(() => this.lostHandler(reason));
        },
      });
    }
  }

  /** Whether this replica may ask the upstreams now (holds the ingest lease by its own clock). */
  readonly mayIngest = (): boolean => this.election?.isLeader() ?? false;

  /**
   * Where `publish` takes the in-progress candles it stores with each snapshot (the leader's
   * keeper). Until it has any (undefined: a new leader's first pass is still running) the ones
   * served now are published again; they are served only within their own bucket.
   */
  publishLiveCandles(source: () => LiveCandles | undefined): void {
    this.liveSource = source;
  }

  /**
   * The in-progress base candle at `asOf` as published with the current snapshot (the same on
   * every replica for the same version); undefined when none was published for that bucket.
   * Every replica's history reads it here, so none asks the exchange on a request.
   */
  readonly liveCandle = (symbol: string, base: BaseInterval, asOf: number): Promise<Candle | undefined> => {
    const k = this.live.get(liveCandleKey(symbol, base));
    return Promise.resolve(k !== undefined && k.time === bucketStart(base, asOf) && k.time < asOf ? k : undefined);
  };

  /** Called once ingestion has stopped after the lease was lost (main.ts restarts the process). */
  onLost(handler: (reason: string) => void): void {
    this.lostHandler = handler;
  }

  /**
   * The coin list. A replica that may ingest lists the source's coins itself (one market-list
   * call per exchange at start-up: a standby is then ready to poll the moment it is elected, and
   * a changed MARKET_EXCHANGES takes effect), falling back to the shared state's list when the
   * source fails; an `api` replica takes the shared state's list, waiting on a fresh database for
   * the first published state. The shared snapshot found meanwhile is served from `start` on.
   */
  async initialSymbols(fromSource: () => Promise<readonly string[]>): Promise<readonly string[]> {
    const first = await this.loadShared().catch((err: unknown) => {
      this.o.log.warn({ err: (err as Error).message }, 'reading the shared market state failed');
      return undefined;
    });
    this.pending = first;
    if (this.o.role !== 'api') {
      try {
        return (this.symbols = await fromSource());
      } catch (err) {
        if (first === undefined || first.symbols.length === 0) throw err;
        this.o.log.warn({ err: (err as Error).message }, 'listing the market failed; using the coin list of the shared market state');
        return (this.symbols = first.symbols);
      }
    }
    if (first !== undefined && first.symbols.length > 0) return (this.symbols = first.symbols);
    let waited = 0;
    for (;;) {
      if (this.stopped) throw new Error('stopped while waiting for the shared market state');
      await new Promise((r) => setTimeout(r, this.o.pollMs));
      waited += this.o.pollMs;
      const s = await this.loadShared().catch(() => undefined);
      if (s !== undefined && s.symbols.length > 0) {
        this.pending = s;
        return (this.symbols = s.symbols);
      }
      if (waited % 10_000 < this.o.pollMs) this.o.log.warn({ waitedMs: waited }, 'QUOTES_ROLE=api: waiting for an ingesting replica to publish the market state');
    }
  }

  private pending: SharedMarket | undefined;

  private async loadShared(): Promise<SharedMarket | undefined> {
    const stored = await this.o.cluster.state.read();
    return stored === undefined ? undefined : decodeMarketState(stored);
  }

  /** MarketSnapshots' publish hook: the fetched snapshot into the shared state, fenced by this replica's term. */
  readonly publish = async (snap: MarketSnapshot): Promise<MarketSnapshot | undefined> => {
    const term = this.election?.currentTerm();
    if (term === undefined) return undefined;
    const body = encodeMarketState(snap, this.symbols, this.liveSource() ?? this.live);
    const version = await this.o.cluster.state.write(term, snap.fetchedAt, body);
    if (version === undefined) {
      this.o.log.warn({ fence: term.fence }, 'the shared market state refused this replica\'s write (its ingest term ended)');
      return undefined;
    }
    const shared = decodeMarketState({ version, fetchedAt: snap.fetchedAt, body });
    // Served from the moment MarketSnapshots swaps this version in (the listener in `start`).
    this.published = { version, live: shared.live };
    return shared.snapshot;
  };

  /** Starts following the shared state and, for `all`/`ingest`, competing for the lease. */
  start(snapshots: MarketSnapshots, ingestion: Ingestion): void {
    this.snapshots = snapshots;
    this.ingestion = ingestion;
    // Called synchronously as a version is swapped in: no request sees one without the other.
    snapshots.onSnapshot((snap) => {
      if (this.published?.version !== snap.version) return;
      this.live = this.published.live;
      this.published = undefined;
    });
    if (this.pending !== undefined) this.adopt(this.pending);
    this.pending = undefined;
    void this.poll();
    this.poller = setInterval(() => void this.poll(), this.o.pollMs);
    this.poller.unref();
    this.election?.start();
  }

  private tokensVersion = 0;
  /** When the last successful poll was sent (monotonic ms): what it read was true then. */
  private polledAt = -Infinity;
  private uncached = 0;
  private pollFailing = false;

  /**
   * Store.changeVersion for PostgreSQL (AccountService caches resolved tokens until it moves):
   * the tokens' change counter as last polled. While polls fail for two intervals it returns a
   * new number on every call, so nothing stays cached: a revocation anywhere is seen here within
   * two poll intervals (one, normally) plus a query.
   */
  readonly changeVersion = (): number => (this.o.now() - this.polledAt > 2 * this.o.pollMs ? --this.uncached : this.tokensVersion);

  /** One check of the shared versions (what the timer runs): tokens' counter; a newer market state is loaded and served. */
  poll(): Promise<void> {
    this.polling ??= (async () => {
      const snapshots = this.snapshots;
      if (snapshots === undefined) return;
      try {
        const sentAt = this.o.now();
        const v = await this.o.cluster.versions();
        this.tokensVersion = v.tokens;
        this.polledAt = sentAt;
        if (this.pollFailing) this.o.log.info('reading the shared market state works again');
        this.pollFailing = false;
        if (this.mayIngest() || v.marketState === undefined || v.marketState <= snapshots.latestVersion()) return;
        const s = await this.loadShared();
        if (s !== undefined) this.adopt(s);
      } catch (err) {
        // Logged when it starts failing, not every interval.
        if (!this.pollFailing) this.o.log.warn({ err: (err as Error).message }, 'reading the shared market state failed; serving the previous one, tokens uncached');
        this.pollFailing = true;
      }
    })().finally(() => (this.polling = undefined));
    return this.polling;
  }

  /** Serves a stored state: its in-progress candles first, so a request seeing the new snapshot finds them. */
  private adopt(s: SharedMarket): void {
    const snapshots = this.snapshots;
    if (snapshots === undefined || s.snapshot.version <= snapshots.latestVersion()) return;
    const previous = this.live;
    this.live = s.live;
    if (!snapshots.adopt(s.snapshot)) this.live = previous;
  }

  /**
   * Stops polling and competing: ingestion stops first (idempotent, so whether or not this
   * replica leads), then the lease is released, so the next holder never overlaps with it.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poller !== undefined) clearInterval(this.poller);
    await this.ingestion?.stop();
    await this.election?.stop();
    await this.polling;
    await this.o.cluster.close();
  }
}
