// The memcached counter store (BACKEND_TYPE=mcstore). Increment first, decide on the returned
// value (unlike upstream's src/memcached/cache_impl.go, which reads, answers, then writes and so
// over-admits concurrent bursts): every key with an addend gets `incr` (atomic in memcached), then
// `add` with the expiration when the key is missing, then `incr` again when that `add` lost a race
// to another client; the answer is the value memcached returned, so concurrent requests each see
// a distinct count and a limit of N admits exactly N. Keys only read (addend 0, a sliding
// window's previous window) share one multi-key `get` per connection, in parallel with the
// increments. One round trip for an existing key, two for a new one, three on a lost race.
//
// Read-your-writes for one replica: a key always travels over the same connection (node by the
// hash ring, connection by the key hash), and the writes of a call are queued on that connection
// before the call resolves, so the next call's `get` is answered after them.
//
// Fail-open, per descriptor: a key memcached cannot take (over 250 bytes, whitespace or control
// characters) is never sent — its descriptor counts from 0 and it is logged; a node that is down
// or slow makes its keys count from 0 (logged, `ratelimit.memcache.increment{code=error}`, or
// `multiget{code=error}` for reads). Neither
// fails the request, the connection or the process.
//
// Counters saturate (counter-store.ts): a value at or past 2^53, or one that is not a number
// (memcached refuses to increment it), reads as SATURATED_COUNT and stays over every limit until
// it expires. A call's delta is capped at 2^53-1; an incr whose result wrapped past 2^64-1 or
// came within 2^60 of it reads saturated and pins the counter back to 2^63 (a `set`), so
// memcached's incr never turns a saturated counter into a small one for more than that moment.
//
// Algorithms (CounterStore.execute): sliding window is the fixed-window increment plus the
// previous window's key in the same multi-key `get` (read only, never written), so it costs
// nothing extra on the wire and is exactly as atomic as the fixed window here. Token bucket is
// not offered: GCRA must read, decide and write one key atomically, which memcached can only do
// with `gets` + `cas` — two sequential round trips on every request (the answer depends on
// whether the `cas` won), retries under contention on hot keys, and TTLs in whole seconds —
// while this store's design is one round trip with fail-open writes. Rules that choose it are
// refused when the configuration is loaded (MEMCACHED_ALGORITHMS lacks it).
//
// Expirations over 30 days are sent as absolute Unix times (memcached's rule), so month and year
// counters persist — upstream sends them relative and loses them. `close()` waits for pending
// writes (bounded by the timeout) so a graceful stop loses no hits.
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { SATURATED_COUNT, StoreError, mathRandom, saturate, type Algorithm, type Clock, type Counter, type CounterOp, type CounterStore, type OpResult, type RandomSource, type StatsStore } from '@rls/engine';
import { McConnection, type McConnectionEvents } from './memcached-connection.js';
import { encodeAdd, encodeDelete, encodeGet, encodeIncr, expirationField, GetReply, invalidKeyReason, LineReply } from './memcached-protocol.js';
import { HashRing, keyHash } from './memcached-ring.js';
import { resolveSrvTargets, type SrvLookup } from './srv.js';
import type { StoreLogger } from './redis-store.js';

export interface MemcachedStoreOptions {
  /** Static node list (MCSTORE_HOST_PORT); exclusive with `srv`. */
  servers?: readonly string[] | undefined;
  /** SRV discovery (MCSTORE_SRV, MCSTORE_SRV_REFRESH; refreshMs 0 = resolve once). */
  srv?: { name: string; refreshMs: number; lookup: SrvLookup } | undefined;
  /** Connections per node, each pipelining (MCSTORE_MAX_IDLE_CONNS). */
  connectionsPerNode: number;
  /** Bound on connect and on every reply, in ms. */
  timeoutMs: number;
  tls?: TlsOptions | undefined;
  clock: Clock;
  random?: RandomSource | undefined;
  stats?: StatsStore | undefined;
  logger?: StoreLogger | undefined;
  /** First reconnect delay in ms (doubles per failed attempt); default 50. */
  reconnectMinMs?: number | undefined;
  /** Largest reconnect delay in ms; default 2000. */
  reconnectMaxMs?: number | undefined;
}

interface McNode {
  address: string;
  conns: McConnection[];
}

/** `host:port` → host and port; IPv6 hosts in brackets. */
export function parseHostPort(text: string): { host: string; port: number } {
  const i = text.lastIndexOf(':');
  let host = i < 0 ? '' : text.slice(0, i);
  const port = Number(text.slice(i + 1));
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host === '' || !Number.isInteger(port) || port <= 0 || port > 65535) throw new StoreError(`memcached address must be host:port, got ${JSON.stringify(text)}`);
  return { host, port };
}

interface McStats {
  getOk: Counter;
  getErr: Counter;
  incrOk: Counter;
  incrMiss: Counter;
  incrErr: Counter;
  addOk: Counter;
  addErr: Counter;
  addNotStored: Counter;
  keysRequested: Counter;
  keysFound: Counter;
}

function registerStats(stats: StatsStore | undefined): McStats | undefined {
  if (stats === undefined) return undefined;
  const c = (name: string, code?: string): Counter => stats.counter(`ratelimit.memcache.${name}`, code === undefined ? undefined : { code });
  return {
    getOk: c('multiget', 'success'),
    getErr: c('multiget', 'error'),
    incrOk: c('increment', 'success'),
    incrMiss: c('increment', 'miss'),
    incrErr: c('increment', 'error'),
    addOk: c('add', 'success'),
    addErr: c('add', 'error'),
    addNotStored: c('add', 'not_stored'),
    keysRequested: c('keys_requested'),
    keysFound: c('keys_found'),
  };
}

/** Per distinct key of one call. */
interface KeyPlan {
  conn: McConnection | undefined;
  addend: number;
  expireSeconds: number;
  before: number;
  found: boolean;
}

const LOG_EVERY_MS = 5_000;

/** A counter at or past this (2^64 - 2^60) is pinned back to PIN_TEXT (2^63) so incr never wraps. */
const PIN_ABOVE = 2n ** 64n - 2n ** 60n;
const PIN_TEXT = String(2n ** 63n);

/** What this store runs (the configuration check uses it without opening a connection). */
export const MEMCACHED_ALGORITHMS: ReadonlySet<Algorithm> = new Set<Algorithm>(['fixed_window', 'sliding_window']);

/** Why memcached does not run token_bucket (the StoreError of a bucket op that reaches execute). */
export const MEMCACHED_NO_TOKEN_BUCKET =
  'memcached does not run token_bucket (it would need gets + cas: two sequential round trips per request and retries under contention); use sliding_window or a Redis store';

export class MemcachedStore implements CounterStore {
  readonly kind = 'memcached';
  readonly algorithms: ReadonlySet<Algorithm> = MEMCACHED_ALGORITHMS;
  private nodes = new Map<string, McNode>();
  private ring = new HashRing<McNode>(new Map());
  private readyCount = 0;
  private closed = false;
  private pendingWrites = 0;
  private drainWaiters: (() => void)[] = [];
  private readonly listeners: ((connected: boolean) => void)[] = [];
  private readonly stats: McStats | undefined;
  private readonly logger: StoreLogger | undefined;
  private readonly clock: Clock;
  private readonly random: RandomSource;
  private readonly events: McConnectionEvents;
  private readonly initial: Promise<void>;
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly lastLog = new Map<string, { at: number; suppressed: number }>();

  constructor(private readonly opts: MemcachedStoreOptions) {
    const hasList = opts.servers !== undefined && opts.servers.length > 0;
    if (hasList && opts.srv !== undefined) throw new StoreError('Both MCSTORE_HOST_PORT and MCSTORE_SRV are set');
    if (!hasList && opts.srv === undefined) throw new StoreError('memcached needs MCSTORE_HOST_PORT or MCSTORE_SRV');
    if (!Number.isInteger(opts.connectionsPerNode) || opts.connectionsPerNode < 1) throw new StoreError(`memcached connections per node must be >= 1, got ${opts.connectionsPerNode}`);
    if (!(opts.timeoutMs > 0)) throw new StoreError(`memcached timeout must be > 0 ms, got ${opts.timeoutMs}`);
    this.clock = opts.clock;
    this.random = opts.random ?? mathRandom;
    this.logger = opts.logger;
    this.stats = registerStats(opts.stats);
    this.events = {
      onReady: () => {
        this.readyCount++;
        if (this.readyCount === 1) {
          this.logger?.info({ nodes: [...this.nodes.keys()] }, 'memcached connected');
          this.emit(true);
        }
      },
      onDown: (conn, err) => {
        this.readyCount--;
        if (!this.closed) this.logger?.warn({ node: conn.address, err: err.message }, 'memcached connection lost');
        if (this.readyCount === 0) this.emit(false);
      },
    };
    if (hasList) {
      for (const s of opts.servers ?? []) parseHostPort(s);
      this.setServers(opts.servers ?? []);
      this.initial = Promise.resolve();
    } else {
      this.initial = this.refresh(true);
      // Callers learn of a failed first lookup through ready(); this keeps it from being unhandled.
      this.initial.catch(() => undefined);
    }
  }

  /** Resolves once the node list is known (SRV answered); rejects with `Unable to fetch servers from SRV` otherwise. */
  ready(): Promise<void> {
    return this.initial;
  }

  /** The node addresses in use, sorted. */
  servers(): string[] {
    return [...this.nodes.keys()].sort();
  }

  /** The node a key maps to (diagnostics and tests). */
  nodeFor(key: string): string | undefined {
    return this.ring.lookup(keyHash(key))?.address;
  }

  async increment(ops: readonly CounterOp[]): Promise<number[]> {
    if (this.closed) throw new StoreError('memcached store closed');
    if (ops.length === 0) return [];
    const plans = this.plan(ops);
    await this.countFirst(plans);
    const running = new Map<string, number>();
    const out = new Array<number>(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as CounterOp;
      const v = saturate((running.get(op.key) ?? (plans.get(op.key) as KeyPlan).before) + op.addend);
      running.set(op.key, v);
      out[i] = v;
    }
    return out;
  }

  /**
   * Increment first, decide on the returned value: every key with an addend is sent `incr` (then
   * `add` when missing, `incr` again when that add loses a race) and its `before` is the value
   * memcached returned minus the call's addend, so concurrent requests each see a distinct count.
   * Keys read only (addend 0, previous windows) share one multi-key `get` per connection.
   */
  private async countFirst(plans: Map<string, KeyPlan>): Promise<void> {
    const reads = new Map<string, KeyPlan>();
    const waits: Promise<void>[] = [];
    const now = this.clock.now();
    for (const [key, p] of plans) {
      if (p.conn === undefined) continue;
      if (p.addend > 0) {
        // A delta past 2^53 is sent as 2^53-1: enough to saturate, and exact on the wire.
        const delta = Math.min(p.addend, SATURATED_COUNT);
        waits.push(
          this.write(p.conn, key, delta, expirationField(p.expireSeconds, now)).then((after) => {
            // A saturated result saturates every op of the call on this key.
            p.before = after >= SATURATED_COUNT ? SATURATED_COUNT : after - p.addend;
          }),
        );
      }
      else reads.set(key, p);
    }
    if (reads.size > 0) waits.push(this.fetch(reads));
    await Promise.all(waits);
  }

  /**
   * Fixed and sliding window ops: as `increment`, with every previous-window key read in the same
   * multi-key `get` (a previous key that cannot be stored or whose node fails reads 0, fail-open
   * like the counters). Token-bucket ops are refused (MEMCACHED_NO_TOKEN_BUCKET); the
   * configuration never sends them here.
   */
  async execute(ops: readonly CounterOp[]): Promise<OpResult[]> {
    if (this.closed) throw new StoreError('memcached store closed');
    if (ops.length === 0) return [];
    for (const op of ops) if (op.bucket !== undefined) throw new StoreError(MEMCACHED_NO_TOKEN_BUCKET);
    const plans = this.plan(ops);
    for (const op of ops) {
      const prev = op.previousKey;
      if (prev !== undefined && !plans.has(prev)) plans.set(prev, { conn: this.connectionFor(prev), addend: 0, expireSeconds: 0, before: 0, found: false });
    }
    await this.countFirst(plans);
    const running = new Map<string, number>();
    const out = new Array<OpResult>(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as CounterOp;
      const value = saturate((running.get(op.key) ?? (plans.get(op.key) as KeyPlan).before) + op.addend);
      running.set(op.key, value);
      const prev = op.previousKey;
      out[i] = prev === undefined ? { value } : { value, previous: running.get(prev) ?? (plans.get(prev) as KeyPlan).before };
    }
    return out;
  }

  /** One plan per distinct key, addends summed. */
  private plan(ops: readonly CounterOp[]): Map<string, KeyPlan> {
    const plans = new Map<string, KeyPlan>();
    for (const op of ops) {
      const p = plans.get(op.key);
      if (p !== undefined) {
        p.addend += op.addend;
        continue;
      }
      plans.set(op.key, { conn: this.connectionFor(op.key), addend: op.addend, expireSeconds: op.expireSeconds, before: 0, found: false });
    }
    return plans;
  }

  async get(keys: readonly string[]): Promise<number[]> {
    if (this.closed) throw new StoreError('memcached store closed');
    const plans = new Map<string, KeyPlan>();
    for (const k of keys) if (!plans.has(k)) plans.set(k, { conn: this.connectionFor(k), addend: 0, expireSeconds: 0, before: 0, found: false });
    await this.fetch(plans);
    return keys.map((k) => (plans.get(k) as KeyPlan).before);
  }

  /**
   * Deletes the keys (an operator's reset on the debug port), each over the connection its
   * increments use, so it lands after the writes queued before it. Unlike the request path this
   * fails with StoreError when a node does not answer: the operator must learn the reset did not happen.
   */
  async delete(keys: readonly string[]): Promise<void> {
    if (this.closed) throw new StoreError('memcached store closed');
    await Promise.all(
      keys.map(
        (key) =>
          new Promise<void>((resolve, reject) => {
            const conn = this.connectionFor(key);
            if (conn === undefined) {
              resolve();
              return;
            }
            conn.send(
              encodeDelete(key),
              new LineReply((err, line) => {
                if (err !== undefined) reject(err);
                else if (line === 'DELETED' || line === 'NOT_FOUND') resolve();
                else reject(new StoreError(`memcached delete answered ${JSON.stringify(line.slice(0, 80))}`));
              }),
            );
          }),
      ),
    );
  }

  isConnected(): boolean {
    return this.readyCount > 0;
  }

  onConnectionChange(listener: (connected: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Resolves once a node answers; rejects with StoreError after `timeoutMs`. */
  async waitUntilConnected(timeoutMs: number): Promise<void> {
    await this.initial;
    if (this.isConnected()) return;
    await new Promise<void>((resolve, reject) => {
      const listener = (up: boolean): void => {
        if (!up) return;
        clearTimeout(timer);
        this.removeListener(listener);
        resolve();
      };
      const timer = setTimeout(() => {
        this.removeListener(listener);
        const cause = [...this.nodes.values()].flatMap((n) => n.conns).find((c) => c.lastError !== undefined)?.lastError;
        reject(new StoreError(`memcached not connected after ${timeoutMs} ms${cause !== undefined ? `: ${cause.message}` : ''}`));
      }, timeoutMs);
      this.listeners.push(listener);
    });
  }

  /** Resolves once every asynchronous write issued so far has been answered (or failed). */
  settled(): Promise<void> {
    if (this.pendingWrites === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  /** Waits for the asynchronous writes (bounded by the timeout), then closes every connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.refreshTimer !== undefined) clearInterval(this.refreshTimer);
    await this.initial.catch(() => undefined);
    if (this.pendingWrites > 0) {
      // A write chain takes up to three round trips (incr, add, incr); each is bounded by the timeout.
      let t: NodeJS.Timeout | undefined;
      await Promise.race([this.settled(), new Promise<void>((resolve) => (t = setTimeout(resolve, 3 * this.opts.timeoutMs)))]);
      clearTimeout(t);
    }
    await Promise.all([...this.nodes.values()].flatMap((n) => n.conns.map((c) => c.close())));
  }

  private connectionFor(key: string): McConnection | undefined {
    const reason = invalidKeyReason(key);
    if (reason !== undefined) {
      this.logThrottled('bad-key', { key: key.length > 300 ? `${key.slice(0, 300)}…` : key, reason }, 'memcached cannot store this key; its descriptor counts from 0');
      return undefined;
    }
    const h = keyHash(key);
    const node = this.ring.lookup(h);
    if (node === undefined) return undefined;
    // The high bits pick the connection, so it is independent of the ring position.
    return node.conns[(h >>> 16) % node.conns.length];
  }

  /** One `get` per connection touched, in parallel; fills `before`/`found`; failures leave 0. */
  private async fetch(plans: Map<string, KeyPlan>): Promise<void> {
    const groups = new Map<McConnection, string[]>();
    for (const [key, p] of plans) {
      if (p.conn === undefined) continue;
      const g = groups.get(p.conn);
      if (g === undefined) groups.set(p.conn, [key]);
      else g.push(key);
    }
    if (groups.size === 0) return;
    let failed = false;
    let found = 0;
    let requested = 0;
    const one = (conn: McConnection, keys: string[]): Promise<void> =>
      new Promise<void>((resolve) => {
        requested += keys.length;
        conn.send(
          encodeGet(keys),
          new GetReply((err, values) => {
            if (err !== undefined) {
              failed = true;
              this.logThrottled(`get-${conn.address}`, { node: conn.address, err: err.message }, 'memcached get failed; its keys count from 0');
            }
            for (const [k, v] of values) {
              const p = plans.get(k);
              if (p === undefined || p.found) continue;
              p.before = v;
              p.found = true;
              found++;
            }
            resolve();
          }),
        );
      });
    const waits: Promise<void>[] = [];
    for (const [conn, keys] of groups) waits.push(one(conn, keys));
    await (waits.length === 1 ? waits[0] : Promise.all(waits));
    if (this.stats !== undefined) {
      (failed ? this.stats.getErr : this.stats.getOk).inc();
      this.stats.keysRequested.add(requested);
      this.stats.keysFound.add(found);
    }
  }

  /**
   * The write chain of one key, in the request path: `incr`, then `add` when the key is missing,
   * then `incr` again when that `add` lost a race. Resolves with the value after the increment:
   * saturated when the stored value is not a number; the addend alone (counting from 0,
   * fail-open like a failed `get`) when the node fails.
   */
  private write(conn: McConnection, key: string, delta: number, exptime: number): Promise<number> {
    this.pendingWrites++;
    const s = this.stats;
    return new Promise<number>((resolve) => {
      const finish = (value: number): void => {
        this.pendingWrites--;
        if (this.pendingWrites === 0 && this.drainWaiters.length > 0) {
          const waiters = this.drainWaiters;
          this.drainWaiters = [];
          for (const w of waiters) w();
        }
        resolve(value);
      };
      const fail = (what: string, err: StoreError): void => {
        this.logThrottled(`write-${conn.address}`, { node: conn.address, err: err.message }, `memcached ${what} failed; its descriptor counts from 0`);
        finish(delta);
      };
      const incr = (retry: boolean): void =>
        conn.send(
          encodeIncr(key, delta),
          new LineReply((err, line) => {
            if (line.startsWith('CLIENT_ERROR')) {
              // The stored value is not a number: over every limit, never rewritten.
              finish(SATURATED_COUNT);
            } else if (err !== undefined) {
              s?.incrErr.inc();
              fail('incr', err);
            } else if (line === 'NOT_FOUND') {
              s?.incrMiss.inc();
              if (retry) add();
              else fail('incr', new StoreError('key vanished between add and incr'));
            } else {
              s?.incrOk.inc();
              // An unreadable answer counts as saturated (saturate(NaN)).
              if (!/^\d{1,20} *$/.test(line)) {
                finish(SATURATED_COUNT);
                return;
              }
              const after = BigInt(line.trim());
              // Wrapped past 2^64-1 (the result is below the delta), or close to it: pin the
              // counter at 2^63, saturated and 2^63 away from the wrap (no single call adds 2^53).
              if (after < BigInt(delta) || after >= PIN_ABOVE) {
                conn.send(`set ${key} 0 ${exptime} ${PIN_TEXT.length}\r\n${PIN_TEXT}\r\n`, new LineReply(() => undefined));
                finish(SATURATED_COUNT);
                return;
              }
              finish(saturate(Number(after)));
            }
          }),
        );
      const add = (): void =>
        conn.send(
          encodeAdd(key, delta, exptime),
          new LineReply((err, line) => {
            if (err !== undefined) {
              s?.addErr.inc();
              fail('add', err);
            } else if (line === 'NOT_STORED') {
              s?.addNotStored.inc();
              incr(false);
            } else {
              s?.addOk.inc();
              finish(delta);
            }
          }),
        );
      incr(true);
    });
  }

  private setServers(list: readonly string[]): void {
    const wanted = new Set(list);
    const next = new Map<string, McNode>();
    for (const address of [...wanted].sort()) {
      const existing = this.nodes.get(address);
      if (existing !== undefined) {
        next.set(address, existing);
        continue;
      }
      const { host, port } = parseHostPort(address);
      const conns: McConnection[] = [];
      for (let i = 0; i < this.opts.connectionsPerNode; i++) {
        conns.push(
          new McConnection({
            host,
            port,
            tls: this.opts.tls,
            timeoutMs: this.opts.timeoutMs,
            backoffMinMs: this.opts.reconnectMinMs ?? 50,
            backoffMaxMs: this.opts.reconnectMaxMs ?? 2000,
            random: this.random,
            now: () => Date.now(),
            events: this.events,
          }),
        );
      }
      next.set(address, { address, conns });
      for (const c of conns) c.connect();
    }
    const removed = [...this.nodes.values()].filter((n) => !wanted.has(n.address));
    this.nodes = next;
    this.ring = new HashRing(next);
    for (const n of removed) for (const c of n.conns) void c.close();
  }

  /** Resolves the SRV name and swaps the node list when it changed. */
  private async refresh(first: boolean): Promise<void> {
    const srv = this.opts.srv;
    if (srv === undefined) return;
    let list: string[];
    try {
      list = await resolveSrvTargets(srv.lookup, srv.name);
      if (list.length === 0) throw new Error('no targets');
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      if (first) throw new StoreError(`Unable to fetch servers from SRV ${srv.name}: ${why}`);
      this.logger?.warn({ srv: srv.name, err: why }, 'memcached SRV refresh failed; keeping the previous nodes');
      return;
    }
    if (this.closed) return;
    const current = this.servers();
    if (list.join(',') !== current.join(',')) {
      if (!first) this.logger?.info({ srv: srv.name, from: current, to: list }, 'memcached nodes changed');
      this.setServers(list);
    }
    if (first && srv.refreshMs > 0) {
      this.refreshTimer = setInterval(() => void this.refresh(false), srv.refreshMs);
      this.refreshTimer.unref();
    }
  }

  private logThrottled(kind: string, obj: object, msg: string): void {
    if (this.logger === undefined) return;
    const now = Date.now();
    const last = this.lastLog.get(kind);
    if (last !== undefined && now - last.at < LOG_EVERY_MS) {
      last.suppressed++;
      return;
    }
    this.lastLog.set(kind, { at: now, suppressed: 0 });
    this.logger.warn({ ...obj, ...(last !== undefined && last.suppressed > 0 ? { suppressed: last.suppressed } : {}) }, msg);
  }

  private removeListener(listener: (connected: boolean) => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  private emit(connected: boolean): void {
    for (const l of [...this.listeners]) {
      try {
        l(connected);
      } catch (err) {
        this.logger?.warn({ err: (err as Error).message }, 'connection listener failed');
      }
    }
  }
}
