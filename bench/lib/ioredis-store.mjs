// The counter store's work (INCRBY + EXPIRE per descriptor, values read back with GET/MGET) done
// with ioredis: what the service would run if it used the library instead of its own RESP client.
// Bench-only: bench/store-micro.mjs (single mode) and bench/client-redis-{cluster,sentinel}.mjs
// compare it with our stores. A pool of clients round-robin, so both sides hold the same number of
// connections (KVSTORE_POOL_SIZE per node on our side).
import { Redis } from 'ioredis';

/** `host:port` or a unix socket path → ioredis connection options. */
function endpoint(url) {
  if (url.startsWith('/')) return { path: url };
  const i = url.lastIndexOf(':');
  return { host: url.slice(0, i), port: Number(url.slice(i + 1)) };
}

/** ioredis options every client of the pool shares: bounded calls, no retry of a failed command. */
export function ioredisCommonOptions(timeoutMs) {
  return {
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: true,
    retryStrategy: (times) => Math.min(2000, 50 * 2 ** Math.min(times, 6)),
  };
}

export class IoredisStore {
  /**
   * @param {object} opts
   * @param {string} [opts.url] single mode: `host:port` or a unix socket path (ignored with createClient)
   * @param {() => import('ioredis').Redis | import('ioredis').Cluster} [opts.createClient] any other mode
   * @param {number} opts.poolSize clients in the pool
   * @param {number} [opts.timeoutMs] single mode: connect and command timeout
   * @param {boolean} [opts.autoPipelining] let ioredis batch the commands of one tick (set on the client too)
   * @param {boolean} [opts.pipelinePerKey] one pipeline per descriptor: an ioredis Cluster pipeline must stay within one slot
   */
  constructor(opts) {
    this.auto = opts.autoPipelining === true;
    this.perKey = opts.pipelinePerKey === true;
    const create = opts.createClient ?? (() => new Redis({ ...endpoint(opts.url), ...ioredisCommonOptions(opts.timeoutMs ?? 5000), enableAutoPipelining: this.auto }));
    this.clients = Array.from({ length: opts.poolSize }, create);
    // ioredis emits 'error' on every failed reconnect; without a listener node would throw.
    for (const c of this.clients) c.on('error', () => undefined);
    this.rr = 0;
  }

  client() {
    this.rr = (this.rr + 1) % this.clients.length;
    return this.clients[this.rr];
  }

  /** Counter values after the increments, in op order. */
  async increment(ops) {
    if (ops.length === 0) return [];
    const c = this.client();
    if (this.auto) {
      const calls = [];
      for (const op of ops) calls.push(c.incrby(op.key, op.addend), c.expire(op.key, op.expireSeconds));
      const replies = await Promise.all(calls);
      return ops.map((_o, i) => replies[2 * i]);
    }
    if (this.perKey) {
      const replies = await Promise.all(ops.map((op) => c.pipeline().incrby(op.key, op.addend).expire(op.key, op.expireSeconds).exec()));
      return replies.map((r) => valueOf(r, 0));
    }
    const p = c.pipeline();
    for (const op of ops) p.incrby(op.key, op.addend).expire(op.key, op.expireSeconds);
    const replies = await p.exec();
    return ops.map((_o, i) => valueOf(replies, 2 * i));
  }

  /** Current values (0 when missing); one GET per key where MGET could span slots. */
  async get(keys) {
    if (keys.length === 0) return [];
    const c = this.client();
    const vals = this.auto || this.perKey ? await Promise.all(keys.map((k) => c.get(k))) : await c.mget(...keys);
    return vals.map((v) => (v === null ? 0 : Number(v)));
  }

  isConnected() {
    return this.clients.some((c) => c.status === 'ready');
  }

  async waitUntilConnected(timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    while (!this.clients.every((c) => c.status === 'ready')) {
      if (Date.now() > deadline) throw new Error(`ioredis not connected after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async close() {
    await Promise.all(this.clients.map((c) => c.quit().catch(() => c.disconnect())));
  }
}

function valueOf(replies, i) {
  if (replies === null) throw new Error('redis pipeline aborted');
  const [err, v] = replies[i];
  if (err !== null) throw err;
  return v;
}
