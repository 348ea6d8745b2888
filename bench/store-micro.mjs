#!/usr/bin/env node
// Micro-benchmark of the Redis counter-store candidates for KVSTORE_TYPE=single: N concurrent
// callers each doing 1-descriptor increments (INCRBY + EXPIRE in one round trip) against a private
// redis-server. Prints ops/s and the Node process's CPU time per op (user+system; redis-server's
// CPU is not included). Each candidate runs in its own child process so JIT and GC state do not
// leak between them.
//
//   node --conditions=source --import tsx bench/store-micro.mjs [--seconds 4] [--concurrency 64] [--pool 10] [--rounds 2] [--only lean,ioredis-pipeline]
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '64' },
    pool: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '2' },
    only: { type: 'string', default: '' },
    candidate: { type: 'string', default: '' },
    url: { type: 'string', default: '' },
  },
});

const CANDIDATES = {
  // Our RESP client: one socket write per event-loop turn, FIFO of replies.
  lean: async (url, pool) => {
    const { RedisStore } = await import('../services/ratelimit/src/backends/redis-store.ts');
    const s = new RedisStore({ url, socketType: 'tcp', poolSize: pool, timeoutMs: 5000 });
    await s.waitUntilConnected(5000);
    return { inc: (ops) => s.increment(ops), close: () => s.close() };
  },
  // ioredis, explicit pipeline per call.
  'ioredis-pipeline': async (url, pool) => {
    const { IoredisStore } = await import('./lib/ioredis-store.mjs');
    const s = new IoredisStore({ url, socketType: 'tcp', poolSize: pool, timeoutMs: 5000 });
    await s.waitUntilConnected(5000);
    return { inc: (ops) => s.increment(ops), close: () => s.close() };
  },
  // ioredis with enableAutoPipelining (commands of one tick batched by ioredis).
  'ioredis-auto': async (url, pool) => {
    const { IoredisStore } = await import('./lib/ioredis-store.mjs');
    const s = new IoredisStore({ url, socketType: 'tcp', poolSize: pool, timeoutMs: 5000, autoPipelining: true });
    await s.waitUntilConnected(5000);
    return { inc: (ops) => s.increment(ops), close: () => s.close() };
  },
  // Reference: rate-limiter-flexible's RateLimiterRedis on one ioredis client (what the target server uses).
  'rlflex-ioredis': async (url) => {
    const { Redis } = await import('ioredis');
    const { RateLimiterRedis } = await import('rate-limiter-flexible');
    const [host, port] = url.split(':');
    const client = new Redis({ host, port: Number(port), enableOfflineQueue: false });
    await new Promise((r) => client.once('ready', r));
    const rl = new RateLimiterRedis({ storeClient: client, points: 1e12, duration: 60, keyPrefix: 'rlflex' });
    return { inc: (ops) => rl.consume(ops[0].key, ops[0].addend), close: () => client.quit() };
  },
};

async function runCandidate(name, url, seconds, concurrency, pool) {
  const store = await CANDIDATES[name](url, pool);
  let ops = 0;
  let stop = false;
  const worker = async (w) => {
    let i = w;
    while (!stop) {
      i = (i + 7919) % 1000;
      await store.inc([{ key: `bench_domain_key_value_${i}`, addend: 1, expireSeconds: 60, windowSeconds: 60 }]);
      ops++;
    }
  };
  // Warm-up, then the measured window.
  const warm = Array.from({ length: concurrency }, (_v, w) => worker(w));
  await new Promise((r) => setTimeout(r, 1000));
  stop = true;
  await Promise.all(warm);
  stop = false;
  ops = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const running = Array.from({ length: concurrency }, (_v, w) => worker(w));
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stop = true;
  await Promise.all(running);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  await store.close();
  const cpuUs = cpu.user + cpu.system;
  return { name, opsPerSec: ops / wallS, cpuUsPerOp: cpuUs / ops, cpuShare: cpuUs / 1e6 / wallS };
}

if (args.candidate !== '') {
  const r = await runCandidate(args.candidate, args.url, Number(args.seconds), Number(args.concurrency), Number(args.pool));
  process.stdout.write(JSON.stringify(r) + '\n');
  process.exit(0);
}

const { startRedis } = await import('@rls/testkit');
const redis = await startRedis();
const names = args.only !== '' ? args.only.split(',') : Object.keys(CANDIDATES);
const self = fileURLToPath(import.meta.url);
const results = {};
console.log(`redis ${redis.url}; ${args.concurrency} concurrent callers, pool ${args.pool}, ${args.seconds}s per run, ${args.rounds} rounds`);
try {
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const name of names) {
      const out = await new Promise((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [...process.execArgv, self, '--candidate', name, '--url', redis.url, '--seconds', args.seconds, '--concurrency', args.concurrency, '--pool', args.pool],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        let buf = '';
        child.stdout.on('data', (d) => (buf += d));
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(buf)) : reject(new Error(`${name} exited ${code}`))));
      });
      (results[name] ??= []).push(out);
      console.log(`  ${name.padEnd(18)} ${out.opsPerSec.toFixed(0).padStart(8)} ops/s  ${out.cpuUsPerOp.toFixed(2).padStart(6)} µs CPU/op  (node CPU ${(out.cpuShare * 100).toFixed(0)}%)`);
    }
  }
  console.log('best of rounds:');
  for (const [name, rs] of Object.entries(results)) {
    const best = rs.reduce((a, b) => (b.opsPerSec > a.opsPerSec ? b : a));
    const cpu = Math.min(...rs.map((r) => r.cpuUsPerOp));
    console.log(`  ${name.padEnd(18)} ${best.opsPerSec.toFixed(0).padStart(8)} ops/s  ${cpu.toFixed(2).padStart(6)} µs CPU/op`);
  }
} finally {
  await redis.stop();
}
