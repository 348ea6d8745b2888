// Matching by CIDR through the service (issue 25's "CIDR matching with 100,000 entries vs none",
// target ≥ 0.9×): three ratelimit processes on the memory store (WORKERS=1), one with a value-less
// `remote_address` rule only (`none`), one with the same rule beside 100,000 `cidr:` rules (the
// workload of bench/cidr-match.mjs), and one with the same blocks as one rule (`cidr: [...]`, `list`),
// take turns for ROUNDS rounds under the same gRPC load. Each
// request names one address of a fixed pool of 4,096 (half inside some block), so the server matches
// a different address every call (h2load would send one body; bench/lib/grpc-raw-load.mjs speaks
// HTTP/2 itself and keeps the server's one core busy). The figure is decisions per second of the
// server's CPU time (the load client runs beside it on the other core); wall throughput is printed too.
// Environment: SECONDS (per server and round, default 5), ROUNDS (default 5), SESSIONS (4), STREAMS (32),
// SERVER_NODE_OPTIONS (NODE_OPTIONS for the servers only, e.g. --max-semi-space-size=1).
// Run: npx tsc -b && node bench/cidr-service.mjs
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeRateLimitRequest } from '../packages/rls-proto/dist/src/index.js';
import { cpuMs, fmt, freePort, grpcFrame, repoRoot, rulesEnv, start, tmp, waitPort } from './lib/harness.mjs';
import { addresses, blocks, POOL, rulesYaml } from './lib/cidr-workload.mjs';

const SECONDS = Number(process.env.SECONDS ?? 5);
const ROUNDS = Math.max(1, Number(process.env.ROUNDS ?? 5));
const SESSIONS = Number(process.env.SESSIONS ?? 4);
const STREAMS = Number(process.env.STREAMS ?? 32);
const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

const big = blocks(100_000);
const pool = addresses(big);
const dir = tmp('bench-cidr-');
const bodiesFile = join(dir, 'bodies.json');
writeFileSync(bodiesFile, JSON.stringify(pool.map((value) => grpcFrame(encodeRateLimitRequest({ domain: 'bench', descriptors: [{ entries: [{ key: 'remote_address', value }] }], hitsAddend: 0 })).toString('base64'))));

async function server(name, cidrs, list = false) {
  const port = await freePort();
  const t0 = Date.now();
  const s = start(process.execPath, [`${repoRoot}services/ratelimit/bin/ratelimit.js`], {
    ...rulesEnv(rulesYaml(cidrs, { list })),
    GRPC_HOST: '127.0.0.1', GRPC_PORT: String(port), HOST: '127.0.0.1', PORT: String(await freePort()), DEBUG_HOST: '127.0.0.1', DEBUG_PORT: String(await freePort()),
    ...(process.env.SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SERVER_NODE_OPTIONS } : {}),
    BACKEND_TYPE: 'memory', LOG_LEVEL: 'error', USE_STATS_PUSH: 'false', USE_PROMETHEUS: 'false', WORKERS: '1', RUNTIME_WATCH_ROOT: 'false',
  });
  await waitPort(port, name, 300_000);
  return { name, port, pid: s.pid, stop: s.stop, startS: (Date.now() - t0) / 1000, cpu: [], wall: [] };
}

function load(port, ms) {
  const c = start(process.execPath, [`${repoRoot}bench/lib/grpc-raw-load.mjs`, String(port), PATH, bodiesFile, String(ms), String(SESSIONS), String(STREAMS)]);
  return new Promise((resolve, reject) => {
    c.child.on('exit', () => {
      try {
        resolve(JSON.parse(c.output().trim().split('\n').pop()));
      } catch (e) {
        reject(new Error(`load client: ${c.output()}`, { cause: e }));
      }
    });
  });
}

async function measure(s) {
  const cpu0 = cpuMs(s.pid);
  const r = await load(s.port, SECONDS * 1000);
  const cpu = cpuMs(s.pid) - cpu0;
  if (r.failed > 0) console.error(`${s.name}: ${r.failed} calls failed`);
  s.cpu.push(r.ok / (cpu / 1000));
  s.wall.push(r.ok / SECONDS);
}

const servers = [await server('none', []), await server('100000', big), await server('list', big, true)];
for (const s of servers) await load(s.port, 2000); // warm-up: JIT and counters
for (let r = 0; r < ROUNDS; r++) for (const s of servers) await measure(s);
for (const s of servers) await s.stop();

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
console.log(`\nCIDR matching through the service (gRPC, memory store, WORKERS=1), ${POOL} distinct addresses, ${SESSIONS}×${STREAMS} calls in flight, ${SECONDS}s × ${ROUNDS} alternating rounds\n`);
console.log('| rules | decisions per server CPU-second (median) | per round | decisions per wall second (median) | start-up s |');
console.log('|---|---|---|---|---|');
for (const s of servers) console.log(`| ${s.name} | ${fmt(median(s.cpu))} | ${s.cpu.map((x) => fmt(x)).join(' ')} | ${fmt(median(s.wall))} | ${fmt(s.startS, 1)} |`);
for (const s of servers.slice(1)) {
  const ratios = s.cpu.map((x, i) => x / servers[0].cpu[i]);
  console.log(`${s.name === 'list' ? '\nlist (one rule) vs none' : '\n100000 vs none'}: ${fmt(median(ratios), 2)}× per server CPU-second (median of per-round ratios ${ratios.map((x) => fmt(x, 2)).join(', ')}; target ≥ 0.9×)`);
}
process.exit(0);
