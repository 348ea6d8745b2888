// A well-behaved client's latency alone and beside each attack of issues 12 and 23 (run through
// bench/hostile.sh; see bench/README.md). For every attack a fresh service process (dist/, one
// process, on a private redis-server) is started; the well-behaved client (bench/hostile-client.mjs,
// its own process, open loop at --rps) runs one phase alone and one phase beside the attack (in
// its own process too, bench/hostile-attacker.mjs, at --attacker-nice), and the table shows
// p50/p99 of both, the ratio, the server's RSS and what happened to the attacker.
// Everything is bounded: each phase lasts --seconds, each attack has its own count bound, and the
// bench stops every process it started when it ends (or on Ctrl-C).
import { fork, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { encodeRateLimitRequest } from '../packages/rls-proto/dist/src/index.js';
import { ATTACKS } from './lib/hostile-attacks.mjs';
import { cpuMs, fmt, freePort, grpcFrame, repoRoot, start, startRedis, rulesEnv, table, waitPort } from './lib/harness.mjs';

const USAGE = `usage: bash bench/hostile.sh [options]
  --seconds N      length of each phase (alone, then under attack), default 20
  --rps N          the well-behaved client's request rate (open loop), default 200
  --timeout-ms N   a request not answered within this counts as failed (and as this latency), default 2000
  --only a,b       attacks to run (${ATTACKS.map((a) => a.name).join(', ')})
  --idle N         idle TCP connections of the 'connections' attack (default: min(4000, fd budget / 2))
  --slow N         slow /json requests of the 'connections' attack (same default)
  --values N       distinct values fed to the detailed_metric rule before 'stats-scrape', default 100000
  --attacker-nice N  niceness of the attacker process (0–19), default 10: on a machine whose cores the
                   attacker shares with the service, it then takes only CPU the others leave idle, as
                   an attacker on another machine would; 0 shows the shared-cores case`;

const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    rps: { type: 'string', default: '200' },
    'timeout-ms': { type: 'string', default: '2000' },
    only: { type: 'string' },
    idle: { type: 'string' },
    slow: { type: 'string' },
    values: { type: 'string', default: '100000' },
    'attacker-nice': { type: 'string', default: '10' },
    help: { type: 'boolean', default: false },
  },
});
if (opt.help) {
  console.log(USAGE);
  process.exit(0);
}
const num = (name, min) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < min) {
    console.error(`--${name} must be an integer ≥ ${min} (got ${opt[name]})\n${USAGE}`);
    process.exit(2);
  }
  return v;
};
const SECONDS = num('seconds', 1);
const RPS = num('rps', 1);
const TIMEOUT_MS = num('timeout-ms', 100);
const selected = opt.only ? opt.only.split(',').map((s) => s.trim()) : ATTACKS.map((a) => a.name);
const unknown = selected.filter((n) => !ATTACKS.some((a) => a.name === n));
if (unknown.length) {
  console.error(`unknown attack(s): ${unknown.join(', ')}\n${USAGE}`);
  process.exit(2);
}

for (const f of ['services/ratelimit/dist/src/main.js', 'packages/testkit/dist/src/h2-raw.js', 'packages/rls-proto/dist/src/index.js']) {
  if (!existsSync(join(repoRoot, f))) {
    console.error(`${f} is missing: run \`npx tsc -b\` first`);
    process.exit(2);
  }
}

// File descriptors: this process holds one per attacking socket and the service one per accepted
// socket, both under the same soft limit (inherited). Keep 1,000 for everything else.
const fdLimit = Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 1024);
const fdBudget = Math.max(0, fdLimit - 1000);
let idle = opt.idle !== undefined ? num('idle', 0) : Math.min(4000, Math.floor(fdBudget / 2));
let slow = opt.slow !== undefined ? num('slow', 0) : Math.min(4000, Math.floor(fdBudget / 2));
if (idle + slow > fdBudget) {
  const scale = fdBudget / (idle + slow);
  console.log(`note: --idle ${idle} + --slow ${slow} exceed the fd budget ${fdBudget} (limit ${fdLimit} − 1000); scaled down`);
  idle = Math.floor(idle * scale);
  slow = Math.floor(slow * scale);
}
const VALUES = num('values', 0);
const NICE = Math.min(19, num('attacker-nice', 0));

const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

// Limits never hit: every request takes the Redis path (INCRBY + EXPIRE), the path whose
// latency the limits must not cost. `user` is the per-value statistics rule of stats-scrape.
function rulesDir() {
  return rulesEnv(`domain: bench
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 4000000000 }
  - key: attacker
    rate_limit: { unit: hour, requests_per_unit: 4000000000 }
  - key: user
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 4000000000 }
`);
}

const redis = await startRedis();
const rules = rulesDir();

/** `env`: settings an attack needs on the service (e.g. store-eviction's memory store). */
async function startService(env = {}) {
  const [grpcPort, httpPort, debugPort] = [await freePort(), await freePort(), await freePort()];
  const s = start(process.execPath, [`${repoRoot}services/ratelimit/bin/ratelimit.js`], {
    ...rules,
    GRPC_HOST: '127.0.0.1', GRPC_PORT: String(grpcPort), HOST: '127.0.0.1', PORT: String(httpPort), DEBUG_HOST: '127.0.0.1', DEBUG_PORT: String(debugPort),
    BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url,
    LOG_LEVEL: 'error', USE_STATS_PUSH: 'false', WORKERS: '1', ...env,
  });
  try {
    await waitPort(grpcPort, 'ratelimit gRPC');
    await waitPort(httpPort, 'ratelimit HTTP');
    await waitPort(debugPort, 'ratelimit debug');
  } catch (err) {
    console.error(s.output());
    throw err;
  }
  return { ...s, grpcPort, httpPort, debugPort };
}

function rssMb(pid) {
  try {
    const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return kb / 1024;
  } catch {
    return NaN; // the process is gone
  }
}

const clients = new Set();
process.once('exit', () => {
  for (const c of clients) c.kill('SIGKILL');
});

function nextMessage(child, type, timeoutMs) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`client sent no '${type}' within ${timeoutMs} ms`)), timeoutMs);
    const onMsg = (m) => {
      if (m?.type !== type) return;
      clearTimeout(t);
      child.off('message', onMsg);
      resolve(m);
    };
    child.on('message', onMsg);
    child.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`client exited (${code}) before '${type}'`));
    });
  });
}

const clientBody = grpcFrame(encodeRateLimitRequest({ domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: 'good' }] }], hitsAddend: 0 }));
const WARMUP_MS = 1000;

/** Resolves with the first message of one of `types`; rejects on timeout or exit. */
function nextOf(child, types, timeoutMs) {
  return Promise.race(types.map((t) => nextMessage(child, t, timeoutMs)));
}

/** The attack's own process, under `nice` when NICE > 0 (see --attacker-nice). */
async function startAttacker(attack, ctx) {
  const { log: _log, ...plain } = ctx;
  const argv = [new URL('./hostile-attacker.mjs', import.meta.url).pathname, JSON.stringify({ name: attack.name, ctx: plain })];
  const opts = { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] };
  const child = NICE > 0 ? spawn('nice', ['-n', String(NICE), process.execPath, ...argv], opts) : spawn(process.execPath, argv, opts);
  clients.add(child);
  child.once('exit', () => clients.delete(child));
  child.on('message', (m) => {
    if (m?.type === 'log') ctx.log(m.msg);
  });
  await nextMessage(child, 'ready', 20_000);
  return child;
}

/** One phase: the client measures for SECONDS; the attacker (if any) runs over the same window. */
async function phase(srv, attacker) {
  const cfg = { grpcPort: srv.grpcPort, httpPort: srv.httpPort, rps: RPS, warmupMs: WARMUP_MS, durationMs: SECONDS * 1000, timeoutMs: TIMEOUT_MS, path: PATH, body: clientBody.toString('base64') };
  const child = fork(new URL('./hostile-client.mjs', import.meta.url).pathname, [JSON.stringify(cfg)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  clients.add(child);
  child.once('exit', () => clients.delete(child));
  const resultP = nextMessage(child, 'result', WARMUP_MS + SECONDS * 1000 + TIMEOUT_MS + 20_000);
  resultP.catch(() => {});
  try {
    await nextMessage(child, 'measuring', WARMUP_MS + 20_000);
  } catch (err) {
    if (child.exitCode === null) child.kill('SIGKILL');
    return { error: err.message, rssMax: NaN, serverCpuMs: NaN, attackerCpuMs: NaN, outcome: 'not run: the client did not start' };
  }
  let rssMax = rssMb(srv.pid);
  const sampler = setInterval(() => {
    const r = rssMb(srv.pid);
    if (r > rssMax || !Number.isFinite(rssMax)) rssMax = r;
  }, 100);
  const deadline = Date.now() + SECONDS * 1000;
  const cpu0 = cpuMs(srv.pid);
  let attackP;
  if (attacker) {
    // The attack ends at the deadline or its own bound; the timeout here is the backstop.
    attackP = nextMessage(attacker, 'result', SECONDS * 1000 + 60_000).catch((err) => ({ outcome: `attacker: ${err.message}` }));
    attacker.send({ type: 'run', deadline });
  }
  let result;
  try {
    result = await resultP;
  } catch (err) {
    result = { error: err.message };
  }
  const attackResult = attackP ? await attackP : undefined;
  clearInterval(sampler);
  let serverCpuMs = NaN;
  try {
    serverCpuMs = cpuMs(srv.pid) - cpu0;
  } catch {
    // the server exited; reported below
  }
  if (child.exitCode === null) child.kill('SIGKILL');
  return { ...result, rssMax, serverCpuMs, attackerCpuMs: attackResult?.cpuMs ?? NaN, outcome: attackResult?.outcome };
}

console.log(`bench/hostile: ${SECONDS} s per phase, well-behaved client ${RPS} req/s open loop (1 gRPC connection, 1 descriptor, Redis path; failures count as ${TIMEOUT_MS} ms), WORKERS=1, attacker at nice ${NICE}`);
console.log(`fd soft limit ${fdLimit}: connections attack uses ${idle} idle + ${slow} slow sockets; stats-scrape feeds ${VALUES} values; load average at start ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log('');

const rows = [];
for (const attack of ATTACKS.filter((a) => selected.includes(a.name))) {
  const srv = await startService(attack.env);
  const ctx = { grpcPort: srv.grpcPort, httpPort: srv.httpPort, debugPort: srv.debugPort, path: PATH, limits: { idle, slow, values: VALUES }, log: (m) => console.log(`  ${attack.name}: ${m}`) };
  const what = typeof attack.what === 'function' ? attack.what(ctx) : attack.what;
  console.log(`[${attack.name}] ${what}`);
  const alone = await phase(srv, undefined);
  // The attacker process brings the server into the attack's starting state (untimed), then
  // attacks during the second phase.
  let attacker;
  let prepareError;
  try {
    attacker = await startAttacker(attack, ctx);
    attacker.send({ type: 'prepare' });
    const m = await nextOf(attacker, ['prepared', 'result'], 180_000);
    if (m.type === 'result') prepareError = m.outcome;
  } catch (err) {
    prepareError = `attacker did not start or prepare: ${err.message}`;
  }
  const rssBefore = rssMb(srv.pid);
  const logBefore = srv.output().length;
  const under = prepareError ? { error: prepareError, outcome: prepareError } : await phase(srv, attacker);
  if (attacker && attacker.exitCode === null) attacker.kill('SIGKILL');
  // What the service logged during the attack: a log line per hostile frame is itself a cost (and
  // the service blocks on a full stdout pipe), so its volume is shown.
  const logged = srv.output().slice(logBefore);
  const logLines = logged.split('\n').filter(Boolean);
  // RSS a second after the attacker let go: whether the memory came back.
  await delay(1000);
  const rssAfter = rssMb(srv.pid);
  const exited = srv.child.exitCode !== null || srv.child.signalCode !== null;
  let outcome = under.outcome ?? '-';
  if (exited) {
    outcome = `SERVER EXITED (${srv.child.exitCode ?? srv.child.signalCode}); ${outcome}`;
    console.log(srv.output().slice(-2000));
  }
  const row = { name: attack.name, alone, under, rssBefore, rssAfter, outcome, ratio: under.p99 / alone.p99 };
  rows.push(row);
  const err = (p) => (p.error ? ` [${p.error}]` : p.failed ? ` (${p.failed} failed: ${JSON.stringify(p.failures)})` : '');
  console.log(`  alone:  p50 ${fmt(alone.p50, 2)} ms, p99 ${fmt(alone.p99, 2)} ms, ${alone.ok ?? 0}/${alone.planned ?? 0} ok${err(alone)}`);
  const probes = `health probes ${under.probesOk ?? 0} ok / ${under.probesFailed ?? 0} failed (slowest ${fmt(under.probeMaxMs)} ms)`;
  const probeErrors = under.probesFailed ? ` ${JSON.stringify(under.probeFailures)}` : '';
  const ping = `slowest PING ${fmt(under.pingMaxMs, 1)} ms (alone ${fmt(alone.pingMaxMs, 1)})`;
  console.log(`  attack: p50 ${fmt(under.p50, 2)} ms, p99 ${fmt(under.p99, 2)} ms, ${under.ok ?? 0}/${under.planned ?? 0} ok${err(under)}, ${ping}, ${probes}${probeErrors}`);
  const worst = (p) => p.worstPerSecond?.join(' ') ?? '-';
  const cpu = `server CPU: alone ${fmt(alone.serverCpuMs)} ms, attack ${fmt(under.serverCpuMs)} ms (attacker process ${fmt(under.attackerCpuMs)} ms at nice ${NICE})`;
  console.log(`  ${cpu}; worst latency per second (ms): alone ${worst(alone)}; attack ${worst(under)}`);
  console.log(`  service log during the attack: ${logLines.length} lines, ${logged.length} B${logLines.length ? `; last: ${logLines.at(-1).slice(0, 200)}` : ''}`);
  console.log(`  RSS ${fmt(rssBefore)} MB before, ${fmt(under.rssMax)} MB max, ${fmt(rssAfter)} MB after; attacker: ${outcome}`);
  await srv.stop();
}
await redis.stop();

console.log(`\nWell-behaved client p99 alone and beside each attack (${SECONDS} s each, ${RPS} req/s; target: p99 under attack ≤ 3× alone)\n`);
table(rows, [
  { title: 'attack', get: (r) => r.name },
  { title: 'p50 alone', get: (r) => fmt(r.alone.p50, 2) },
  { title: 'p99 alone', get: (r) => fmt(r.alone.p99, 2) },
  { title: 'p50 attack', get: (r) => fmt(r.under.p50, 2) },
  { title: 'p99 attack', get: (r) => fmt(r.under.p99, 2) },
  { title: 'ratio', get: (r) => `${fmt(r.ratio, 2)}×` },
  { title: '≤3×', get: (r) => (!Number.isFinite(r.ratio) ? '-' : r.ratio <= 3 ? 'yes' : 'NO') },
  { title: 'failed', get: (r) => `${(r.under.failed ?? 0) + (r.under.error ? 1 : 0)}/${r.under.planned ?? 0}` },
  { title: 'health fail', get: (r) => `${r.under.probesFailed ?? '-'}/${(r.under.probesOk ?? 0) + (r.under.probesFailed ?? 0)}` },
  { title: 'server CPU s alone/attack', get: (r) => `${fmt(r.alone.serverCpuMs / 1000, 1)}/${fmt(r.under.serverCpuMs / 1000, 1)}` },
  { title: 'RSS MB before/max/after', get: (r) => `${fmt(r.rssBefore)}/${fmt(r.under.rssMax)}/${fmt(r.rssAfter)}` },
  { title: 'attacker outcome', get: (r) => r.outcome },
]);
console.log('\np50/p99 in ms; failed = requests not answered OK within --timeout-ms (counted as that latency); health fail = /healthcheck probes on a new connection every 250 ms that failed.');
console.log('The fast-path check of issue 12 is separate: ONLY=ours/redis ROUNDS=5 bash bench/rls-grpc.sh, compared with the figure in bench/README.md (within 5 %).');
process.exit(0);
