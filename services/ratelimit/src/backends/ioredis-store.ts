// A counter store on ioredis (one explicit pipeline per call, pool of clients). It is not on the
// `single` code path: bench/store-micro.mjs measured it against the lean RESP client of
// redis-store.ts, which won. It stays as the comparison point and as the starting point for the
// cluster and sentinel modes, where ioredis's topology handling is worth its cost.
import { Redis } from 'ioredis';
import { StoreError } from '../errors.js';
import type { CounterOp, CounterStore } from './counter-store.js';
import { parseRedisEndpoint, type RedisStoreOptions } from './redis-store.js';

export type IoredisStoreOptions = Pick<RedisStoreOptions, 'url' | 'socketType' | 'auth' | 'poolSize' | 'timeoutMs'> & {
  /** Let ioredis batch the commands of one tick (`enableAutoPipelining`) instead of an explicit pipeline per call. */
  autoPipelining?: boolean;
};

function toStoreError(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  return new StoreError(`redis error: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

export class IoredisStore implements CounterStore {
  readonly kind = 'redis';
  private readonly clients: Redis[];
  private rr = 0;
  private readonly timeoutMs: number;
  private readonly auto: boolean;

  constructor(opts: IoredisStoreOptions) {
    const ep = parseRedisEndpoint(opts.url, opts.socketType);
    const auth = opts.auth ?? '';
    const i = auth.indexOf(':');
    const creds = auth.length === 0 ? {} : i < 0 ? { password: auth } : { username: auth.slice(0, i), password: auth.slice(i + 1) };
    this.timeoutMs = opts.timeoutMs;
    this.auto = opts.autoPipelining === true;
    this.clients = Array.from(
      { length: opts.poolSize },
      () =>
        new Redis({
          ...(ep.kind === 'unix' ? { path: ep.path } : { host: ep.host, port: ep.port }),
          ...creds,
          connectTimeout: opts.timeoutMs,
          commandTimeout: opts.timeoutMs,
          maxRetriesPerRequest: 0,
          enableOfflineQueue: true,
          enableAutoPipelining: this.auto,
          retryStrategy: (times: number) => Math.min(2000, 50 * 2 ** Math.min(times, 6)),
        }),
    );
    // ioredis emits 'error' on every failed reconnect; without a listener node would throw.
    for (const c of this.clients) c.on('error', () => undefined);
  }

  private client(): Redis {
    this.rr = (this.rr + 1) % this.clients.length;
    return this.clients[this.rr] as Redis;
  }

  async increment(ops: readonly CounterOp[]): Promise<number[]> {
    if (ops.length === 0) return [];
    const c = this.client();
    try {
      if (this.auto) {
        const calls: Promise<unknown>[] = [];
        for (const op of ops) {
          calls.push(c.incrby(op.key, op.addend));
          calls.push(c.expire(op.key, op.expireSeconds));
        }
        const replies = await Promise.all(calls);
        return ops.map((_o, i) => replies[2 * i] as number);
      }
      const p = c.pipeline();
      for (const op of ops) p.incrby(op.key, op.addend).expire(op.key, op.expireSeconds);
      const replies = await p.exec();
      if (replies === null) throw new StoreError('redis pipeline aborted');
      const out = new Array<number>(ops.length);
      for (let i = 0; i < replies.length; i++) {
        const [err, v] = replies[i] as [Error | null, unknown];
        if (err !== null) throw err;
        if ((i & 1) === 0) out[i >> 1] = v as number;
      }
      return out;
    } catch (err) {
      throw toStoreError(err);
    }
  }

  async get(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    try {
      const vals = await this.client().mget(...keys);
      return vals.map((v) => (v === null ? 0 : Number(v)));
    } catch (err) {
      throw toStoreError(err);
    }
  }

  isConnected(): boolean {
    return this.clients.some((c) => c.status === 'ready');
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.quit().catch(() => c.disconnect())));
  }

  /** For symmetry with RedisStore in tests and benchmarks. */
  async waitUntilConnected(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.isConnected()) {
      if (Date.now() > deadline) throw new StoreError(`redis not connected after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}
