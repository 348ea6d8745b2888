// gRPC load comparison for ShouldRateLimit (run through bench/rls-grpc.sh). Every server gets the
// same gRPC-framed RateLimitRequest from h2load at -c10 -m10 and the figures are printed side by side:
//   ours/redis        the service, BACKEND_TYPE=redis, a rule whose limit is never hit (every request
//                     does INCRBY+EXPIRE on Redis)
//   ours/redis sliding  the same limit with `algorithm: sliding_window` (INCRBY+EXPIRE + GET of the
//                     previous window's key, still one round trip)
//   ours/redis bucket   the same rate with `algorithm: token_bucket` (one EVALSHA of the GCRA script)
//   ours/redis two limits  one descriptor whose rule lists two fixed-window limits (`rate_limits`:
//                     an hour and a day): two INCRBY+EXPIRE in the same round trip
//   baseline/redis    `ours/redis` run from another checkout (BASELINE_ROOT=<dir>, built), e.g. the
//                     commit before a change, interleaved with ours in every round
//   ours/local-cache  the service, a rule with requests_per_unit 0 and LocalCacheSizeInBytes set:
//                     over-limit answers come from the local cache without Redis
//   ours/memory       the service on the embedded store
//   lean no-op        our gRPC server with a constant answer (ceiling of our stack)
//   grpc-js no-op     @grpc/grpc-js with a constant answer (ceiling of grpc-js)
//   grpc-js + rlf     @grpc/grpc-js + protobufjs + rate-limiter-flexible on ioredis
// Environment: DURATION (s, default 10), CLIENTS (10), STREAMS (10), ONLY (comma list of names),
// ROUNDS (default 1): the servers are measured in turn ROUNDS times and the medians printed.
// `bench/rls-grpc.sh algorithms` measures only the three ours/redis rows (fixed, sliding, bucket);
// `bench/rls-grpc.sh limits` one limit against two per descriptor (and baseline/redis with BASELINE_ROOT).
import { join } from 'node:path';
import { encodeRateLimitRequest } from '../packages/rls-proto/dist/src/index.js';
import { cpuMs, fmt, freePort, grpcFrame, h2loadGrpc, repoRoot, start, startRedis, rulesEnv, table, waitPort } from './lib/harness.mjs';

const DURATION = Number(process.env.DURATION ?? 10);
const CLIENTS = Number(process.env.CLIENTS ?? 10);
const STREAMS = Number(process.env.STREAMS ?? 10);
const ONLY = process.env.ONLY?.split(',');
const ROUNDS = Math.max(1, Number(process.env.ROUNDS ?? 1));
const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

function rulesDir() {
  return rulesEnv(`domain: bench
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 4000000000 }
  - key: blocked
    rate_limit: { unit: hour, requests_per_unit: 0 }
  - key: sliding
    rate_limit: { unit: hour, requests_per_unit: 4000000000, algorithm: sliding_window }
  - key: bucket
    rate_limit: { unit: hour, requests_per_unit: 4000000000, algorithm: token_bucket, burst: 4000000000 }
  - key: multi
    rate_limits:
      - { unit: hour, requests_per_unit: 4000000000 }
      - { unit: day, requests_per_unit: 4000000000 }
`);
}

// The baseline runs the rules it understands (a checkout from before rate_limits would refuse them).
function baselineRulesDir() {
  return rulesEnv(`domain: bench
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 4000000000 }
`);
}

function body(key) {
  return grpcFrame(encodeRateLimitRequest({ domain: 'bench', descriptors: [{ entries: [{ key, value: 'c1' }] }], hitsAddend: 0 }));
}

const redis = await startRedis();
const rules = rulesDir();

const BASELINE_ROOT = process.env.BASELINE_ROOT;

async function ours(name, key, extraEnv, root = repoRoot, rulesFor = rules) {
  const port = await freePort();
  const httpPort = await freePort();
  const debugPort = await freePort();
  const s = start(process.execPath, [`${root}services/ratelimit/bin/ratelimit.js`], {
    ...rulesFor,
    GRPC_HOST: '127.0.0.1', GRPC_PORT: String(port), HOST: '127.0.0.1', PORT: String(httpPort), DEBUG_HOST: '127.0.0.1', DEBUG_PORT: String(debugPort),
    BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url,
    LOG_LEVEL: 'error', USE_STATS_PUSH: 'false', WORKERS: '1', ...extraEnv,
  });
  await waitPort(port, name);
  return { name, port, body: body(key), pids: [s.pid], extraPids: [redis.pid], stop: s.stop };
}

async function external(name, script, args) {
  const port = await freePort();
  const s = start(process.execPath, [`${repoRoot}bench/servers/${script}`, String(port), ...args]);
  await waitPort(port, name);
  return { name, port, body: body('client'), pids: [s.pid], extraPids: [redis.pid], stop: s.stop };
}

const scenarios = [
  ['ours/redis', () => ours('ours/redis', 'client', {})],
  ['ours/redis sliding', () => ours('ours/redis sliding', 'sliding', {})],
  ['ours/redis bucket', () => ours('ours/redis bucket', 'bucket', {})],
  ['ours/redis two limits', () => ours('ours/redis two limits', 'multi', {})],
  ...(BASELINE_ROOT ? [['baseline/redis', () => ours('baseline/redis', 'client', {}, BASELINE_ROOT.endsWith('/') ? BASELINE_ROOT : BASELINE_ROOT + '/', baselineRulesDir())]] : []),
  ['ours/local-cache', () => ours('ours/local-cache', 'blocked', { LocalCacheSizeInBytes: '1048576' })],
  ['ours/memory', () => ours('ours/memory', 'client', { BACKEND_TYPE: 'memory' })],
  ['lean no-op', () => external('lean no-op', 'lean-noop.mjs', [])],
  ['grpc-js no-op', () => external('grpc-js no-op', 'grpcjs-noop.mjs', [])],
  ['grpc-js + rlf', () => external('grpc-js + rlf', 'grpcjs-rlf.mjs', [redis.url])],
];

// Servers start once; each round runs every server in turn (alternating, so a slow spell of a
// shared machine hits all of them) and the table shows per-server medians over the rounds.
const servers = [];
for (const [name, make] of scenarios) {
  if (ONLY && !ONLY.includes(name)) continue;
  servers.push(await make());
}
const runs = new Map(servers.map((s) => [s.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const srv of servers) {
    const redisCpu0 = cpuMs(redis.pid);
    const r = await h2loadGrpc({ port: srv.port, path: PATH, body: srv.body, clients: CLIENTS, streams: STREAMS, durationS: DURATION, serverPids: srv.pids });
    const redisCpu = cpuMs(redis.pid) - redisCpu0;
    runs.get(srv.name).push({ ...r, redisUsPerReq: (redisCpu * 1000) / Math.max(1, r.requests) });
  }
}
for (const srv of servers) await srv.stop();
await redis.stop();

const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length === 0 ? NaN : v.length % 2 === 1 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const FIELDS = ['rps', 'p50', 'p99', 'cpuUsPerReq', 'clientUsPerReq', 'redisUsPerReq', 'stealPct', 'failed'];
const results = servers.map((srv) => {
  const rs = runs.get(srv.name);
  return { name: srv.name, rounds: rs, ...Object.fromEntries(FIELDS.map((f) => [f, f === 'failed' ? rs.reduce((a, r) => a + r.failed, 0) : median(rs.map((r) => r[f]))])) };
});

console.log(
  `\nShouldRateLimit over gRPC, h2load -c${CLIENTS} -m${STREAMS} -t1, ${DURATION}s per server (after a 2 s warm-up), 1 descriptor` +
    (ROUNDS > 1 ? `; medians of ${ROUNDS} alternating rounds` : '') + '\n',
);
table(results, [
  { title: 'server', get: (r) => r.name },
  { title: 'req/s', get: (r) => fmt(r.rps) },
  { title: 'p50 ms', get: (r) => fmt(r.p50, 2) },
  { title: 'p99 ms', get: (r) => fmt(r.p99, 2) },
  { title: 'server CPU µs/req', get: (r) => fmt(r.cpuUsPerReq, 1) },
  { title: 'redis CPU µs/req', get: (r) => fmt(r.redisUsPerReq, 1) },
  { title: 'h2load CPU µs/req', get: (r) => fmt(r.clientUsPerReq, 1) },
  { title: 'steal %', get: (r) => fmt(r.stealPct, 0) },
  { title: 'failed', get: (r) => r.failed },
  ...(ROUNDS > 1 ? [{ title: 'req/s per round', get: (r) => r.rounds.map((x) => fmt(x.rps)).join(' ') }] : []),
]);
const by = Object.fromEntries(results.map((r) => [r.name, r]));
// With several rounds: the median of the per-round ratios (each compares two runs a few seconds
// apart, so a slow spell of the machine mostly hits both), then the ratio of the medians and each
// round's ratio. With one round: the ratio of the two runs.
const ratio = (a, b) => {
  if (!by[a] || !by[b]) return '-';
  const each = by[a].rounds.map((r, i) => r.rps / by[b].rounds[i].rps);
  if (ROUNDS === 1) return fmt(each[0], 2) + '×';
  return `${fmt(median(each), 2)}× median of rounds (ratio of medians ${fmt(by[a].rps / by[b].rps, 2)}×; rounds: ${each.map((x) => fmt(x, 2)).join(', ')})`;
};
console.log('');
console.log(`ours/redis vs grpc-js + rlf:        ${ratio('ours/redis', 'grpc-js + rlf')}  (target ≥ 1.5×)`);
console.log(`ours/redis vs grpc-js no-op:        ${ratio('ours/redis', 'grpc-js no-op')}  (target ≥ 0.70×)`);
console.log(`ours/local-cache vs ours/redis:     ${ratio('ours/local-cache', 'ours/redis')}  (target ≥ 2×)`);
console.log(`ours/redis vs lean no-op:           ${ratio('ours/redis', 'lean no-op')}`);
console.log(`ours/redis sliding vs ours/redis:   ${ratio('ours/redis sliding', 'ours/redis')}  (target ≥ 0.75×)`);
console.log(`ours/redis bucket vs ours/redis:    ${ratio('ours/redis bucket', 'ours/redis')}  (target ≥ 0.75×)`);
console.log(`ours/redis two limits vs ours/redis: ${ratio('ours/redis two limits', 'ours/redis')}  (target ≥ 0.8×)`);
console.log(`ours/redis vs baseline/redis:       ${ratio('ours/redis', 'baseline/redis')}  (target within 5%: 0.95–1.05×)`);
// On a machine shared by the load generator, the service and Redis, throughput swings with other jobs; the
// CPU all three spend per request is steadier: its inverse ratio is the throughput ratio when they saturate it.
const cpuTotal = (name) => (by[name] ? by[name].cpuUsPerReq + by[name].redisUsPerReq + by[name].clientUsPerReq : NaN);
for (const alg of ['ours/redis sliding', 'ours/redis bucket', 'ours/redis two limits']) {
  if (by[alg] && by['ours/redis']) {
    console.log(`${alg} vs ours/redis by CPU per request (service + Redis + h2load): ${fmt(cpuTotal('ours/redis') / cpuTotal(alg), 2)}×`);
  }
}
// The same per round (each round's two runs are seconds apart, so a busy spell mostly hits both): the
// median of the per-round ratios of CPU per request, with every round's ratio for the spread.
const roundCpu = (r) => r.cpuUsPerReq + r.redisUsPerReq + r.clientUsPerReq;
const cpuRatio = (a, b, get) => {
  if (!by[a] || !by[b] || ROUNDS === 1) return undefined;
  const each = by[a].rounds.map((r, i) => get(by[b].rounds[i]) / get(r));
  return `${fmt(median(each), 2)}× median of rounds (rounds: ${each.map((x) => fmt(x, 2)).join(', ')})`;
};
for (const [a, b, what] of [
  ['ours/redis two limits', 'ours/redis', 'target ≥ 0.8×'],
  ['ours/redis', 'baseline/redis', 'target 0.95–1.05×'],
]) {
  const total = cpuRatio(a, b, roundCpu);
  if (total === undefined) continue;
  console.log(`${a} vs ${b}, per-round CPU per request (service + Redis + h2load): ${total}  (${what})`);
  console.log(`${a} vs ${b}, per-round service CPU per request only: ${cpuRatio(a, b, (r) => r.cpuUsPerReq)}`);
}
