import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Plan } from '../accounts/plans.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { MarketSnapshot } from '../market/market-snapshots.js';
import { isPromise, type MaybePromise } from '../maybe-promise.js';
import { OriginJson, type Origin } from '../origin.js';
import { sseEvent, SseStream, type CloseReason, type QuotePair } from './sse-stream.js';

/** How an open stream is charged: one request per charge interval, and the error event a refusal closes it with. */
interface StreamCharge {
  charge: () => Promise<void>;
  errorData: (err: unknown) => string;
}

/** What the hub needs of the market: the current snapshot and a call per new one. */
export interface SnapshotFeed {
  current(): MaybePromise<MarketSnapshot>;
  onSnapshot(listener: (snap: MarketSnapshot) => void): () => void;
}

/**
 * The JSON text of one coin's `/api/v2/crypto` record, built with ORIGIN_MARK as the origin
 * (origin.ts); rejects when it cannot be quoted now.
 */
export type CoinJson = (coin: string, currency: string) => Promise<string>;

/**
 * Whether open streams may go on: asked when tokens may have changed, so a revocation or a plan
 * change reaches every open stream of this process within that delay (see `version`).
 */
export interface StreamAccess {
  /**
   * Moves whenever a token may have been revoked or moved to another plan (this process's
   * changes, or the store's change counter); undefined when that cannot be told, and then every
   * open stream is checked at every tick.
   */
  version(): number | undefined;
  /** The plan id of each live token among `tokenIds`; revoked and unknown tokens are absent. */
  livePlans(tokenIds: readonly string[]): Promise<ReadonlyMap<string, string>>;
}

export interface StreamLimits {
  maxPerToken: number;
  maxTotal: number;
  heartbeatMs: number;
  chargeMs: number;
  bufferBytes: number;
  stallMs: number;
  lifetimeMs: number;
}

export interface QuoteStreamHubDeps {
  feed: SnapshotFeed;
  coinJson: CoinJson;
  access: StreamAccess;
  clock: Clock;
  limits: StreamLimits;
  log: Logger;
  /** Distinguishes this process's event ids from another run's (or replica's). */
  epoch: string;
  /** Real-time period of the housekeeping tick (heartbeats, charges, bounds); default 1000 ms. */
  tickMs?: number;
  /** How long a pair nobody follows is still tracked, so a reconnecting client gets only what changed; default 10 min. */
  resumeWindowMs?: number;
}

/** A reserved stream slot; released once (when the stream closes, or when opening fails). */
export interface StreamLease {
  readonly tokenKey: string;
  release(): void;
}

export interface OpenStreamOptions {
  res: ServerResponse;
  /** Response headers decided before the stream opened (data source, CORS, limiter headers). */
  headers: OutgoingHttpHeaders;
  plan: Plan;
  coins: readonly string[];
  currency: string;
  /** This client's origin for icon URLs (validated; see origin.ts). */
  baseUrl: Origin;
  lastEventId: string | undefined;
  /** Counts one more request for the open stream; a rejection (QuotesError) closes it. */
  charge: () => Promise<void>;
  /** The `data` of the error event sent when a charge is refused. */
  errorData: (err: unknown) => string;
}

export interface StreamStats {
  open: number;
  /** Pairs tracked (followed, or idle within the resume window): at most coins x quote currencies. */
  pairs: number;
  /** Pairs some open stream follows: the only ones quoted at a refresh. */
  activePairs: number;
  /** Pair quotes made by fan-outs since start (a measure of the work per refresh). */
  pairQuotes: number;
  /** Token checks of open streams (batched lookups) since start. */
  accessChecks: number;
  coalesced: number;
  /** Quote events written to streams since start. */
  eventsSent: number;
  closed: Record<CloseReason, number>;
  /** Duration of the last fan-out, from the snapshot to the last stream written (ms). */
  lastFanOutMs: number;
  /** Event-loop turns the last fan-out was spread over (PAIRS_PER_TURN, STREAMS_PER_TURN). */
  lastFanOutTurns: number;
  fanOuts: number;
}

interface PairRecord extends QuotePair {
  currency: string;
  /** Snapshot version `json` was last quoted for (-1: never). */
  quotedVersion: number;
  /** Resolves once `json` is current for the version it was followed at. */
  ready: Promise<void>;
}

/**
 * Pairs quoted, and streams written, per event-loop turn of a fan-out: a refresh's work grows with
 * the pairs followed (at most coins x currencies) and the streams open (QUOTES_STREAM_MAX_TOTAL),
 * so it is cut into slices with I/O in between, and a request arriving meanwhile waits for one
 * slice (a few milliseconds), not for the whole fan-out.
 */
const PAIRS_PER_TURN = 100;
const STREAMS_PER_TURN = 100;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const OPEN_HEADERS: OutgoingHttpHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  // Proxies (nginx) must pass events through as they come.
  'x-accel-buffering': 'no',
};

/**
 * The live-price streams: one registry of open Server-Sent Events responses, fed by the market
 * snapshots. On every new snapshot each (coin, currency) pair that an open stream follows is
 * quoted once, and every stream gets the pairs that differ from what it already sent, as one
 * event whose id names the snapshot (`<epoch>.<version>`), so a client that reconnects with
 * Last-Event-ID gets exactly the coins that changed since. A real-time tick writes heartbeats,
 * charges open streams one request per charge interval, enforces the stall and lifetime bounds,
 * ends the streams of revoked tokens and of tokens moved to another plan, and asks for the current
 * snapshot, which refreshes an on-demand market while streams are open.
 *
 * What a client controls and what bounds it: pairs are keyed by what selects the data only (a coin
 * of the catalogue, a quote currency), never by a header, so there are at most coins x currencies
 * of them; the origin of each client's icon URLs is put in as its events are written. A pair
 * nobody follows costs nothing per refresh: it is kept, unquoted, for the resume window, and
 * quoted again when a stream follows it.
 */
export class QuoteStreamHub {
  /** The open streams, each with how it is charged (what the opening request's route gave); entries leave as the streams close. */
  private readonly streams = new Map<SseStream, StreamCharge>();
  private readonly perToken = new Map<string, number>();
  private reserved = 0;
  private readonly pairs = new Map<string, PairRecord>();
  /** The pairs with subscribers (the ones a fan-out quotes). */
  private readonly active = new Set<PairRecord>();
  private checkingAccess = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribe: () => void;
  private latestVersion = 0;
  private fanning = false;
  private again = false;
  private shuttingDown = false;
  private readonly counters: StreamStats = {
    open: 0,
    pairs: 0,
    activePairs: 0,
    pairQuotes: 0,
    accessChecks: 0,
    coalesced: 0,
    eventsSent: 0,
    closed: { client: 0, stalled: 0, lifetime: 0, 'charge-refused': 0, revoked: 0, 'plan-changed': 0, shutdown: 0 },
    lastFanOutMs: 0,
    lastFanOutTurns: 0,
    fanOuts: 0,
  };

  constructor(private readonly deps: QuoteStreamHubDeps) {
    this.unsubscribe = deps.feed.onSnapshot((snap) => this.onSnapshot(snap));
  }

  stats(): StreamStats {
    let coalesced = this.counters.coalesced;
    let eventsSent = this.counters.eventsSent;
    for (const s of this.streams.keys()) {
      coalesced += s.coalesced;
      eventsSent += s.eventsSent;
    }
    return { ...this.counters, closed: { ...this.counters.closed }, open: this.streams.size, pairs: this.pairs.size, activePairs: this.active.size, coalesced, eventsSent };
  }

  /** Unsent bytes of every open stream (tests and the bench look at the bound). */
  bufferedBytes(): number[] {
    return [...this.streams.keys()].map((s) => s.buffered());
  }

  /**
   * Takes a slot for a token, or refuses: 503 STREAMS_FULL past the server's cap, 429
   * STREAM_LIMIT past the token's. Synchronous, so concurrent opens cannot both pass.
   */
  reserve(tokenKey: string): StreamLease {
    const { maxTotal, maxPerToken } = this.deps.limits;
    if (this.shuttingDown || this.reserved >= maxTotal) throw new QuotesError('STREAMS_FULL', { retryAfterSeconds: 5 });
    const mine = this.perToken.get(tokenKey) ?? 0;
    if (mine >= maxPerToken) throw new QuotesError('STREAM_LIMIT', { limit: maxPerToken });
    this.perToken.set(tokenKey, mine + 1);
    this.reserved++;
    let released = false;
    return {
      tokenKey,
      release: () => {
        if (released) return;
        released = true;
        this.reserved--;
        const n = (this.perToken.get(tokenKey) ?? 1) - 1;
        if (n <= 0) this.perToken.delete(tokenKey);
        else this.perToken.set(tokenKey, n);
      },
    };
  }

  /** Streams open (or being opened) for a token. */
  openFor(tokenKey: string): number {
    return this.perToken.get(tokenKey) ?? 0;
  }

  /**
   * Writes the head and the current state (or, with a Last-Event-ID of this epoch, only what
   * changed since) and keeps the response open. The lease is released when the stream closes,
   * or here when the client left while it was being opened.
   */
  async open(lease: StreamLease, o: OpenStreamOptions): Promise<void> {
    let pairs: PairRecord[] = [];
    try {
      const snap = await this.deps.feed.current();
      this.latestVersion = Math.max(this.latestVersion, snap.version);
      pairs = o.coins.map((c) => this.follow(c, o.currency));
      await Promise.all(pairs.map((p) => p.ready));
    } catch (err) {
      for (const p of pairs) this.unfollow(p);
      lease.release();
      throw err;
    }
    const { res } = o;
    if (res.destroyed || res.writableEnded || this.shuttingDown) {
      for (const p of pairs) this.unfollow(p);
      lease.release();
      if (!res.destroyed) res.destroy();
      return;
    }
    const now = this.deps.clock.now();
    const { limits } = this.deps;
    const stream = new SseStream(
      res,
      lease.tokenKey,
      o.plan.id,
      o.baseUrl,
      pairs,
      { bufferBytes: limits.bufferBytes, stallMs: limits.stallMs },
      { now, heartbeatMs: limits.heartbeatMs, chargeMs: limits.chargeMs, lifetimeMs: limits.lifetimeMs },
      (s, reason) => {
        this.streams.delete(s);
        for (const p of pairs) this.unfollow(p);
        this.counters.closed[reason]++;
        this.counters.coalesced += s.coalesced;
        this.counters.eventsSent += s.eventsSent;
        lease.release();
      },
    );
    this.streams.set(stream, { charge: o.charge, errorData: o.errorData });
    res.socket?.setNoDelay(true);
    // The head, the retry line and the first event leave in one write (one syscall, one packet).
    res.cork();
    res.writeHead(200, { ...o.headers, ...OPEN_HEADERS });
    // Reconnect after 3 s when the connection drops (EventSource's default varies by browser).
    stream.writeRaw('retry: 3000\n\n');
    const since = this.resumeVersion(o.lastEventId);
    if (since !== undefined) {
      for (const p of pairs) if (p.json !== null && p.trackedSince <= since && p.changedVersion <= since) stream.assumeKnown(p.coin, p.json);
    }
    const version = this.latestVersion;
    stream.update(this.eventId(version), new Date(now).toISOString(), now);
    res.uncork();
    this.startTimer();
  }

  /** The snapshot version a Last-Event-ID of this epoch names, else undefined (send everything). */
  private resumeVersion(lastEventId: string | undefined): number | undefined {
    if (lastEventId === undefined || lastEventId.length > 100) return undefined;
    const dot = lastEventId.lastIndexOf('.');
    if (dot < 0 || lastEventId.slice(0, dot) !== this.deps.epoch) return undefined;
    const v = Number(lastEventId.slice(dot + 1));
    return Number.isSafeInteger(v) && v >= 0 && v <= this.latestVersion ? v : undefined;
  }

  private eventId(version: number): string {
    return `${this.deps.epoch}.${version}`;
  }

  /**
   * A stream follows a pair: created on first use; a pair that was idle is quoted again (it was
   * not while nobody followed it), keeping its change version when its record is the same.
   */
  private follow(coin: string, currency: string): PairRecord {
    const key = `${coin}|${currency}`;
    let p = this.pairs.get(key);
    if (p === undefined) {
      p = {
        key,
        coin,
        currency,
        json: null,
        changedVersion: this.latestVersion,
        trackedSince: this.latestVersion,
        subscribers: 0,
        idleSince: 0,
        quotedVersion: -1,
        ready: Promise.resolve(),
      };
      this.pairs.set(key, p);
    }
    p.subscribers++;
    if (p.subscribers === 1) {
      this.active.add(p);
      if (p.quotedVersion < this.latestVersion || p.json === null) p.ready = this.quote(p, this.latestVersion);
    }
    return p;
  }

  private unfollow(p: PairRecord): void {
    p.subscribers--;
    if (p.subscribers <= 0) {
      p.idleSince = this.deps.clock.now();
      this.active.delete(p);
    }
  }

  /** Quotes a pair for snapshot `version`; a result for an older version than the last applied is dropped. */
  private async quote(p: PairRecord, version: number): Promise<void> {
    let j: string | null;
    try {
      j = await this.deps.coinJson(p.coin, p.currency);
    } catch {
      j = null;
    }
    if (version < p.quotedVersion) return;
    p.quotedVersion = version;
    if (j !== (p.json?.text ?? null)) {
      p.json = j === null ? null : new OriginJson(j);
      p.changedVersion = version;
    }
  }

  private onSnapshot(snap: MarketSnapshot): void {
    this.latestVersion = Math.max(this.latestVersion, snap.version);
    if (this.active.size === 0) return;
    if (this.fanning) {
      this.again = true;
      return;
    }
    void this.fanOut();
  }

  /** One fan-out at a time; snapshots arriving meanwhile are folded into one more round. */
  private async fanOut(): Promise<void> {
    this.fanning = true;
    try {
      do {
        this.again = false;
        await this.fanOnce(this.latestVersion);
      } while (this.again);
    } catch (err) {
      this.deps.log.error({ err }, 'stream fan-out failed');
    } finally {
      this.fanning = false;
    }
  }

  private async fanOnce(version: number): Promise<void> {
    const started = performance.now();
    // Only the pairs open streams follow: an idle pair is quoted again when it is followed again.
    const list = [...this.active];
    this.counters.pairQuotes += list.length;
    let turns = 1;
    for (let i = 0; i < list.length; i += PAIRS_PER_TURN) {
      if (i > 0) {
        await nextTurn();
        turns++;
      }
      await Promise.all(list.slice(i, i + PAIRS_PER_TURN).map((p) => this.quote(p, version)));
    }
    const now = this.deps.clock.now();
    const id = this.eventId(version);
    const at = new Date(now).toISOString();
    const streams = [...this.streams.keys()];
    for (let i = 0; i < streams.length; i += STREAMS_PER_TURN) {
      if (i > 0) {
        await nextTurn();
        turns++;
      }
      for (let j = i; j < Math.min(streams.length, i + STREAMS_PER_TURN); j++) streams[j]!.update(id, at, now);
    }
    this.counters.lastFanOutMs = performance.now() - started;
    this.counters.lastFanOutTurns = turns;
    this.counters.fanOuts++;
  }

  private startTimer(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.deps.tickMs ?? 1000);
    this.timer.unref();
  }

  private tick(): void {
    const now = this.deps.clock.now();
    const { limits } = this.deps;
    if (this.streams.size > 0) {
      // Asking is what keeps an on-demand market refreshing while streams are open.
      const asked = this.deps.feed.current();
      if (isPromise(asked)) asked.catch(() => undefined);
    }
    for (const s of [...this.streams.keys()]) {
      if (s.stalled(now)) {
        s.close('stalled');
        continue;
      }
      if (now >= s.closeAt) {
        s.close('lifetime');
        continue;
      }
      s.flush(now);
      if (now >= s.nextHeartbeatAt) {
        s.writeRaw(`: heartbeat ${new Date(now).toISOString()}\n\n`);
        s.nextHeartbeatAt = now + limits.heartbeatMs;
      }
      if (now >= s.nextChargeAt && !s.charging) this.charge(s, now);
    }
    this.checkAccess();
    const expiry = this.deps.resumeWindowMs ?? 600_000;
    for (const [key, p] of this.pairs) if (p.subscribers <= 0 && now - p.idleSince >= expiry) this.pairs.delete(key);
    if (this.streams.size === 0 && this.pairs.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * Ends the streams whose token was revoked (or is gone) or moved to another plan since they
   * were last confirmed: one batched lookup for the streams not confirmed at the current token
   * version (new streams, and all of them after a change), one lookup at a time. The client's
   * reconnection then goes through every opening check again (401 for a revoked token; the new
   * plan's limits, coins and charges), so an open stream never outlives what a new request would
   * be refused.
   */
  private checkAccess(): void {
    if (this.checkingAccess || this.streams.size === 0) return;
    const version = this.deps.access.version();
    const due: SseStream[] = [];
    for (const s of this.streams.keys()) if (version === undefined || s.accessVersion !== version) due.push(s);
    if (due.length === 0) return;
    this.checkingAccess = true;
    this.counters.accessChecks++;
    for (const s of due) s.accessVersion = version ?? NaN;
    this.deps.access
      .livePlans([...new Set(due.map((s) => s.tokenKey))])
      .then(
        (plans) => {
          for (const s of due) {
            if (s.closed) continue;
            const planId = plans.get(s.tokenKey);
            if (planId === undefined) s.close('revoked', ': the token was revoked; reconnecting is refused (401)\n\n');
            else if (planId !== s.planId) s.close('plan-changed', `: the token moved to plan ${planId}; reconnect to continue under it\n\n`);
          }
        },
        (err: unknown) => {
          // Not confirmed: asked again at the next tick.
          for (const s of due) s.accessVersion = NaN;
          this.deps.log.warn({ err }, 'checking the tokens of open streams failed; will retry');
        },
      )
      .finally(() => {
        this.checkingAccess = false;
      });
  }

  private charge(s: SseStream, now: number): void {
    const c = this.streams.get(s);
    if (c === undefined) return;
    s.charging = true;
    s.nextChargeAt = now + this.deps.limits.chargeMs;
    c.charge().then(
      () => {
        s.charging = false;
      },
      (err: unknown) => {
        s.charging = false;
        s.close('charge-refused', sseEvent('error', c.errorData(err)));
      },
    );
  }

  /** Ends every stream (graceful shutdown) and refuses new ones. */
  closeAll(): void {
    this.shuttingDown = true;
    for (const s of [...this.streams.keys()]) s.close('shutdown');
    this.unsubscribe();
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
