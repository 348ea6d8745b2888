// The Redis counter store for KVSTORE_TYPE=single: INCRBY + EXPIRE per op (INCRBY alone for a
// windowed key of ours that already has its TTL: expiry-memo.ts), every op of a call
// pipelined in one round trip (no MULTI, no Lua), over a fixed pool of lean RESP connections
// (connection-pool.ts: on-empty behaviours, TLS, pipeline window). The commands of all calls made
// in one event-loop turn share one socket write (see resp-connection.ts); bench/store-micro.mjs
// compares this client with ioredis.
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { StoreError, type Algorithm, type CounterOp, type CounterStore, type OpResult, type RandomSource, type StatsStore } from '@rls/engine';
import type { Secret } from '@rls/settings';
import { ConnectionPool, type OnEmptyBehavior, type StoreLogger } from './connection-pool.js';
import { ExpiryMemo } from './expiry-memo.js';
import {
  anyExpireOnCreate,
  encodeCommand,
  encodeExecute,
  encodeIncrements,
  ExecuteReplies,
  expireCommands,
  ExpireReplies,
  IncrementPlan,
  IncrementPlanReplies,
  IncrementReplies,
  MgetReply,
  RawReplies,
  type HandshakeCommand,
  type KeyedCommand,
  type KeyedCommandSender,
} from './redis-commands.js';
import type { RespEndpoint } from './resp-connection.js';
import type { RespReply } from './resp-parser.js';

export type { StoreLogger } from './connection-pool.js';

export interface RedisStoreOptions {
  /** `host:port` (tcp) or a unix socket path (unix). */
  url: string;
  socketType: 'tcp' | 'unix';
  /** `password` or `user:password` (split at the first `:`), kept out of strings (see authHandshake). */
  auth?: Secret | undefined;
  /** Number of connections (KVSTORE_POOL_SIZE). */
  poolSize: number;
  /** Bound for connecting and for every call, in milliseconds (KVSTORE_TIMEOUT). */
  timeoutMs: number;
  /** Registers `<statsPrefix>.cx_active` (gauge), `.cx_total` and `.cx_local_close` (counters). */
  stats?: StatsStore | undefined;
  /** Default `ratelimit.redis_pool`; the per-second store uses `ratelimit.redis_per_second_pool`. */
  statsPrefix?: string | undefined;
  logger?: StoreLogger | undefined;
  /** First reconnect delay in ms (doubles per failed attempt); default 50. */
  reconnectMinMs?: number | undefined;
  /** Largest reconnect delay in ms; default 2000. */
  reconnectMaxMs?: number | undefined;
  /** Jitter source for reconnect delays. */
  random?: RandomSource | undefined;
  /** KVSTORE_POOL_ON_EMPTY_BEHAVIOR (default WAIT here; the setting defaults to CREATE). */
  onEmpty?: OnEmptyBehavior | undefined;
  /** KVSTORE_POOL_ON_EMPTY_WAIT_DURATION in ms (default 1000). */
  onEmptyWaitMs?: number | undefined;
  /** Callers one connection carries before it counts as busy (default 64). */
  maxPendingPerConnection?: number | undefined;
  /** KVSTORE_PIPELINE_WINDOW in ms (0: flush at the end of the event-loop turn). */
  pipelineWindowMs?: number | undefined;
  /** TLS options (KVSTORE_TLS*); plain when undefined. */
  tls?: TlsConnectionOptions | undefined;
}

/** Parses KVSTORE_URL for the given socket type. */
export function parseRedisEndpoint(url: string, socketType: 'tcp' | 'unix'): RespEndpoint {
  if (socketType === 'unix') {
    if (url.length === 0) throw new StoreError('redis unix socket path is empty');
    return { kind: 'unix', path: url };
  }
  const i = url.lastIndexOf(':');
  const port = Number(url.slice(i + 1));
  let host = i < 0 ? '' : url.slice(0, i);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (i < 0 || host.length === 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new StoreError(`redis url must be host:port, got ${JSON.stringify(url)}`);
  }
  return { kind: 'tcp', host, port };
}

/**
 * The encoded `AUTH password` or `AUTH user password` (split at the first `:`) command, built from
 * the secret's bytes without making a string of them: a heap snapshot of the process shows strings
 * but not Buffer contents. Undefined when no auth is configured.
 */
export function authHandshake(auth: Secret | undefined): Buffer | undefined {
  if (auth === undefined || auth.empty) return undefined;
  const bytes = auth.copyBytes();
  const i = bytes.indexOf(0x3a);
  const args = i < 0 ? [bytes] : [bytes.subarray(0, i), bytes.subarray(i + 1)];
  const parts: Buffer[] = [Buffer.from(`*${args.length + 1}\r\n$4\r\nAUTH\r\n`)];
  for (const a of args) parts.push(Buffer.from(`$${a.length}\r\n`), a, Buffer.from('\r\n'));
  const command = Buffer.concat(parts);
  bytes.fill(0);
  return command;
}

/** Hides credentials that a URL may carry (`scheme://user:pass@host` or `pass@host`). */
export function maskUrl(url: string): string {
  return url.replace(/(^|[/,])([^/,@]*)@/g, '$1***@');
}

/** Pool options shared by every mode, from store options. */
export function poolOptionsFrom(opts: Omit<RedisStoreOptions, 'url' | 'socketType'>, endpoint: RespEndpoint, label: string) {
  return {
    endpoint,
    label,
    size: opts.poolSize,
    timeoutMs: opts.timeoutMs,
    handshake: ((): HandshakeCommand[] => {
      const a = authHandshake(opts.auth);
      return a !== undefined ? [a] : [];
    })(),
    onEmpty: opts.onEmpty ?? 'WAIT',
    onEmptyWaitMs: opts.onEmptyWaitMs ?? 1000,
    maxPendingPerConnection: opts.maxPendingPerConnection,
    pipelineWindowMs: opts.pipelineWindowMs ?? 0,
    tls: opts.tls,
    stats: opts.stats,
    statsPrefix: opts.statsPrefix,
    logger: opts.logger,
    reconnectMinMs: opts.reconnectMinMs,
    reconnectMaxMs: opts.reconnectMaxMs,
    random: opts.random,
  } satisfies ConstructorParameters<typeof ConnectionPool>[0];
}

/** `commands` in one pipeline on `pool`. */
export function sendKeyedVia(pool: ConnectionPool, commands: readonly KeyedCommand[]): Promise<RespReply[]> {
  if (commands.length === 0) return Promise.resolve([]);
  let text = '';
  for (const c of commands) text += c.text;
  return new Promise((resolve, reject) => pool.send(text, new RawReplies(commands.length, resolve, reject)));
}

/**
 * INCRBY+EXPIRE for `ops` through `pool`, one pipelined round trip. With a memo, `expireOnCreate`
 * ops whose key already has its TTL send INCRBY alone (expiry-memo.ts); a key INCRBY created
 * without one gets its EXPIRE in a second round trip before the call resolves.
 */
export function incrementVia(pool: ConnectionPool, ops: readonly CounterOp[], memo?: ExpiryMemo): Promise<number[]> {
  if (ops.length === 0) return Promise.resolve([]);
  if (memo !== undefined && anyExpireOnCreate(ops)) return incrementPlanned(pool, new IncrementPlan(ops, memo), memo);
  const text = encodeIncrements(ops);
  return new Promise((resolve, reject) => pool.send(text, new IncrementReplies(ops.length, resolve, reject)));
}

function incrementPlanned(pool: ConnectionPool, plan: IncrementPlan, memo: ExpiryMemo): Promise<number[]> {
  return new Promise((resolve, reject) =>
    pool.send(
      plan.text(),
      new IncrementPlanReplies(
        plan,
        memo,
        (values, fresh) => {
          if (fresh === undefined) {
            resolve(values);
            return;
          }
          const text = expireCommands(plan.ops, fresh)
            .map((c) => c.text)
            .join('');
          pool.send(text, new ExpireReplies(fresh.map((i) => plan.hashes[i] as number), memo, () => resolve(values), reject));
        },
        reject,
      ),
    ),
  );
}

/** MGET of `keys` through `pool` (missing keys are 0). */
export function getVia(pool: ConnectionPool, keys: readonly string[]): Promise<number[]> {
  if (keys.length === 0) return Promise.resolve([]);
  const text = encodeCommand(['MGET', ...keys]);
  return new Promise((resolve, reject) => pool.send(text, new MgetReply(resolve, reject)));
}

/** `DEL` of `keys` through `pool` (an operator's reset on the debug port). */
export function deleteVia(pool: ConnectionPool, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return Promise.resolve();
  const text = encodeCommand(['DEL', ...keys]);
  return new Promise((resolve, reject) =>
    pool.send(
      text,
      new RawReplies(
        1,
        (replies) => (typeof replies[0] === 'number' ? resolve() : reject(new StoreError(`redis error: DEL answered ${JSON.stringify(replies[0])}`))),
        reject,
      ),
    ),
  );
}

/** What every Redis mode runs: sliding window by INCRBY+EXPIRE+GET, token bucket by a Lua script. */
export const REDIS_ALGORITHMS: ReadonlySet<Algorithm> = new Set<Algorithm>(['fixed_window', 'sliding_window', 'token_bucket']);

/**
 * CounterStore.execute through `pool`: every op's commands in one pipelined round trip
 * (redis-commands.ts), decoded as the replies arrive. Bucket ops call the script by its hash; when
 * Redis answers NOSCRIPT (its script cache was flushed, or the node restarted or took over), those
 * ops (which did not run) are sent again with EVAL, which also reloads the script: one extra round
 * trip, once. (Should one request carry the same bucket key twice while another client reloads
 * the script between them, the retried op runs after the later one: both still run exactly once.)
 */
export function executeVia(pool: ConnectionPool, ops: readonly CounterOp[]): Promise<OpResult[]> {
  if (ops.length === 0) return Promise.resolve([]);
  return new Promise((resolve, reject) => {
    const first = encodeExecute(ops);
    pool.send(
      first.text,
      new ExecuteReplies(
        ops,
        first.replies,
        (out, missing) => {
          if (missing === undefined) resolve(out);
          else retryWithEval(pool, ops, out, missing).then(resolve, reject);
        },
        reject,
      ),
    );
  });
}

/** The NOSCRIPT ops of `ops` again, with EVAL; fills their slots of `out`. */
function retryWithEval(pool: ConnectionPool, ops: readonly CounterOp[], out: OpResult[], missing: readonly number[]): Promise<OpResult[]> {
  const retryOps = missing.map((i) => ops[i] as CounterOp);
  return new Promise((resolve, reject) => {
    const again = encodeExecute(retryOps, true);
    pool.send(
      again.text,
      new ExecuteReplies(
        retryOps,
        again.replies,
        (retried, stillMissing) => {
          if (stillMissing !== undefined) {
            reject(new StoreError('redis error: NOSCRIPT after EVAL'));
            return;
          }
          missing.forEach((i, j) => (out[i] = retried[j] as OpResult));
          resolve(out);
        },
        reject,
      ),
    );
  });
}

export class RedisStore implements CounterStore, KeyedCommandSender {
  readonly kind = 'redis';
  readonly algorithms: ReadonlySet<Algorithm> = REDIS_ALGORITHMS;
  readonly pool: ConnectionPool;
  /** `expireOnCreate` keys given their TTL; forgotten whenever the connections go down or come back. */
  private readonly expiry = new ExpiryMemo();

  constructor(opts: RedisStoreOptions) {
    const endpoint = parseRedisEndpoint(opts.url, opts.socketType);
    this.pool = new ConnectionPool(poolOptionsFrom(opts, endpoint, maskUrl(opts.url)));
    this.pool.onConnectionChange(() => this.expiry.clear());
  }

  increment(ops: readonly CounterOp[]): Promise<number[]> {
    return incrementVia(this.pool, ops, this.expiry);
  }

  execute(ops: readonly CounterOp[]): Promise<OpResult[]> {
    return executeVia(this.pool, ops);
  }

  get(keys: readonly string[]): Promise<number[]> {
    return getVia(this.pool, keys);
  }

  delete(keys: readonly string[]): Promise<void> {
    return deleteVia(this.pool, keys);
  }

  /** KeyedCommandSender: one pipeline on the pool. */
  sendKeyed(commands: readonly KeyedCommand[]): Promise<RespReply[]> {
    return sendKeyedVia(this.pool, commands);
  }

  isConnected(): boolean {
    return this.pool.isConnected();
  }

  onConnectionChange(listener: (connected: boolean) => void): void {
    this.pool.onConnectionChange(listener);
  }

  /**
   * Resolves once a connection is ready; rejects with StoreError after `timeoutMs` (start-up waits
   * for Redis like upstream does, the caller owns the retry policy).
   */
  waitUntilConnected(timeoutMs: number): Promise<void> {
    return this.pool.waitUntilConnected(timeoutMs);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
