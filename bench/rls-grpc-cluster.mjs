// ShouldRateLimit over gRPC against Redis Cluster (3 masters on this host) with 1 and 5
// descriptors per request, next to single-mode Redis with the same requests. The 5 descriptors of
// a request hash to different slots, so in cluster mode their commands go to up to 3 nodes; the
// store sends the per-node groups in parallel, so 5 descriptors should cost well under 5× the
// latency of 1 (target ≤ 2×). Two load shapes: -c1 -m1 (one request at a time: latency is round
// trips) and -c10 -m10 (throughput; latency then includes queueing behind CPU).
// Environment: DURATION (s, default 5), ONLY (comma list of scenario names).
// Run: bench/rls-grpc.sh cluster   (or node bench/rls-grpc-cluster.mjs)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { encodeRateLimitRequest } from '../packages/rls-proto/dist/src/index.js';
import { cpuMs, fmt, freePort, grpcFrame, h2loadGrpc, repoRoot, start, startRedis, rulesEnv, table, tmp, waitPort } from './lib/harness.mjs';

const DURATION = Number(process.env.DURATION ?? 5);
const ONLY = process.env.ONLY?.split(',');
const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

function cli(port, ...args) {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

async function startCluster(n = 3) {
  const nodes = [];
  for (let i = 0; i < n; i++) {
    const port = await freePort();
    const bus = await freePort();
    const dir = tmp('bench-cluster-');
    const s = start('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(bus)]);
    await waitPort(port, 'redis cluster node');
    nodes.push({ ...s, port, bus, url: `127.0.0.1:${port}` });
  }
  const per = Math.floor(16384 / n);
  nodes.forEach((node, i) => cli(node.port, 'CLUSTER', 'ADDSLOTSRANGE', String(i * per), String(i === n - 1 ? 16383 : (i + 1) * per - 1)));
  for (const node of nodes.slice(1)) cli(nodes[0].port, 'CLUSTER', 'MEET', '127.0.0.1', String(node.port), String(node.bus));
  const deadline = Date.now() + 20000;
  while (!nodes.every((node) => cli(node.port, 'CLUSTER', 'INFO').includes('cluster_state:ok'))) {
    if (Date.now() > deadline) throw new Error('cluster did not become ok');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { nodes, url: nodes.map((x) => x.url).join(','), pids: nodes.map((x) => x.pid), stop: () => Promise.all(nodes.map((x) => x.stop())) };
}

function rulesDir() {
  return rulesEnv('domain: bench\ndescriptors:\n  - key: client\n    rate_limit: { unit: hour, requests_per_unit: 4000000000 }\n');
}

const body = (n) =>
  grpcFrame(encodeRateLimitRequest({ domain: 'bench', descriptors: Array.from({ length: n }, (_v, i) => ({ entries: [{ key: 'client', value: `c${i}` }] })), hitsAddend: 0 }));

const rules = rulesDir();
const cluster = await startCluster();
const single = await startRedis();

async function service(env) {
  const port = await freePort();
  const httpPort = await freePort();
  const mainTs = `${repoRoot}services/ratelimit/src/main.ts`;
  const s = start(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], {
    ...rules, GRPC_HOST: '127.0.0.1', GRPC_PORT: String(port), HOST: '127.0.0.1', PORT: String(httpPort), DEBUG_PORT: String(await freePort()),
    BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', LOG_LEVEL: 'error', USE_STATS_PUSH: 'false', WORKERS: '1', ...env,
  });
  await waitPort(port, 'ratelimit', 60000);
  return { port, s };
}

const modes = [
  ['cluster', { KVSTORE_TYPE: 'cluster', KVSTORE_URL: cluster.url }, cluster.pids],
  ['single', { KVSTORE_TYPE: 'single', KVSTORE_URL: single.url }, [single.pid]],
];
const shapes = [
  ['c1 m1', 1, 1],
  ['c10 m10', 10, 10],
];
const results = [];
for (const [mode, env, redisPids] of modes) {
  const srv = await service(env);
  for (const [shape, clients, streams] of shapes) {
    for (const n of [1, 5]) {
      const name = `${mode} ${n}d ${shape}`;
      if (ONLY && !ONLY.some((o) => name.includes(o))) continue;
      const redis0 = redisPids.reduce((s, p) => s + cpuMs(p), 0);
      const r = await h2loadGrpc({ port: srv.port, path: PATH, body: body(n), clients, streams, durationS: DURATION, serverPids: [srv.s.pid] });
      const redisCpu = redisPids.reduce((s, p) => s + cpuMs(p), 0) - redis0;
      results.push({ name, mode, shape, n, ...r, redisUsPerReq: (redisCpu * 1000) / Math.max(1, r.requests) });
    }
  }
  await srv.s.stop();
}
await cluster.stop();
await single.stop();

console.log(`\nShouldRateLimit over gRPC, Redis Cluster (3 masters) vs single Redis, ${DURATION}s per run after a 2 s warm-up\n`);
table(results, [
  { title: 'scenario', get: (r) => r.name },
  { title: 'req/s', get: (r) => fmt(r.rps) },
  { title: 'p50 ms', get: (r) => fmt(r.p50, 3) },
  { title: 'p99 ms', get: (r) => fmt(r.p99, 3) },
  { title: 'server CPU µs/req', get: (r) => fmt(r.cpuUsPerReq, 1) },
  { title: 'redis CPU µs/req', get: (r) => fmt(r.redisUsPerReq, 1) },
  { title: 'failed', get: (r) => r.failed },
]);
console.log('');
for (const [mode] of modes) {
  for (const [shape] of shapes) {
    const one = results.find((r) => r.mode === mode && r.shape === shape && r.n === 1);
    const five = results.find((r) => r.mode === mode && r.shape === shape && r.n === 5);
    if (one && five) console.log(`${mode} ${shape}: 5 descriptors / 1 descriptor p50 latency = ${fmt(five.p50 / one.p50, 2)}×  (target ≤ 2× in cluster mode)`);
  }
}
