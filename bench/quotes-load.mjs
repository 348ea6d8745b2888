// Loads N one-minute candles (default 5 000 000) of simulated BTC into a fresh SQLite database
// through the store's bulk upsert, and reports the time spent writing (generation is timed apart).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../packages/testkit/src/clock.js';
import { SimulatedMarket } from '../services/quotes/src/market/simulated-market.js';
import { openSqliteStore } from '../services/quotes/src/store/sqlite-store.js';

const total = Number(process.argv[2] ?? 5_000_000);
const dir = mkdtempSync(join(tmpdir(), 'quotes-load-'));
const file = join(dir, 'q.sqlite');
const store = openSqliteStore(file);
await store.migrate();
const end = Math.floor(Date.now() / 60_000) * 60;
const start = end - total * 60;
const market = new SimulatedMarket({ seed: 42, clock: new FakeClock(end * 1000) });
const chunk = 250_000;
let genMs = 0;
let writeMs = 0;
let written = 0;
for (let from = start; from < end; from += chunk * 60) {
  const g0 = performance.now();
  const page = await market.candles({ symbol: 'BTC', base: '1m', from, to: Math.min(end, from + chunk * 60), limit: chunk });
  genMs += performance.now() - g0;
  const w0 = performance.now();
  written += await store.candles.upsert('BTC', '1m', page.candles);
  writeMs += performance.now() - w0;
}
await store.close();
const size = statSync(file).size;
console.log(`load ${written.toLocaleString('en')} 1m candles into SQLite: write ${(writeMs / 1000).toFixed(1)} s (${Math.round(written / (writeMs / 1000)).toLocaleString('en')} rows/s), generation ${(genMs / 1000).toFixed(1)} s, file ${(size / 1e6).toFixed(0)} MB  (target < 60 s)`);
rmSync(dir, { recursive: true, force: true });
