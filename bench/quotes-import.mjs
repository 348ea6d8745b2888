// Imports a year of 1-minute klines for one symbol (525,600 rows) from a Binance-format CSV into a
// fresh SQLite store, through the same code as `quotes import-klines`. Prints the time; asserts nothing.
// Run: node --conditions=source --import tsx bench/quotes-import.mjs
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importKlinesFile } from '../services/quotes/src/import/klines-import.js';
import { openSqliteStore } from '../services/quotes/src/store/sqlite-store.js';

const ROWS = 525_600;
const dir = mkdtempSync(join(tmpdir(), 'quotes-import-'));
try {
  const file = join(dir, 'BTCUSDT-1m-2024-01.csv');
  const start = Date.UTC(2024, 0, 1);
  const lines = new Array(ROWS);
  let p = 42_000;
  for (let i = 0; i < ROWS; i++) {
    const t = start + i * 60_000;
    const o = p;
    p = Math.max(1000, p + Math.sin(i / 97) * 3 + Math.cos(i / 13));
    const h = Math.max(o, p) + 2.5;
    const l = Math.min(o, p) - 2.5;
    const v = 1 + (i % 17) / 10;
    lines[i] = `${t},${o.toFixed(2)},${h.toFixed(2)},${l.toFixed(2)},${p.toFixed(2)},${v.toFixed(5)},${t + 59_999},${(v * p).toFixed(4)},${100 + (i % 50)},${(v / 2).toFixed(5)},${((v / 2) * p).toFixed(4)},0`;
  }
  writeFileSync(file, lines.join('\n') + '\n');
  const store = openSqliteStore(join(dir, 'q.sqlite'));
  await store.migrate();
  const t0 = performance.now();
  const r = await importKlinesFile(store.candles, file);
  const ms = performance.now() - t0;
  console.log(`import-klines: ${r.rows} rows (${r.added} new) of ${r.coin}/${r.base} from CSV into SQLite in ${(ms / 1000).toFixed(2)} s (${Math.round(r.rows / (ms / 1000))} rows/s; target < 10 s)`);
  const t1 = performance.now();
  const again = await importKlinesFile(store.candles, file);
  console.log(`re-import: ${again.rows} rows, ${again.added} new, ${((performance.now() - t1) / 1000).toFixed(2)} s`);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
