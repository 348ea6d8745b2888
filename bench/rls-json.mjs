// HTTP /json load for ShouldRateLimit (run through bench/rls-json.sh): wrk POSTs the same JSON
// RateLimitRequest; printed: req/s, p50/p99 latency and the service's CPU time per request.
//   ours/redis        BACKEND_TYPE=redis, a limit never hit (every request touches Redis)
//   ours/local-cache  an always-over-limit rule answered from the local over-limit cache
//   ours/memory       the embedded store
// Environment: DURATION (s, default 10), CONNECTIONS (50), ONLY (comma list of names).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuMs, fmt, freePort, repoRoot, start, startRedis, table, tmp, waitPort, wrkPost } from './lib/harness.mjs';

const DURATION = Number(process.env.DURATION ?? 10);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const ONLY = process.env.ONLY?.split(',');

const root = tmp('bench-rules-');
const dir = join(root, 'current', 'rl', 'config');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'bench.yaml'), `domain: bench
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 4000000000 }
  - key: blocked
    rate_limit: { unit: hour, requests_per_unit: 0 }
`);
const rules = { RUNTIME_ROOT: join(root, 'current'), RUNTIME_SUBDIRECTORY: 'rl', RUNTIME_APPDIRECTORY: 'config' };
const redis = await startRedis();

const scenarios = [
  ['ours/redis', 'client', {}],
  ['ours/local-cache', 'blocked', { LocalCacheSizeInBytes: '1048576' }],
  ['ours/memory', 'client', { BACKEND_TYPE: 'memory' }],
];
const results = [];
for (const [name, key, env] of scenarios) {
  if (ONLY && !ONLY.includes(name)) continue;
  const port = await freePort();
  const s = start(process.execPath, [`${repoRoot}services/ratelimit/bin/ratelimit.js`], {
    ...rules, HOST: '127.0.0.1', PORT: String(port), GRPC_HOST: '127.0.0.1', GRPC_PORT: String(await freePort()),
    BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url, LOG_LEVEL: 'error', USE_STATS_PUSH: 'false', WORKERS: '1', ...env,
  });
  await waitPort(port, name);
  const body = JSON.stringify({ domain: 'bench', descriptors: [{ entries: [{ key, value: 'c1' }] }] });
  const redis0 = cpuMs(redis.pid);
  const r = await wrkPost({ port, path: '/json', body, connections: CONNECTIONS, durationS: DURATION, serverPids: [s.pid] });
  const redisUs = ((cpuMs(redis.pid) - redis0) * 1000) / Math.max(1, r.requests);
  results.push({ name, ...r, cpuUsPerReq: r.cpuUsPerReqFn(r.requests), redisUs });
  await s.stop();
}
await redis.stop();

console.log(`\nShouldRateLimit over HTTP POST /json, wrk -c${CONNECTIONS} -t1, ${DURATION}s per server (after a 2 s warm-up), 1 descriptor\n`);
table(results, [
  { title: 'server', get: (r) => r.name },
  { title: 'req/s', get: (r) => fmt(r.rps) },
  { title: 'p50 ms', get: (r) => fmt(r.p50, 2) },
  { title: 'p99 ms', get: (r) => fmt(r.p99, 2) },
  { title: 'server CPU µs/req', get: (r) => fmt(r.cpuUsPerReq, 1) },
  { title: 'redis CPU µs/req', get: (r) => fmt(r.redisUs, 1) },
  { title: 'non-2xx', get: (r) => r.non2xx },
]);
console.log('\n(non-2xx is expected for ours/local-cache: every answer there is a 429.)');
