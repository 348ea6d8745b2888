// Single process vs worker mode (WORKERS): ShouldRateLimit over gRPC with h2load against the
// service on Redis and on memcached, once with WORKERS=1 and once with WORKERS=N (default 2).
// Run: `node bench/rls-workers.mjs` (the service runs from sources through tsx).
//
// On a small machine h2load, the store and the workers share the cores, so raw req/s understates
// what worker mode gives a dedicated host. The table therefore also prints the server's CPU per
// request (primary + workers, from /proc) and a projection: the req/s the server could sustain on
// min(workers, cores) dedicated cores at that CPU cost (1 core for a single process).
// Environment: DURATION (s, default 10), CLIENTS (10), STREAMS (10), WORKERS (2), ONLY (names).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { encodeRateLimitRequest } from '../packages/rls-proto/dist/src/index.js';
import { cpuMs, fmt, freePort, grpcFrame, h2loadGrpc, repoRoot, start, startRedis, rulesEnv, table, waitPort } from './lib/harness.mjs';

const DURATION = Number(process.env.DURATION ?? 10);
const CLIENTS = Number(process.env.CLIENTS ?? 10);
const STREAMS = Number(process.env.STREAMS ?? 10);
const WORKERS = Number(process.env.WORKERS ?? 2);
const ONLY = process.env.ONLY?.split(',');
const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const CORES = availableParallelism();

function rulesDir() {
  return rulesEnv('domain: bench\ndescriptors:\n  - key: client\n    rate_limit: { unit: hour, requests_per_unit: 4000000000 }\n');
}

async function startMemcached() {
  const port = await freePort();
  const m = start('memcached', ['-l', '127.0.0.1', '-p', String(port), '-U', '0', '-t', '1', ...(process.getuid?.() === 0 ? ['-u', 'root'] : [])]);
  await waitPort(port, 'memcached');
  return { ...m, url: `127.0.0.1:${port}` };
}

/** The process and its direct children (the workers). */
function processTree(pid) {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return [pid, ...kids];
  } catch {
    return [pid];
  }
}

const body = grpcFrame(encodeRateLimitRequest({ domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: 'c1' }] }], hitsAddend: 1 }));
const rules = rulesDir();
const redis = await startRedis();
const memcached = await startMemcached();
const stores = { redis: { BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url }, mcstore: { BACKEND_TYPE: 'mcstore', MCSTORE_HOST_PORT: memcached.url } };

async function ours(name, store, workers) {
  const port = await freePort();
  const s = start(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(`${repoRoot}services/ratelimit/src/main.ts`)}).then((m) => m.run())`], {
    ...rules,
    ...stores[store],
    WORKERS: String(workers),
    GRPC_HOST: '127.0.0.1', GRPC_PORT: String(port), HOST: '127.0.0.1', PORT: String(await freePort()),
    DEBUG_HOST: '127.0.0.1', DEBUG_PORT: String(await freePort()),
    LOG_LEVEL: 'info', USE_STATS_PUSH: 'false',
  });
  await waitPort(port, name);
  if (workers > 1) {
    const deadline = Date.now() + 20_000;
    while (!s.output().includes('all workers listening')) {
      if (Date.now() > deadline) throw new Error(`${name}: workers did not start\n${s.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { name, port, workers, pids: processTree(s.pid), stop: s.stop };
}

const scenarios = [];
for (const store of ['redis', 'mcstore']) {
  scenarios.push([`${store} ×1`, () => ours(`${store} ×1`, store, 1)]);
  scenarios.push([`${store} ×${WORKERS}`, () => ours(`${store} ×${WORKERS}`, store, WORKERS)]);
}

const results = [];
for (const [name, make] of scenarios) {
  if (ONLY && !ONLY.includes(name)) continue;
  const srv = await make();
  const storePid = name.startsWith('redis') ? redis.pid : memcached.pid;
  const store0 = cpuMs(storePid);
  const primary0 = cpuMs(srv.pids[0]);
  const r = await h2loadGrpc({ port: srv.port, path: PATH, body, clients: CLIENTS, streams: STREAMS, durationS: DURATION, serverPids: srv.pids });
  const storeUs = ((cpuMs(storePid) - store0) * 1000) / Math.max(1, r.requests);
  // In worker mode the first pid is the primary: its share shows what accepting and relaying stats cost.
  const primaryUs = srv.workers > 1 ? ((cpuMs(srv.pids[0]) - primary0) * 1000) / Math.max(1, r.requests) : NaN;
  const cores = Math.min(srv.workers, CORES);
  results.push({ name, ...r, storeUs, primaryUs, projected: (cores * 1e6) / r.cpuUsPerReq });
  await srv.stop();
}
await Promise.all([redis.stop(), memcached.stop()]);

console.log(`\nShouldRateLimit over gRPC, h2load -c${CLIENTS} -m${STREAMS} -t1, ${DURATION}s per server, ${CORES} cores shared by h2load, the store and the service\n`);
table(results, [
  { title: 'server', get: (r) => r.name },
  { title: 'req/s', get: (r) => fmt(r.rps) },
  { title: 'p50 ms', get: (r) => fmt(r.p50, 2) },
  { title: 'p99 ms', get: (r) => fmt(r.p99, 2) },
  { title: 'server CPU µs/req', get: (r) => fmt(r.cpuUsPerReq, 1) },
  { title: 'of which primary', get: (r) => (Number.isNaN(r.primaryUs) ? '-' : fmt(r.primaryUs, 1)) },
  { title: 'store CPU µs/req', get: (r) => fmt(r.storeUs, 1) },
  { title: 'projected req/s (dedicated cores)', get: (r) => fmt(r.projected) },
  { title: 'failed', get: (r) => r.failed },
]);
const by = Object.fromEntries(results.map((r) => [r.name, r]));
for (const store of ['redis', 'mcstore']) {
  const one = by[`${store} ×1`];
  const many = by[`${store} ×${WORKERS}`];
  if (one === undefined || many === undefined) continue;
  console.log(`${store}: measured ${fmt(many.rps / one.rps, 2)}×, projected with dedicated cores ${fmt(many.projected / one.projected, 2)}× (target ≥ 1.7×)`);
}
