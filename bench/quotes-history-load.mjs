// A cheap quote beside the heaviest history request the default budget admits, against the real
// process (services/quotes/bin/quotes.js, from the build): a month of 1-minute candles for 16
// coins is stored first (the simulated market's, same seed as the server), then two clients repeat
// `coin=<16 coins>&range=1mo&interval=15m` (~47,600 candles, ~6.9 MB of JSON) while a third asks
// for `coin=BTC` every 50 ms. Prints the cheap request's p50/p99, the heavy request's p50 and the
// server's RSS (VmRSS, sampled every 50 ms). Usage: node --conditions=source --import tsx bench/quotes-history-load.mjs [seconds]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../packages/testkit/src/clock.js';
import { SimulatedMarket } from '../services/quotes/src/market/simulated-market.js';
import { openSqliteStore } from '../services/quotes/src/store/sqlite-store.js';

const SECONDS = Number(process.argv[2] ?? 10);
/** Clients repeating the heavy request at once (HEAVY_CLIENTS, default 2). */
const HEAVY_CLIENTS = Number(process.env.HEAVY_CLIENTS ?? 2);
/** HEAVY_RATE=n: instead, n heavy requests a second whatever the answers (open loop; the pro plan admits 50). */
const HEAVY_RATE = Number(process.env.HEAVY_RATE ?? 0);
const BIN = new URL('../services/quotes/bin/quotes.js', import.meta.url).pathname;
const COINS = ['BTC', 'ETH', 'SOL', 'XRP', 'BNB', 'ADA', 'DOGE', 'TRX', 'LINK', 'AVAX', 'DOT', 'LTC', 'BCH', 'XLM', 'UNI', 'ATOM'];
const dir = mkdtempSync(join(tmpdir(), 'quotes-hist-load-'));
const port = await new Promise((res) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => res(p));
  });
});
const env = { ...process.env, QUOTES_DATA_DIR: dir, MARKET_SOURCE: 'simulated', QUOTES_SIM_SEED: '42', QUOTES_HOST: '127.0.0.1', QUOTES_METRICS_PORT: '0', QUOTES_PORT: String(port) };
const cli = (...args) => execFileSync(process.execPath, [BIN, ...args], { env }).toString();

cli('migrate');
const now = Date.now();
const market = new SimulatedMarket({ seed: 42, clock: new FakeClock(now) });
const store = openSqliteStore(join(dir, 'quotes.sqlite'));
const to = Math.floor(now / 60_000) * 60;
const from = to - 33 * 86_400;
for (const symbol of COINS) {
  for (let cursor = from; cursor !== undefined && cursor < to; ) {
    const page = await market.candles({ symbol, base: '1m', from: cursor, to, limit: 50_000 });
    await store.candles.upsert(symbol, '1m', page.candles);
    cursor = page.nextFrom;
  }
  await store.candles.setCoverage(symbol, '1m', { from, to });
}
await store.close();
const token = (name) => /token: (qt_\S+)/.exec(cli('token', 'create', '--plan', 'pro', '--name', name))[1];
const heavyToken = token('heavy');
const cheapToken = token('cheap');
const server = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
const cleanup = () => {
  server.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
};
process.on('exit', cleanup);

// Separate connection pools, so a cheap request never waits in the client for a heavy one's socket.
const heavyAgent = new Agent({ keepAlive: true, maxSockets: 1024 });
const cheapAgent = new Agent({ keepAlive: true, maxSockets: 2 });
const get = (path, tok, agent = heavyAgent) =>
  new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { authorization: `Bearer ${tok}` } }, (res) => {
      let bytes = 0;
      res.on('data', (c) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode, bytes, ms: performance.now() - t0 }));
    });
    req.on('error', reject);
    req.end();
  });
for (let i = 0; i < 300; i++) {
  try {
    if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
  } catch {}
  await new Promise((r) => setTimeout(r, 100));
}
const rss = () => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))[1]) / 1024;
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((xs.length * p) / 100) - 1)];
const heavy = `/api/v2/crypto?coin=${COINS.join(',')}&range=1mo&interval=15m`;

const quiet = [];
await get('/api/v2/crypto?coin=BTC', cheapToken, cheapAgent);
for (let i = 0; i < 40; i++) {
  quiet.push((await get('/api/v2/crypto?coin=BTC', cheapToken, cheapAgent)).ms);
  await new Promise((r) => setTimeout(r, 50));
}
const rssIdle = rss();
const first = await get(heavy, heavyToken);
if (first.status !== 200) throw new Error(`heavy request: status ${first.status}`);
const over = await get(`/api/v2/crypto?coin=${COINS.join(',')},ETC&range=1mo&interval=15m`, heavyToken);
let stop = false;
let peak = rss();
const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50);
const heavyMs = [];
const cheapMs = [];
const heavyLoop = async () => {
  while (!stop) heavyMs.push((await get(heavy, heavyToken)).ms);
};
const cheapLoop = async () => {
  while (!stop) {
    cheapMs.push((await get('/api/v2/crypto?coin=BTC', cheapToken, cheapAgent)).ms);
    await new Promise((r) => setTimeout(r, 50));
  }
};
setTimeout(() => (stop = true), SECONDS * 1000);
if (HEAVY_RATE > 0) {
  const sent = [];
  const fire = setInterval(() => {
    if (stop) clearInterval(fire);
    else sent.push(get(heavy, heavyToken).then((r) => heavyMs.push(r.ms)));
  }, 1000 / HEAVY_RATE);
  await cheapLoop();
  await Promise.all(sent);
} else await Promise.all([...Array.from({ length: HEAVY_CLIENTS }, heavyLoop), cheapLoop()]);
clearInterval(sampler);
console.log(`heaviest allowed request: 16 coins x 1mo of 15m, ${(first.bytes / 1e6).toFixed(1)} MB of JSON; first (cold) ${first.ms.toFixed(0)} ms; 17 coins -> ${over.status}`);
console.log(`cheap GET /api/v2/crypto?coin=BTC alone:               p50 ${pct(quiet, 50).toFixed(1)} ms  p99 ${pct(quiet, 99).toFixed(1)} ms  (n=${quiet.length})`);
console.log(`cheap beside ${HEAVY_RATE > 0 ? `${HEAVY_RATE} heavy requests/s` : `${HEAVY_CLIENTS} clients repeating the heavy request`}:    p50 ${pct(cheapMs, 50).toFixed(1)} ms  p99 ${pct(cheapMs, 99).toFixed(1)} ms  max ${Math.max(...cheapMs).toFixed(1)} ms  (n=${cheapMs.length}; target p99 < 250 ms)`);
console.log(`heavy requests: ${heavyMs.length} in ${SECONDS} s, p50 ${pct(heavyMs, 50).toFixed(0)} ms; server RSS idle ${rssIdle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB (target < 600 MB)`);
heavyAgent.destroy();
cheapAgent.destroy();
process.exit(0);
