#!/usr/bin/env node
// Memcached backend: our memcached store (services/ratelimit/src/backends/memcached-store.ts with
// its consistent-hash ring and text-protocol client) against memjs + hashring doing the same work,
// across SERVERS memcached servers (@rls/testkit). A request of DESCRIPTORS keys, as the store
// does it (upstream's order): read the current values, answer from them, then add the increments
// without waiting. Ours reads with one multi-key `get` per connection touched and writes
// `incr` (or `add` for a missing key); memjs has no multi-get, so it reads one `get` per key
// (pipelined on its connection) and writes one binary `incr` with an initial value, which creates
// a missing key in the same round trip. Both hold CONNS connections per server. After each run the
// writes are awaited and every key read back: counted/expected shows both did the same work.
//
//   node --conditions=source --import tsx bench/client-memcached.mjs
//   env: ROUNDS (3) DURATION (s per run, 3) CONCURRENCY (64) DESCRIPTORS (3) KEYS (1000) SERVERS (3) CONNS (2) ONLY (comma list)
import { fileURLToPath } from 'node:url';
import { alternate, childRequest, envNumber, reportAndExit } from './lib/alternate.mjs';
import { counterWorkload } from './lib/counter-workload.mjs';

/** The store's work on memjs: one memjs client per connection, hashring picks the server. */
class MemjsStore {
  constructor(memjs, HashRing, servers, conns) {
    this.ring = new HashRing(servers);
    this.clients = new Map(servers.map((s) => [s, Array.from({ length: conns }, () => memjs.Client.create(s, { timeout: 5, conntimeout: 5, retries: 0, logger: { log: () => undefined } }))]));
    this.rr = 0;
    this.pending = 0;
    this.waiters = [];
  }

  client(key) {
    const conns = this.clients.get(this.ring.get(key));
    this.rr = (this.rr + 1) % conns.length;
    return conns[this.rr];
  }

  async increment(ops) {
    const clients = ops.map((op) => this.client(op.key));
    const read = await Promise.all(ops.map((op, i) => clients[i].get(op.key)));
    const out = ops.map((op, i) => (read[i].value === null ? 0 : Number(read[i].value)) + op.addend);
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      this.pending++;
      clients[i].increment(op.key, op.addend, { initial: op.addend, expires: op.expireSeconds }).finally(() => {
        if (--this.pending === 0) for (const w of this.waiters.splice(0)) w();
      });
    }
    return out;
  }

  settled() {
    return this.pending === 0 ? Promise.resolve() : new Promise((r) => this.waiters.push(r));
  }

  async get(keys) {
    const read = await Promise.all(keys.map((k) => this.client(k).get(k)));
    return read.map((r) => (r.value === null ? 0 : Number(r.value)));
  }

  async close() {
    for (const conns of this.clients.values()) for (const c of conns) c.close();
  }
}

const CANDIDATES = {
  ours: async ({ servers, conns }) => {
    const { MemcachedStore } = await import('../services/ratelimit/src/backends/memcached-store.ts');
    const { systemClock } = await import('@rls/engine');
    const s = new MemcachedStore({ servers, connectionsPerNode: conns, timeoutMs: 5000, clock: systemClock });
    await s.waitUntilConnected(10_000);
    return s;
  },
  'memjs+hashring': async ({ servers, conns }) => {
    const { default: memjs } = await import('memjs');
    const { default: HashRing } = await import('hashring');
    return new MemjsStore(memjs, HashRing, servers, conns);
  },
};

const child = childRequest();
if (child !== undefined) {
  const ctx = child.context;
  const store = await CANDIDATES[child.name](ctx);
  const r = await counterWorkload(store, { prefix: `bench:${child.name}:${process.pid}`, ...ctx, settle: () => store.settled() });
  await store.close();
  reportAndExit(r);
}

const { startMemcached } = await import('@rls/testkit');
const servers = [];
for (let i = 0; i < envNumber('SERVERS', 3); i++) servers.push(await startMemcached());
const context = {
  servers: servers.map((s) => s.url),
  conns: envNumber('CONNS', 2),
  seconds: envNumber('DURATION', 3),
  concurrency: envNumber('CONCURRENCY', 64),
  descriptors: envNumber('DESCRIPTORS', 3),
  keys: envNumber('KEYS', 1000),
};
const only = (process.env.ONLY ?? '').split(',').filter((x) => x !== '');
try {
  await alternate({
    title: `memcached, ${servers.length} servers: ${context.descriptors} descriptors per request, ${context.concurrency} in flight, ${context.conns} connections per server, ${context.seconds} s per run`,
    self: fileURLToPath(import.meta.url),
    candidates: only.length > 0 ? only : Object.keys(CANDIDATES),
    rounds: envNumber('ROUNDS', 3),
    context,
    serverPorts: servers.map((s) => s.port),
    unit: 'req',
    extraColumns: [{ label: 'counted/expected', value: (r) => `${r.counted}/${r.expected}` }],
  });
} finally {
  for (const s of servers) await s.stop();
}
