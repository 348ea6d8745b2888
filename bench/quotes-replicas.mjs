// Several quotes replicas on one PostgreSQL behind a round-robin client (bench/quotes.sh, section
// "replicas"): throughput of a cached quote, and the request rate the (fake) exchange sees, for
// three replicas and for one; and the cost of exact monthly quotas (write-through counting, the
// PostgreSQL default) against write-behind counting on one replica. Medians of ROUNDS (default 2)
// alternated rounds; "quotes CPU" is the targeted replicas' CPU time per request, less what they
// spend idle (measured first). Burst limits run in the real
// ratelimit service on Redis with the shipped rules lifted (it measures serving, not refusing).
// Prints figures, asserts nothing. Run from source:
//   node --conditions=source --import tsx bench/quotes-replicas.mjs [seconds-per-case] [connections]
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnManaged, startFakeBinance, startPostgres, startRedis, tempDir, waitFor } from '../packages/testkit/src/index.ts';
import { AccountService } from '../services/quotes/src/accounts/account-service.ts';
import { loadPlans } from '../services/quotes/src/accounts/plans.ts';
import { openPostgresStore } from '../services/quotes/src/store/postgres-store.ts';
import { rulesTree, startRateLimit } from '../services/quotes/test/e2e/ratelimit-process.ts';

const SECONDS = Number(process.argv[2] ?? 5);
const CONNECTIONS = Number(process.argv[3] ?? 8);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const REFRESH_S = 1;
const CLI = fileURLToPath(new URL('../services/quotes/src/cli/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const URL_PATH = '/api/v2/crypto?coin=BTC,ETH';

const dir = tempDir('quotes-bench-replicas-');
const cleanups = [];
process.once('exit', () => dir.cleanup());

const now = Date.now();
const ticker = (symbol, lastPrice) => ({ symbol, lastPrice, openPrice: lastPrice * 0.98, highPrice: lastPrice * 1.01, lowPrice: lastPrice * 0.97, volume: 10, quoteVolume: 10 * lastPrice, openTime: now - 86_400_000, closeTime: now });

const [pgs, redis] = await Promise.all([startPostgres(), startRedis()]);
cleanups.push(() => pgs.stop(), () => redis.stop());
const shipped = readFileSync(new URL('../services/quotes/ratelimit/quotes.yaml', import.meta.url), 'utf8');
const rules = rulesTree({ 'quotes.yaml': { text: shipped.replace(/requests_per_unit: \d+/g, 'requests_per_unit: 1000000000') } });
cleanups.push(() => rules.cleanup());
const rls = await startRateLimit(redis.port, rules);
cleanups.push(() => rls.stop());
const binance = await startFakeBinance({
  markets: [
    { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' },
    { symbol: 'ETHUSDT', base: 'ETH', quote: 'USDT' },
  ],
  tickers: [ticker('BTCUSDT', 90_000), ticker('ETHUSDT', 3000)],
});
cleanups.push(() => binance.close());
const plans = JSON.parse(readFileSync(new URL('../services/quotes/plans.json', import.meta.url), 'utf8'));
for (const p of plans.plans) p.monthlyRequests = 1_000_000_000;
writeFileSync(join(dir.path, 'plans.json'), JSON.stringify(plans));
await pgs.createDatabase('quotes');
const store = openPostgresStore(pgs.urlFor('quotes'));
await store.migrate();
const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: loadPlans(join(dir.path, 'plans.json')), clock: { now: () => Date.now() }, random: randomBytes });
const { token } = await accounts.createToken('bench', 'pro');

async function startReplica(role, extra = {}) {
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: pgs.urlFor('quotes'),
    QUOTES_ROLE: role,
    QUOTES_HOST: '127.0.0.1',
    QUOTES_METRICS_PORT: '0', QUOTES_PORT: String(port),
    // Access lines would pile up in this process's pipe buffers; the replicas case is about the database and the lease.
    QUOTES_LOG_LEVEL: 'warn',
    QUOTES_PLANS_FILE: join(dir.path, 'plans.json'),
    PUBLIC_BASE_URL: 'https://quotes.example.test',
    RATELIMIT_GRPC_ADDR: rls.grpcAddress,
    MARKET_SOURCE: 'exchange',
    MARKET_EXCHANGES: 'binance',
    MARKET_EXCHANGE_URL_BINANCE: binance.url,
    MARKET_REFRESH_INTERVAL: String(REFRESH_S),
    MARKET_RATE_LIMIT_MS: '0',
    FX_SOURCE: 'simulated',
    HISTORY_BACKFILL: 'false',
    ...extra,
  };
  const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'serve'], { cwd: ROOT, env });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (proc.proc.exitCode !== null) throw new Error(`replica exited:\n${proc.output()}`);
      const r = await fetch(`${url}/health`).catch(() => undefined);
      return r !== undefined && (await r.json()).status === 'ok';
    },
    { what: 'replica ready', timeoutMs: 60_000, intervalMs: 100 },
  );
  return { url, port, proc };
}

/** CPU time (ms) a process used so far, from /proc (utime + stime at 100 ticks a second). */
function cpuMs(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/** CPU ms per second each replica uses with no request traffic. */
const idleCpuPerSecond = new Map();
async function measureIdle(replicas) {
  const before = replicas.map((r) => cpuMs(r.proc.proc.pid));
  const started = Date.now();
  await new Promise((r) => setTimeout(r, 5000));
  const secs = (Date.now() - started) / 1000;
  replicas.forEach((r, i) => idleCpuPerSecond.set(r, (cpuMs(r.proc.proc.pid) - before[i]) / secs));
}

/** CONNECTIONS loops, each sending its next request to the next replica in turn, for SECONDS. */
async function roundRobin(replicas) {
  const agents = replicas.map(() => new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS }));
  const statuses = new Map();
  const latencies = [];
  let next = 0;
  const one = (i) =>
    new Promise((resolve, reject) => {
      const r = replicas[i];
      const started = performance.now();
      const req = http.get({ host: '127.0.0.1', port: r.port, path: URL_PATH, agent: agents[i], headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - started);
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          resolve();
        });
      });
      req.on('error', reject);
    });
  // Warm-up (JIT, connections), not counted.
  const warmEnd = Date.now() + 1000;
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (Date.now() < warmEnd) await one(next++ % replicas.length);
  }));
  statuses.clear();
  latencies.length = 0;
  const calls0 = binance.requests.filter((q) => q.path.endsWith('/ticker/24hr')).length;
  const cpu0 = replicas.map((r) => cpuMs(r.proc.proc.pid));
  const started = Date.now();
  const end = started + SECONDS * 1000;
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (Date.now() < end) await one(next++ % replicas.length);
  }));
  const secs = (Date.now() - started) / 1000;
  // Minus what each replica spends idle (lease renewals, polls, the leader's refresh), measured apart.
  const cpu = replicas.reduce((sum, r, i) => sum + cpuMs(r.proc.proc.pid) - cpu0[i] - (idleCpuPerSecond.get(r) ?? 0) * secs, 0);
  const calls = binance.requests.filter((q) => q.path.endsWith('/ticker/24hr')).length - calls0;
  for (const a of agents) a.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))]?.toFixed(1);
  const total = [...statuses.values()].reduce((a, b) => a + b, 0);
  return { rps: total / secs, p50: pct(50), p99: pct(99), statuses: Object.fromEntries(statuses), tickerRate: calls / secs, cpuPerRequest: cpu / total };
}

const print = (name, r) =>
  console.log(`${name.padEnd(64)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  quotes CPU ${r.cpuPerRequest.toFixed(2)} ms/request  statuses ${JSON.stringify(r.statuses)}  exchange ticker calls ${r.tickerRate.toFixed(2)}/s`);

console.log(`round-robin client: ${CONNECTIONS} connections, ${SECONDS} s a case, GET ${URL_PATH} (pro token), market refresh every ${REFRESH_S} s`);
console.log(`four replicas run throughout (a, b: all; c: api; d: all with write-behind usage counting); the cases alternate over ${ROUNDS} rounds`);
try {
  const a = await startReplica('all');
  const b = await startReplica('all');
  const c = await startReplica('api');
  const d = await startReplica('all', { QUOTES_USAGE_FLUSH_MS: '1000' });
  const cases = [
    ['3 replicas (a, b, c) round robin, usage write-through', [a, b, c]],
    ['1 replica (a), usage write-through (PostgreSQL default)', [a]],
    ['1 replica (d), usage write-behind (QUOTES_USAGE_FLUSH_MS=1000)', [d]],
  ];
  await measureIdle([a, b, c, d]);
  console.log(`idle CPU (ms per second): ${[a, b, c, d].map((r, i) => `${'abcd'[i]} ${idleCpuPerSecond.get(r).toFixed(1)}`).join(', ')}`);
  const results = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, targets]] of cases.entries()) results[i].push(await roundRobin(targets));
  }
  for (const [i, [name]] of cases.entries()) {
    const rs = results[i];
    const med = (f) => [...rs.map(f)].sort((x, y) => x - y)[rs.length >> 1];
    print(`${name}`, { rps: med((r) => r.rps), p50: med((r) => Number(r.p50)).toFixed(1), p99: med((r) => Number(r.p99)).toFixed(1), cpuPerRequest: med((r) => r.cpuPerRequest), statuses: rs.map((r) => r.statuses), tickerRate: med((r) => r.tickerRate) });
  }
  await Promise.all([a, b, c, d].map((r) => r.proc.stop()));
} finally {
  await store.close();
  for (const c of cleanups.reverse()) await c();
}
