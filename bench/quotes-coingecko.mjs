// p50/p99 and throughput of GET /api/v3/coins/markets?vs_currency=brl&per_page=100&sparkline=true
// through the whole app (auth, quota count, board, 7-day hourly sparklines, JSON), in process.
// Phase 1 moves the clock one minute per request, so every request is a new market snapshot and
// rebuilds the page (sparkline candles stay memoised within the hour, as in production); phase 2
// keeps the clock still (the body cache answers). Usage: node --conditions=source --import tsx
// bench/quotes-coingecko.mjs [requests-per-phase]
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../packages/testkit/src/clock.js';
import { composeApp } from '../services/quotes/src/compose.js';
import { defaultPlansFile, loadPlans } from '../services/quotes/src/accounts/plans.js';
import { createLogger } from '../services/quotes/src/logger.js';
import { SimulatedFx } from '../services/quotes/src/market/simulated-fx.js';
import { SimulatedMarket } from '../services/quotes/src/market/simulated-market.js';
import { packageRoot } from '../services/quotes/src/package-root.js';
import { loadSettings } from '../services/quotes/src/settings.js';
import { openSqliteStore } from '../services/quotes/src/store/sqlite-store.js';

const N = Number(process.argv[2] ?? 200);
const dir = mkdtempSync(join(tmpdir(), 'quotes-cg-'));
const clock = new FakeClock(Date.now());
const store = openSqliteStore(join(dir, 'q.sqlite'));
await store.migrate();
const plans = loadPlans(defaultPlansFile(packageRoot()));
const settings = loadSettings({ QUOTES_DATA_DIR: dir, QUOTES_LOG_LEVEL: 'warn' });
const { app, services } = await composeApp(settings, {
  store,
  market: new SimulatedMarket({ seed: 42, clock }),
  fx: new SimulatedFx({ seed: 42, clock }),
  plans: new Map([...plans].map(([k, p]) => [k, { ...p, monthlyRequests: 1_000_000_000 }])),
  clock,
  logger: createLogger('warn'),
  random: randomBytes,
});
const { token } = await services.accounts.createToken('bench', 'pro');
const url = '/api/v3/coins/markets?vs_currency=brl&per_page=100&sparkline=true';
let bytes = 0;
const one = async () => {
  const t0 = performance.now();
  const res = await app.inject({ url, headers: { 'x-cg-demo-api-key': token } });
  const ms = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}: ${res.body}`);
  bytes = res.body.length;
  return ms;
};
const report = (name, times, wallMs) => {
  const s = [...times].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(2);
  console.log(`${name.padEnd(44)} p50 ${q(0.5)} ms  p99 ${q(0.99)} ms  ${((times.length / wallMs) * 1000).toFixed(0)} req/s (one at a time)`);
};

const tFirst = await one();
console.log(`first request (fills 7 days of hourly candles for every coin): ${tFirst.toFixed(0)} ms, ${bytes} bytes`);
for (const [name, step] of [['new snapshot per request (page rebuilt)', 60_000], ['same snapshot (body cache)', 0]]) {
  const times = [];
  const w0 = performance.now();
  for (let i = 0; i < N; i++) {
    clock.advance(step);
    times.push(await one());
  }
  report(name, times, performance.now() - w0);
}
await app.close();
await store.close();
