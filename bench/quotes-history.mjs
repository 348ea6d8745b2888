// p50/p95 of "1 year of daily history for 10 coins" through the whole app (auth, usage write,
// store read, resampling, FX conversion, JSON). The clock moves one minute per request, so every
// request is a new market snapshot; a second run repeats the same snapshot (whole answers are kept
// per snapshot). Closed series come from the series cache (bounded in bytes, printed last).
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

const dir = mkdtempSync(join(tmpdir(), 'quotes-hist-'));
const clock = new FakeClock(Date.now());
const store = openSqliteStore(join(dir, 'q.sqlite'));
await store.migrate();
const settings = loadSettings({ QUOTES_DATA_DIR: dir, QUOTES_LOG_LEVEL: 'warn' });
const { app, services } = await composeApp(settings, {
  store,
  market: new SimulatedMarket({ seed: 42, clock }),
  fx: new SimulatedFx({ seed: 42, clock }),
  plans: loadPlans(defaultPlansFile(packageRoot())),
  clock,
  logger: createLogger('warn'),
  random: randomBytes,
});
const { token } = await services.accounts.createToken('bench', 'pro');
const url = '/api/v2/crypto?coin=BTC,ETH,SOL,XRP,BNB,ADA,DOGE,TRX,LINK,AVAX&range=1y&interval=1d&currency=BRL';
const one = async () => {
  const t0 = performance.now();
  const res = await app.inject({ url, headers: { authorization: `Bearer ${token}` } });
  const ms = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}: ${res.body}`);
  return ms;
};
const first = await one();
const pct = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const miss = [];
for (let i = 0; i < 200; i++) {
  clock.advance(61_000);
  miss.push(await one());
}
const hit = [];
for (let i = 0; i < 200; i++) hit.push(await one());
console.log(`history 1y/1d x10 coins: first request (fills the store) ${first.toFixed(1)} ms`);
console.log(`history 1y/1d x10 coins, response-cache miss (new snapshot every request): p50 ${pct(miss, 50).toFixed(2)} ms  p95 ${pct(miss, 95).toFixed(2)} ms  (target p50 < 20 ms)`);
console.log(`history 1y/1d x10 coins, repeated: p50 ${pct(hit, 50).toFixed(2)} ms  p95 ${pct(hit, 95).toFixed(2)} ms (the whole answer kept for the snapshot, QUOTES_HISTORY_ANSWER_CACHE_BYTES)`);
// The series cache (QUOTES_HISTORY_CACHE_BYTES): 1y of 1h for the same 10 coins on top, then its bytes.
await app.inject({ url: url.replace('interval=1d', 'interval=1h').replace('coin=BTC,ETH,SOL,XRP,BNB,ADA,DOGE,TRX,LINK,AVAX', 'coin=BTC,ETH'), headers: { authorization: `Bearer ${token}` } });
const cache = services.history.cache;
console.log(`series cache: ${cache.size} blocks, ${(cache.bytes / 1024).toFixed(0)} KiB held of ${(cache.maxBytes / 1048576).toFixed(0)} MiB (hits ${cache.hits}, misses ${cache.misses}); RSS ${(process.memoryUsage().rss / 1048576).toFixed(0)} MB`);
await app.close();
await store.close();
