#!/usr/bin/env node
// RLQS versus RLS for the same traffic, through the real service on Redis (issue 28): ENVOYS
// simulated Envoy instances (testkit's SimulatedEnvoy, grpc-js streams, one connection each) each
// spread requests over BUCKETS tenants of one quota rule, deciding locally from the pushed token
// buckets and reporting every second; then the same tenants as RLS ShouldRateLimit calls
// (CONCURRENCY in flight) against a descriptor rule of the same limit. Prints decisions per second
// (RLQS: made by the data planes; RLS: answered by the server), the server's CPU per RLQS report
// message and per bucket usage, and per RLS call. Benchmarks print; they never assert.
//
//   npx tsc -b && node --conditions=source --import tsx bench/rlqs-service.mjs
//   env: ENVOYS (4) BUCKETS (100) SECONDS (10) CONCURRENCY (50)
import * as grpc from '@grpc/grpc-js';
import { envNumber } from './lib/alternate.mjs';
import { cpuMs, fmt, freePort, repoRoot, rulesEnv, start, startRedis, waitPort } from './lib/harness.mjs';

const ENVOYS = envNumber('ENVOYS', 4);
const BUCKETS = envNumber('BUCKETS', 100);
const SECONDS = envNumber('SECONDS', 10);
const CONCURRENCY = envNumber('CONCURRENCY', 50);

const proto = await import('../packages/rls-proto/src/index.ts');
const testkit = await import('../packages/testkit/src/index.ts');
const engine = await import('../packages/engine/src/index.ts');

const RULES = `domain: bench
descriptors:
  - key: tenant
    rate_limit: { unit: second, requests_per_unit: 1000 }
quota_buckets:
  - bucket_id: { name: api, tenant: "*" }
    quota: { unit: second, requests_per_unit: 1000 }
`;

const redis = await startRedis();
const port = await freePort();
const svc = start(process.execPath, [`${repoRoot}services/ratelimit/bin/ratelimit.js`], {
  ...rulesEnv(RULES),
  GRPC_HOST: '127.0.0.1', GRPC_PORT: String(port), HOST: '127.0.0.1', PORT: String(await freePort()), DEBUG_HOST: '127.0.0.1', DEBUG_PORT: String(await freePort()),
  BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url, RLQS_ENABLED: 'true', RLQS_MAX_REPORTS_PER_SECOND: '200',
  LOG_LEVEL: 'error', USE_STATS_PUSH: 'false', USE_PROMETHEUS: 'false', WORKERS: '1', RUNTIME_WATCH_ROOT: 'false',
});
await waitPort(port, 'ratelimit', 60_000);
const address = `127.0.0.1:${port}`;

// ---- RLQS: local decisions ---------------------------------------------------------------------
const ids = Array.from({ length: BUCKETS }, (_, i) => [{ key: 'name', value: 'api' }, { key: 'tenant', value: `t${i}` }]);
const clients = Array.from({ length: ENVOYS }, () => new grpc.Client(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
const codec = { encodeReports: (m) => proto.encodeRateLimitQuotaUsageReports(m), decodeResponse: (b) => proto.decodeRateLimitQuotaResponse(b) };
const sims = clients.map((c) => new testkit.SimulatedEnvoy({ domain: 'bench', clock: engine.systemClock, settings: () => ({ reportingIntervalMs: 1000 }), open: testkit.grpcSimStream(c, codec) }));
for (const sim of sims) for (const id of ids) sim.request(id);
await testkit.waitFor(() => sims.every((s) => ids.every((id) => s.stateOf(id) === 'active')), { what: 'every bucket assigned', timeoutMs: 30_000 });
const reports0 = sims.reduce((n, s) => n + s.counters.reportsSent, 0);
const usages0 = sims.reduce((n, s) => n + s.counters.usagesSent, 0);
let cpu0 = cpuMs(svc.pid);
let decisions = 0;
let allowed = 0;
const t0 = Date.now();
while (Date.now() - t0 < SECONDS * 1000) {
  // A batch of decisions, then a turn of the event loop so the streams deliver reports and pushes.
  for (let k = 0; k < 20_000; k++) {
    const sim = sims[k % ENVOYS];
    if (sim.request(ids[k % BUCKETS])) allowed++;
    decisions++;
  }
  await new Promise((r) => setImmediate(r));
}
const rlqsWall = (Date.now() - t0) / 1000;
const rlqsCpu = cpuMs(svc.pid) - cpu0;
const reports = sims.reduce((n, s) => n + s.counters.reportsSent, 0) - reports0;
const usages = sims.reduce((n, s) => n + s.counters.usagesSent, 0) - usages0;
for (const s of sims) s.close();
for (const c of clients) c.close();

// ---- RLS: one call per decision ------------------------------------------------------------------
const rls = new grpc.Client(address, grpc.credentials.createInsecure());
const bodies = ids.map((_, i) => proto.encodeRateLimitRequest({ domain: 'bench', descriptors: [{ entries: [{ key: 'tenant', value: `t${i}` }] }], hitsAddend: 1 }));
const call = (body) =>
  new Promise((resolve) => rls.makeUnaryRequest('/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', (b) => b, (b) => b, body, (err) => resolve(err === null)));
for (let i = 0; i < 1000; i++) await call(bodies[i % BUCKETS]); // warm-up
cpu0 = cpuMs(svc.pid);
let calls = 0;
let failed = 0;
const t1 = Date.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async (_, w) => {
    for (let i = w; Date.now() - t1 < SECONDS * 1000; i += CONCURRENCY) {
      if (await call(bodies[i % BUCKETS])) calls++;
      else failed++;
    }
  }),
);
const rlsWall = (Date.now() - t1) / 1000;
const rlsCpu = cpuMs(svc.pid) - cpu0;
rls.close();
await svc.stop();
await redis.stop();

console.log(`\nRLQS vs RLS on Redis (WORKERS=1), ${ENVOYS} data planes × ${BUCKETS} tenants, ${SECONDS}s each\n`);
console.log('| protocol | decisions per second | server CPU ms | server CPU per unit |');
console.log('|---|---|---|---|');
console.log(`| RLQS (local enforcement, ${ENVOYS} simulated Envoys in one process) | ${fmt(decisions / rlqsWall)} (${fmt((100 * allowed) / decisions, 1)} % allowed) | ${fmt(rlqsCpu)} | ${fmt((rlqsCpu * 1000) / Math.max(1, reports))} µs per report message (${fmt(reports)} reports), ${fmt((rlqsCpu * 1000) / Math.max(1, usages), 1)} µs per bucket usage (${fmt(usages)}) |`);
console.log(`| RLS (ShouldRateLimit, ${CONCURRENCY} in flight, grpc-js) | ${fmt(calls / rlsWall)}${failed > 0 ? ` (${failed} failed)` : ''} | ${fmt(rlsCpu)} | ${fmt((rlsCpu * 1000) / Math.max(1, calls), 1)} µs per call |`);
process.exit(0);
