#!/usr/bin/env node
// The RLQS server's CPU per report, without a transport (phase 1 of issue 28): STREAMS simulated
// data planes each report BUCKETS buckets (`{name: api, tenant: t<i>}`) once per second of fake
// time; per report message the server decodes it (hand-written codec, bounded) and hands it to
// the QuotaBalancer, and once per second the balancer ticks: divides every bucket among its
// instances through the share store (memory, or Redis with REDIS_URL=host:port) and encodes the
// assignments. Prints CPU µs per report message and per bucket usage, and the tick's CPU and
// wall time. Benchmarks print; they never assert.
//
//   node --conditions=source --import tsx bench/rlqs-micro.mjs
//   env: STREAMS (50) BUCKETS (100) SECONDS (fake seconds, 10) REDIS_URL (memory store when unset)
import { cpuUsage } from 'node:process';
import { envNumber } from './lib/alternate.mjs';

const STREAMS = envNumber('STREAMS', 50);
const BUCKETS = envNumber('BUCKETS', 100);
const SECONDS = envNumber('SECONDS', 10);
const REDIS_URL = process.env.REDIS_URL ?? '';

const proto = await import('../packages/rls-proto/src/index.ts');
const engine = await import('../packages/engine/src/index.ts');

const rules = engine.loadQuotaRules(
  [{ name: 'bench.yaml', content: 'domain: bench\nquota_buckets:\n  - bucket_id: { name: api, tenant: "*" }\n    quota: { unit: second, requests_per_unit: 1000 }\n' }],
  { mergeDomainConfig: false },
);
let now = Date.UTC(2026, 0, 1);
let store = new engine.MemoryShareStore();
let closeRedis = async () => undefined;
if (REDIS_URL !== '') {
  const { RedisStore } = await import('../services/ratelimit/src/backends/redis-store.ts');
  const { RedisQuotaShareStore } = await import('../services/ratelimit/src/backends/redis-quota-share.ts');
  const counters = new RedisStore({ url: REDIS_URL, socketType: 'tcp', poolSize: 2, timeoutMs: 5000 });
  await counters.waitUntilConnected(5000);
  store = new RedisQuotaShareStore({ poolFor: () => counters.pool });
  closeRedis = () => counters.close();
}
const balancer = new engine.QuotaBalancer({
  ...engine.DEFAULT_BALANCER_TUNING,
  replicaId: 'bench',
  clock: { now: () => now },
  store,
  rules: () => rules,
  stats: new engine.StatsStore(),
  keyPrefix: `bench${process.pid}:`,
});
let encodedBytes = 0;
const streams = Array.from({ length: STREAMS }, () => balancer.openStream((m) => (encodedBytes += proto.encodeRateLimitQuotaResponse(m, 5).length)));
const reportBytes = (second) =>
  proto.encodeRateLimitQuotaUsageReports({
    domain: 'bench',
    bucketQuotaUsages: Array.from({ length: BUCKETS }, (_, i) => ({
      bucketId: [{ key: 'name', value: 'api' }, { key: 'tenant', value: `t${i}` }],
      timeElapsed: second === 0 ? 0 : 1,
      numRequestsAllowed: 10 + ((i * 7 + second) % 40),
      numRequestsDenied: i % 5,
    })),
  });

let reportCpu = 0;
let tickCpu = 0;
let tickWall = 0;
let reports = 0;
for (let s = 0; s < SECONDS; s++) {
  const bytes = reportBytes(s);
  let c0 = cpuUsage();
  for (const st of streams) balancer.report(st, proto.decodeRateLimitQuotaUsageReports(bytes));
  let c1 = cpuUsage(c0);
  reportCpu += c1.user + c1.system;
  reports += streams.length;
  now += 1000;
  c0 = cpuUsage();
  const w0 = performance.now();
  await balancer.tick();
  tickWall += performance.now() - w0;
  c1 = cpuUsage(c0);
  tickCpu += c1.user + c1.system;
}
await closeRedis();
const usages = reports * BUCKETS;
console.log(`rlqs-micro: ${STREAMS} streams × ${BUCKETS} buckets, ${SECONDS} fake seconds, store ${REDIS_URL === '' ? 'memory' : `redis ${REDIS_URL}`}`);
console.log(`  report (decode + balancer.report): ${(reportCpu / reports).toFixed(1)} µs CPU per message, ${(reportCpu / usages).toFixed(2)} µs per bucket usage`);
console.log(`  tick (exchange + divide + reserve + encode): ${(tickCpu / SECONDS / 1000).toFixed(1)} ms CPU, ${(tickWall / SECONDS).toFixed(1)} ms wall per tick, ${(tickCpu / SECONDS / (STREAMS * BUCKETS)).toFixed(2)} µs CPU per bucket instance`);
console.log(`  assignments encoded: ${(encodedBytes / 1024).toFixed(0)} KiB in ${SECONDS} ticks`);
