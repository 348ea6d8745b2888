// The Redis counter store for KVSTORE_TYPE=sentinel, on the lean RESP client. The master's address
// comes from the sentinels (SENTINEL get-master-addr-by-name, asked in turn until one answers) and
// is followed without restart in two ways:
//   - a subscription to `+switch-master` on one sentinel (rotating to the next when it fails)
//     repoints the pool the moment the sentinels elect a new master;
//   - every failed or refused data connection triggers a (throttled) re-query, which covers
//     events missed while the subscription was down.
// Each data connection checks ROLE in its handshake and refuses to serve from a replica (an old
// master that came back is demoted), so counters are never written to the wrong node. Calls keep
// the single-mode bounds: they fail within KVSTORE_TIMEOUT while no master is reachable.
//
// KVSTORE_SENTINEL_AUTH authenticates to the sentinels only; KVSTORE_AUTH to the data nodes. TLS
// settings apply to both. "Connected" means a verified connection to the current master is up.
import { StoreError, mathRandom, type Algorithm, type CounterOp, type CounterStore, type OpResult } from '@rls/engine';
import type { Secret } from '@rls/settings';
import { ConnectionPool } from './connection-pool.js';
import { authHandshake, deleteVia, executeVia, getVia, incrementVia, parseRedisEndpoint, poolOptionsFrom, REDIS_ALGORITHMS, sendKeyedVia, type RedisStoreOptions } from './redis-store.js';
import { encodeCommand, encodeHandshake, HandshakeReplies, RawReplies, type HandshakeCommand, type KeyedCommand, type KeyedCommandSender } from './redis-commands.js';
import { ExpiryMemo } from './expiry-memo.js';
import { RespConnection, type ReplyHandler, type RespEndpoint } from './resp-connection.js';
import { RespErrorReply, type RespReply } from './resp-parser.js';
import { SENTINEL_URL_ERROR } from './kvstore-settings.js';

export type SentinelStoreOptions = Omit<RedisStoreOptions, 'url' | 'socketType'> & {
  /** KVSTORE_URL: `<master name>,<sentinel host:port>,...`. */
  url: string;
  /** KVSTORE_SENTINEL_AUTH. */
  sentinelAuth?: Secret | undefined;
  /** Least time between two master look-ups triggered by connection errors, ms (default 250). */
  requeryMinIntervalMs?: number | undefined;
};

/** Splits `<master>,<host:port>,...`; throws StoreError with upstream's message when too short. */
export function parseSentinelUrl(url: string): { masterName: string; sentinels: string[] } {
  const parts = url.split(',').map((x) => x.trim());
  if (parts.length < 2 || parts[0] === '') throw new StoreError(SENTINEL_URL_ERROR);
  const sentinels = parts.slice(1);
  for (const s of sentinels) parseRedisEndpoint(s, 'tcp');
  return { masterName: parts[0] as string, sentinels };
}

const sameEndpoint = (a: RespEndpoint, b: RespEndpoint): boolean =>
  a.kind === 'tcp' && b.kind === 'tcp' ? a.host === b.host && a.port === b.port : a.kind === 'unix' && b.kind === 'unix' && a.path === b.path;

const show = (ep: RespEndpoint): string => (ep.kind === 'tcp' ? `${ep.host}:${ep.port}` : ep.path);

/** Consumes the replies of a SUBSCRIBE forever, handing each `message` payload on. */
class SubscriptionHandler implements ReplyHandler {
  deadline = Infinity;
  constructor(private readonly onMessage: (channel: string, payload: string) => void) {}
  accept(reply: RespReply): boolean {
    if (Array.isArray(reply) && reply[0] === 'message' && typeof reply[1] === 'string' && typeof reply[2] === 'string') this.onMessage(reply[1], reply[2]);
    return false;
  }
  fail(): void {
    // The connection reconnects (to the next sentinel) and subscribes again on ready.
  }
}

export class SentinelStore implements CounterStore, KeyedCommandSender {
  readonly kind = 'redis';
  readonly algorithms: ReadonlySet<Algorithm> = REDIS_ALGORITHMS;
  readonly masterName: string;
  private readonly sentinels: RespEndpoint[];
  private readonly queryPools: ConnectionPool[];
  private readonly watcher: RespConnection;
  private pool: ConnectionPool | undefined;
  private master: RespEndpoint | undefined;
  private closed = false;
  private querying: Promise<void> | undefined;
  private requeryTimer: NodeJS.Timeout | undefined;
  private lastQuery = 0;
  private lastQueryError: Error | undefined;
  private readonly listeners: ((connected: boolean) => void)[] = [];
  private masterWaiters: (() => void)[] = [];
  private nextSentinel = 0;
  /** `expireOnCreate` keys given their TTL on the current master; forgotten on a switch or when connections change. */
  private readonly expiry = new ExpiryMemo();

  constructor(private readonly opts: SentinelStoreOptions) {
    const { masterName, sentinels } = parseSentinelUrl(opts.url);
    this.masterName = masterName;
    this.sentinels = sentinels.map((s) => parseRedisEndpoint(s, 'tcp'));
    const sentinelHandshake = ((): HandshakeCommand[] => {
      const a = authHandshake(opts.sentinelAuth);
      return a !== undefined ? [a] : [];
    })();
    // One small pool per sentinel for look-ups: a down sentinel fails fast and the next is asked.
    this.queryPools = this.sentinels.map(
      (ep) =>
        new ConnectionPool({
          endpoint: ep,
          label: `sentinel ${show(ep)}`,
          size: 1,
          timeoutMs: opts.timeoutMs,
          handshake: sentinelHandshake,
          tls: opts.tls,
          random: opts.random,
          reconnectMinMs: opts.reconnectMinMs,
          reconnectMaxMs: opts.reconnectMaxMs,
        }),
    );
    const hsBytes = encodeHandshake(sentinelHandshake);
    const watcher: RespConnection = new RespConnection({
      endpoint: this.sentinels[0] as RespEndpoint,
      nextEndpoint: () => this.sentinels[this.nextSentinel++ % this.sentinels.length] as RespEndpoint,
      timeoutMs: opts.timeoutMs,
      handshake: () => ({
        commands: hsBytes,
        handler: new HandshakeReplies(sentinelHandshake.length + 1, (err) => (err === undefined ? watcher.markReady() : watcher.rejectHandshake(err))),
      }),
      backoffMinMs: opts.reconnectMinMs ?? 50,
      backoffMaxMs: opts.reconnectMaxMs ?? 2000,
      random: opts.random ?? mathRandom,
      now: Date.now,
      tls: opts.tls,
      events: {
        onReady: (conn) => {
          conn.send(encodeCommand(['SUBSCRIBE', '+switch-master']), new SubscriptionHandler((_ch, payload) => this.onSwitchMaster(payload)), Infinity);
          // Events may have been missed while no subscription was up.
          this.requery();
        },
        onDown: () => undefined,
        onLocalClose: () => undefined,
        onFlush: () => undefined,
      },
    });
    this.watcher = watcher;
    watcher.connect();
    void this.query();
  }

  increment(ops: readonly CounterOp[]): Promise<number[]> {
    if (ops.length === 0) return Promise.resolve([]);
    const pool = this.pool;
    if (pool !== undefined) return incrementVia(pool, ops, this.expiry);
    return this.waitForMaster(this.opts.timeoutMs).then((p) => incrementVia(p, ops, this.expiry));
  }

  /** As in single mode; a master that took over has no cached script yet: the NOSCRIPT fallback loads it. */
  execute(ops: readonly CounterOp[]): Promise<OpResult[]> {
    if (ops.length === 0) return Promise.resolve([]);
    const pool = this.pool;
    if (pool !== undefined) return executeVia(pool, ops);
    return this.waitForMaster(this.opts.timeoutMs).then((p) => executeVia(p, ops));
  }

  get(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return Promise.resolve([]);
    const pool = this.pool;
    if (pool !== undefined) return getVia(pool, keys);
    return this.waitForMaster(this.opts.timeoutMs).then((p) => getVia(p, keys));
  }

  delete(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return Promise.resolve();
    const pool = this.pool;
    if (pool !== undefined) return deleteVia(pool, keys);
    return this.waitForMaster(this.opts.timeoutMs).then((p) => deleteVia(p, keys));
  }

  /** KeyedCommandSender: one pipeline to the current master (a master that took over serves every key). */
  sendKeyed(commands: readonly KeyedCommand[]): Promise<RespReply[]> {
    if (commands.length === 0) return Promise.resolve([]);
    const pool = this.pool;
    if (pool !== undefined) return sendKeyedVia(pool, commands);
    return this.waitForMaster(this.opts.timeoutMs).then((p) => sendKeyedVia(p, commands));
  }

  isConnected(): boolean {
    return this.pool?.isConnected() === true;
  }

  onConnectionChange(listener: (connected: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** The master the store writes to, `host:port` (undefined before the first answer). */
  currentMaster(): string | undefined {
    return this.master !== undefined ? show(this.master) : undefined;
  }

  /** Resolves once a verified master connection is up; rejects with StoreError after `timeoutMs`. */
  async waitUntilConnected(timeoutMs: number): Promise<void> {
    const t0 = Date.now();
    const pool = await this.waitForMaster(timeoutMs);
    await pool.waitUntilConnected(Math.max(1, timeoutMs - (Date.now() - t0)));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.requeryTimer !== undefined) clearTimeout(this.requeryTimer);
    for (const w of this.masterWaiters) w();
    this.masterWaiters = [];
    await Promise.all([this.watcher.close(), ...this.queryPools.map((p) => p.close()), this.pool?.close()]);
  }

  private waitForMaster(timeoutMs: number): Promise<ConnectionPool> {
    if (this.closed) return Promise.reject(new StoreError('redis store closed'));
    if (this.pool !== undefined) return Promise.resolve(this.pool);
    return new Promise<ConnectionPool>((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.masterWaiters.indexOf(done);
        if (i >= 0) this.masterWaiters.splice(i, 1);
        const why = this.lastQueryError?.message ?? 'no sentinel answered';
        reject(new StoreError(`redis sentinel: master ${this.masterName} unknown after ${timeoutMs} ms: ${why}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        if (this.pool === undefined) reject(new StoreError('redis store closed'));
        else resolve(this.pool);
      };
      this.masterWaiters.push(done);
    });
  }

  private onSwitchMaster(payload: string): void {
    // `<master name> <old ip> <old port> <new ip> <new port>`
    const f = payload.split(' ');
    if (f[0] !== this.masterName || f.length < 5) return;
    const ep = { kind: 'tcp' as const, host: f[3] as string, port: Number(f[4]) };
    this.opts.logger?.warn({ master: this.masterName, from: `${f[1]}:${f[2]}`, to: show(ep) }, 'redis sentinel: master switched');
    this.useMaster(ep);
  }

  private useMaster(ep: RespEndpoint): void {
    if (this.closed) return;
    if (this.master !== undefined && sameEndpoint(this.master, ep)) return;
    const previous = this.master;
    this.master = ep;
    if (this.pool === undefined) {
      const base = poolOptionsFrom(this.opts, ep, `${this.masterName} (${show(ep)})`);
      const pool = new ConnectionPool({
        ...base,
        handshake: [...base.handshake, ['ROLE']],
        validateHandshake: (replies) => {
          const role = replies[replies.length - 2];
          const name = Array.isArray(role) && typeof role[0] === 'string' ? role[0] : role instanceof RespErrorReply ? role.message : 'unknown';
          return name === 'master' ? undefined : `${show(this.master ?? ep)} is not the master (ROLE ${name})`;
        },
        onConnectionError: () => this.requery(),
      });
      pool.onConnectionChange((up) => {
        this.expiry.clear();
        this.emit(up);
      });
      this.pool = pool;
      this.opts.logger?.info({ master: this.masterName, address: show(ep) }, 'redis sentinel: master found');
      const ws = this.masterWaiters;
      this.masterWaiters = [];
      for (const w of ws) w();
      return;
    }
    this.opts.logger?.warn({ master: this.masterName, from: previous !== undefined ? show(previous) : undefined, to: show(ep) }, 'redis sentinel: following the new master');
    // The new master may lack TTLs the old one had not replicated yet.
    this.expiry.clear();
    this.pool.setEndpoint(ep, `redis master ${this.masterName} moved to ${show(ep)}`);
  }

  /** A throttled look-up after a connection error or a new subscription. */
  private requery(): void {
    if (this.closed || this.querying !== undefined || this.requeryTimer !== undefined) return;
    const delay = Math.max(0, this.lastQuery + (this.opts.requeryMinIntervalMs ?? 250) - Date.now());
    this.requeryTimer = setTimeout(() => {
      this.requeryTimer = undefined;
      void this.query();
    }, delay);
    this.requeryTimer.unref();
  }

  /** Asks the sentinels in turn for the master's address; installs the first answer. */
  private query(): Promise<void> {
    if (this.querying !== undefined) return this.querying;
    this.querying = (async () => {
      this.lastQuery = Date.now();
      for (const p of this.queryPools) {
        if (this.closed) return;
        try {
          const ep = await this.askMaster(p);
          this.lastQueryError = undefined;
          this.useMaster(ep);
          return;
        } catch (err) {
          this.lastQueryError = err instanceof Error ? err : new Error(String(err));
        }
      }
      this.opts.logger?.warn({ master: this.masterName, err: this.lastQueryError?.message }, 'redis sentinel: no sentinel named the master');
    })().finally(() => {
      this.querying = undefined;
      if (this.master === undefined && !this.closed) this.requery();
    });
    return this.querying;
  }

  private askMaster(p: ConnectionPool): Promise<RespEndpoint> {
    return new Promise<RespEndpoint>((resolve, reject) =>
      p.send(
        encodeCommand(['SENTINEL', 'get-master-addr-by-name', this.masterName]),
        new RawReplies(
          1,
          ([r]) => {
            if (Array.isArray(r) && typeof r[0] === 'string' && typeof r[1] === 'string') resolve({ kind: 'tcp', host: r[0], port: Number(r[1]) });
            else if (r instanceof RespErrorReply) reject(new StoreError(`sentinel: ${r.message}`));
            else reject(new StoreError(`sentinel does not know master ${this.masterName}`));
          },
          reject,
        ),
      ),
    );
  }

  private emit(up: boolean): void {
    for (const l of [...this.listeners]) {
      try {
        l(up);
      } catch (err) {
        this.opts.logger?.warn({ err: (err as Error).message }, 'connection listener failed');
      }
    }
  }
}
