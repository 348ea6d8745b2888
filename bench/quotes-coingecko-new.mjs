// The heaviest legal calls of the endpoints added in issue 26, in-process on the simulated market:
// the first build after a market refresh (cold: history series and FX fixings loaded) and the
// cached repeat within a snapshot, with the process RSS after each. Figures are indicative.
// Run: node --conditions=source --import tsx bench/quotes-coingecko-new.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeApp, createDeps } from '../services/quotes/src/compose.ts';
import { createLogging } from '../services/quotes/src/logger.ts';
import { loadSettings } from '../services/quotes/src/settings.ts';

const dir = mkdtempSync(join(tmpdir(), 'endpoints-bench-'));
const settings = loadSettings({ MARKET_SOURCE: 'simulated', QUOTES_DATA_DIR: dir, QUOTES_LOG_LEVEL: 'warn', RATELIMIT_ENABLED: 'false' });
const deps = createDeps(settings, createLogging('warn'));
await deps.store.migrate();
const { app, services } = await composeApp(settings, deps);
const { token } = await services.accounts.createToken('bench', 'pro');
const today = new Date(Date.now() - 86_400_000);
const dmy = `${String(today.getUTCDate()).padStart(2, '0')}-${String(today.getUTCMonth() + 1).padStart(2, '0')}-${today.getUTCFullYear()}`;
const now = Math.floor(Date.now() / 1000);
const calls = [
  ['top_gainers_losers all 1y', '/api/v3/coins/top_gainers_losers?vs_currency=brl&duration=1y&top_coins=all&price_change_percentage=1h,24h,7d,14d,30d,60d,200d,1y'],
  ['history (every vs_currency)', `/api/v3/coins/bitcoin/history?date=${dmy}`],
  ['ohlc/range hourly 31 days', `/api/v3/coins/bitcoin/ohlc/range?vs_currency=eur&interval=hourly&from=${now - 31 * 86_400 + 60}&to=${now}`],
  ['exchange_rates', '/api/v3/exchange_rates'],
  ['exchanges/{id}', '/api/v3/exchanges/simulated'],
  ['coins/{id}/tickers', '/api/v3/coins/bitcoin/tickers?include_exchange_logo=true'],
  ['/key', '/api/v3/key'],
  ['currency 20 pairs', `/api/v2/currency?currency=${['EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'DKK', 'NOK', 'SEK', 'MXN'].flatMap((c) => [`USD-${c}`, `${c}-BRL`]).join(',')}`],
  ['currency/available', '/api/v2/currency/available'],
];
const mb = (b) => (b / 1024 / 1024).toFixed(0);
for (const [name, url] of calls) {
  const headers = { 'x-cg-pro-api-key': token, authorization: `Bearer ${token}` };
  await services.snapshots.refreshNow();
  let t = performance.now();
  const first = await app.inject({ url, headers });
  const cold = performance.now() - t;
  const N = 50;
  t = performance.now();
  for (let i = 0; i < N; i++) await app.inject({ url, headers });
  const warm = (performance.now() - t) / N;
  console.log(`${name.padEnd(30)} status ${first.statusCode}  ${String(first.body.length).padStart(8)} bytes  first ${cold.toFixed(1).padStart(7)} ms  repeat ${warm.toFixed(2).padStart(6)} ms  rss ${mb(process.memoryUsage().rss)} MB`);
}
await app.close();
await deps.store.close();
rmSync(dir, { recursive: true, force: true });
