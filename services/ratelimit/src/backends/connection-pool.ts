// A fixed pool of lean RESP connections to one Redis endpoint, with the seed's on-empty behaviours.
//
// The connections pipeline, so "a connection is in use" does not mean what it means for a
// one-request-per-connection pool. Here a connection is *busy* when `maxPendingPerConnection`
// callers already wait for its replies (default 64): a healthy Redis answers a pipeline in well
// under a millisecond, so a full connection means Redis or the network is slow and piling more
// onto the same socket only deepens the queue. The pool is *exhausted* when every ready connection
// is busy. Then KVSTORE_POOL_ON_EMPTY_BEHAVIOR decides:
//   WAIT    the call waits for a free slot, at most KVSTORE_TIMEOUT from the moment it was made;
//   ERROR   the call waits at most KVSTORE_POOL_ON_EMPTY_WAIT_DURATION, then fails with StoreError;
//   CREATE  the call waits at most KVSTORE_POOL_ON_EMPTY_WAIT_DURATION, then an extra connection is
//           opened for it (and later waiters); extra connections close once they are idle.
// While no connection is ready at all, calls queue on a connection that is connecting (bounded
// by its timeout) or fail at once when every connection waits to reconnect.
import { type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { StoreError, mathRandom, type Counter, type Gauge, type RandomSource, type StatsStore } from '@rls/engine';
import { encodeHandshake, HandshakeReplies, type HandshakeCommand } from './redis-commands.js';
import { RespConnection, type ConnectionEvents, type ReplyHandler, type RespEndpoint } from './resp-connection.js';
import type { RespReply } from './resp-parser.js';

export type OnEmptyBehavior = 'CREATE' | 'ERROR' | 'WAIT';

/** The subset of the pino logger the stores use. */
export interface StoreLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ConnectionPoolOptions {
  endpoint: RespEndpoint;
  /** Text naming the endpoint in logs and errors (never carries credentials). */
  label: string;
  size: number;
  timeoutMs: number;
  /** Commands sent on every new connection before PING (AUTH, READONLY...). */
  handshake?: readonly HandshakeCommand[] | undefined;
  /** Checks the handshake replies (the last one answers PING); returns why the connection is unusable. */
  validateHandshake?: ((replies: readonly RespReply[]) => string | undefined) | undefined;
  onEmpty?: OnEmptyBehavior | undefined;
  onEmptyWaitMs?: number | undefined;
  maxPendingPerConnection?: number | undefined;
  pipelineWindowMs?: number | undefined;
  tls?: TlsConnectionOptions | undefined;
  stats?: StatsStore | undefined;
  statsPrefix?: string | undefined;
  logger?: StoreLogger | undefined;
  reconnectMinMs?: number | undefined;
  reconnectMaxMs?: number | undefined;
  random?: RandomSource | undefined;
  now?: (() => number) | undefined;
  /** Told about every failed or refused connection (sentinel and cluster use it to re-discover). */
  onConnectionError?: ((err: StoreError) => void) | undefined;
}

interface Waiter {
  text: string;
  handler: ReplyHandler;
  since: number;
}

export const DEFAULT_MAX_PENDING_PER_CONNECTION = 64;

export class ConnectionPool {
  private readonly conns: RespConnection[] = [];
  private readonly extra = new Set<RespConnection>();
  private readyCount = 0;
  private current: RespConnection | undefined;
  private rr = 0;
  private closed = false;
  private readonly listeners: ((connected: boolean) => void)[] = [];
  private waiters: Waiter[] = [];
  private waiterHead = 0;
  private waitTimer: NodeJS.Timeout | undefined;
  private readonly maxPending: number;
  private readonly onEmpty: OnEmptyBehavior;
  private readonly onEmptyWaitMs: number;
  private readonly now: () => number;
  private readonly cxActive: Gauge | undefined;
  private readonly cxTotal: Counter | undefined;
  private readonly cxLocalClose: Counter | undefined;
  private readonly events: ConnectionEvents;
  private endpoint: RespEndpoint;
  private readonly waitBound = (): void => this.onWaitTimer();

  constructor(private readonly opts: ConnectionPoolOptions) {
    if (!Number.isInteger(opts.size) || opts.size < 1) throw new StoreError(`redis pool size must be >= 1, got ${opts.size}`);
    if (!(opts.timeoutMs > 0)) throw new StoreError(`redis timeout must be > 0 ms, got ${opts.timeoutMs}`);
    this.endpoint = opts.endpoint;
    this.maxPending = opts.maxPendingPerConnection ?? DEFAULT_MAX_PENDING_PER_CONNECTION;
    this.onEmpty = opts.onEmpty ?? 'WAIT';
    this.onEmptyWaitMs = opts.onEmptyWaitMs ?? 1000;
    this.now = opts.now ?? Date.now;
    const prefix = opts.statsPrefix ?? 'ratelimit.redis_pool';
    this.cxActive = opts.stats?.gauge(`${prefix}.cx_active`);
    this.cxTotal = opts.stats?.counter(`${prefix}.cx_total`);
    this.cxLocalClose = opts.stats?.counter(`${prefix}.cx_local_close`);
    this.events = {
      onReady: (conn) => {
        this.readyCount++;
        this.cxTotal?.inc();
        // add, not set: the pools of a cluster share one gauge.
        this.cxActive?.add(1);
        if (this.readyCount === 1) {
          opts.logger?.info({ url: opts.label }, 'redis connected');
          this.emit(true);
        }
        this.drainWaiters(conn);
      },
      onDown: (_conn, err) => {
        this.readyCount--;
        this.cxActive?.add(-1);
        if (this.readyCount === 0 && !this.closed) {
          opts.logger?.warn({ url: opts.label, err: err.message }, 'redis connection lost');
          this.emit(false);
        }
      },
      onLocalClose: () => this.cxLocalClose?.inc(),
      onFlush: (conn) => {
        if (this.current === conn) this.current = undefined;
      },
      onSettled: (conn) => {
        if (this.waiterHead < this.waiters.length) this.drainWaiters(conn);
        else if (conn.pending === 0 && this.extra.has(conn)) this.retireExtra(conn);
      },
      onError: (_conn, err) => opts.onConnectionError?.(err),
    };
    for (let i = 0; i < opts.size; i++) this.conns.push(this.newConnection());
    for (const c of this.conns) c.connect();
  }

  /** Queues commands whose replies `handler` consumes; failures reach `handler.fail`, never a throw. */
  send(text: string, handler: ReplyHandler): void {
    if (this.closed) {
      handler.fail(new StoreError('redis store closed'));
      return;
    }
    const cur = this.current;
    if (cur !== undefined && cur.state === 'ready' && cur.load < this.maxPending && this.waiterHead === this.waiters.length) {
      cur.send(text, handler);
      return;
    }
    const conn = this.pick();
    if (conn === 'exhausted') {
      this.waiters.push({ text, handler, since: this.now() });
      if (this.waitTimer === undefined) this.armWaitTimer();
      return;
    }
    if (conn === undefined) {
      handler.fail(this.unavailable());
      return;
    }
    conn.send(text, handler);
  }

  isConnected(): boolean {
    return this.readyCount > 0;
  }

  onConnectionChange(listener: (connected: boolean) => void): void {
    this.listeners.push(listener);
  }

  removeConnectionListener(listener: (connected: boolean) => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  /** Ready connections (gauge value). */
  get activeConnections(): number {
    return this.readyCount;
  }

  /** Extra connections opened by CREATE that are still open. */
  get extraConnections(): number {
    return this.extra.size;
  }

  /** Calls waiting for a free connection. */
  get waiting(): number {
    return this.waiters.length - this.waiterHead;
  }

  /** The last connection error, for messages while down. */
  get lastError(): StoreError | undefined {
    return this.conns.find((c) => c.lastError !== undefined)?.lastError;
  }

  /** Repoints every connection (sentinel failover); in-flight calls on the old endpoint fail. */
  setEndpoint(ep: RespEndpoint, why: string): void {
    this.endpoint = ep;
    for (const c of [...this.conns, ...this.extra]) c.setEndpoint(ep, why);
  }

  /** Resolves once a connection is ready; rejects with StoreError after `timeoutMs`. */
  async waitUntilConnected(timeoutMs: number): Promise<void> {
    if (this.isConnected()) return;
    await new Promise<void>((resolve, reject) => {
      const listener = (up: boolean): void => {
        if (!up) return;
        clearTimeout(timer);
        this.removeConnectionListener(listener);
        resolve();
      };
      const timer = setTimeout(() => {
        this.removeConnectionListener(listener);
        reject(this.unavailable(`redis not connected after ${timeoutMs} ms`));
      }, timeoutMs);
      this.listeners.push(listener);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.waitTimer !== undefined) clearTimeout(this.waitTimer);
    this.failWaiters(new StoreError('redis store closed'));
    const wasUp = this.readyCount > 0;
    await Promise.all([...this.conns, ...this.extra].map((c) => c.close()));
    this.cxActive?.add(-this.readyCount);
    this.readyCount = 0;
    if (wasUp) this.emit(false);
  }

  unavailable(prefix = 'redis unavailable'): StoreError {
    if (this.closed) return new StoreError('redis store closed');
    const cause = this.lastError;
    return new StoreError(cause !== undefined ? `${prefix}: ${cause.message}` : prefix, cause !== undefined ? { cause } : undefined);
  }

  private newConnection(): RespConnection {
    const o = this.opts;
    const pre = o.handshake ?? [];
    const commands = encodeHandshake(pre);
    const conn: RespConnection = new RespConnection({
      endpoint: this.endpoint,
      timeoutMs: o.timeoutMs,
      handshake: () => ({
        commands,
        handler: new HandshakeReplies(
          pre.length + 1,
          (err) => {
            if (err === undefined) conn.markReady();
            else conn.rejectHandshake(err);
          },
          o.validateHandshake,
        ),
      }),
      backoffMinMs: o.reconnectMinMs ?? 50,
      backoffMaxMs: o.reconnectMaxMs ?? 2000,
      random: o.random ?? mathRandom,
      events: this.events,
      now: this.now,
      tls: o.tls,
      flushDelayMs: o.pipelineWindowMs ?? 0,
    });
    return conn;
  }

  /** A ready connection with room; 'exhausted' when every ready one is busy; else a connecting one or undefined. */
  private pick(): RespConnection | 'exhausted' | undefined {
    if (this.waiterHead < this.waiters.length) return 'exhausted';
    const n = this.conns.length;
    let connecting: RespConnection | undefined;
    let anyReady = false;
    for (let i = 0; i < n; i++) {
      const c = this.conns[(this.rr + i) % n] as RespConnection;
      if (c.state === 'ready') {
        anyReady = true;
        if (c.load >= this.maxPending) continue;
        this.rr = (this.rr + i + 1) % n;
        this.current = c;
        return c;
      }
      if (c.state === 'connecting' && connecting === undefined) connecting = c;
    }
    for (const c of this.extra) {
      if ((c.state === 'ready' || c.state === 'connecting') && c.load < this.maxPending) return c;
    }
    if (anyReady) return 'exhausted';
    return connecting;
  }

  /** Hands queued calls to `conn` while it has room. */
  private drainWaiters(conn: RespConnection): void {
    while (this.waiterHead < this.waiters.length && conn.state === 'ready' && conn.load < this.maxPending) {
      const w = this.waiters[this.waiterHead] as Waiter;
      this.waiters[this.waiterHead++] = undefined as unknown as Waiter;
      // WAIT bounds the whole call by the timeout from when it was made.
      conn.send(w.text, w.handler, this.onEmpty === 'WAIT' ? w.since + this.opts.timeoutMs : undefined);
    }
    this.compactWaiters();
  }

  private compactWaiters(): void {
    if (this.waiterHead === this.waiters.length) {
      this.waiters = [];
      this.waiterHead = 0;
      if (this.waitTimer !== undefined) {
        clearTimeout(this.waitTimer);
        this.waitTimer = undefined;
      }
    }
  }

  private get waitLimitMs(): number {
    return this.onEmpty === 'WAIT' ? this.opts.timeoutMs : this.onEmptyWaitMs;
  }

  // Waiters share one wait duration, so they expire in arrival order: one timer on the oldest.
  private armWaitTimer(): void {
    const w = this.waiters[this.waiterHead];
    if (w === undefined) {
      this.waitTimer = undefined;
      return;
    }
    this.waitTimer = setTimeout(this.waitBound, Math.max(0, w.since + this.waitLimitMs - this.now()));
    this.waitTimer.unref();
  }

  private onWaitTimer(): void {
    this.waitTimer = undefined;
    const now = this.now();
    const limit = this.waitLimitMs;
    while (this.waiterHead < this.waiters.length) {
      const w = this.waiters[this.waiterHead] as Waiter;
      if (w.since + limit > now) break;
      this.waiters[this.waiterHead++] = undefined as unknown as Waiter;
      if (this.onEmpty === 'CREATE') {
        this.extraConnection().send(w.text, w.handler);
      } else {
        const what = this.onEmpty === 'WAIT' ? `within the ${limit} ms timeout` : `after waiting ${limit} ms (KVSTORE_POOL_ON_EMPTY_BEHAVIOR=ERROR)`;
        w.handler.fail(new StoreError(`redis pool exhausted: no connection free ${what}`));
      }
    }
    this.compactWaiters();
    if (this.waitTimer === undefined && this.waiterHead < this.waiters.length) this.armWaitTimer();
  }

  /** An extra connection with room, opening one when none has. */
  private extraConnection(): RespConnection {
    for (const c of this.extra) {
      if (c.state !== 'waiting' && c.state !== 'closed' && c.load < this.maxPending) return c;
    }
    const c = this.newConnection();
    this.extra.add(c);
    this.opts.logger?.info({ url: this.opts.label, extra: this.extra.size }, 'redis pool exhausted; opening an extra connection');
    c.connect();
    return c;
  }

  private retireExtra(conn: RespConnection): void {
    this.extra.delete(conn);
    // Out of service from now on, whatever the socket's close takes.
    if (conn.state === 'ready') {
      this.readyCount--;
      this.cxActive?.add(-1);
    }
    void conn.close();
  }

  private failWaiters(err: StoreError): void {
    const ws = this.waiters;
    const from = this.waiterHead;
    this.waiters = [];
    this.waiterHead = 0;
    for (let i = from; i < ws.length; i++) ws[i]?.handler.fail(err);
  }

  private emit(connected: boolean): void {
    for (const l of [...this.listeners]) {
      try {
        l(connected);
      } catch (err) {
        this.opts.logger?.warn({ err: (err as Error).message }, 'connection listener failed');
      }
    }
  }
}
