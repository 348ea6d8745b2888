import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rls/testkit';
import { zipSync } from 'fflate';
import { runCli } from '../../src/cli/commands.js';
import { klineTimeSeconds } from '../../src/import/kline-csv.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';

const MIN = 60;
/** 23:50 on 31 Dec 2024: ten minutes in milliseconds, then 2025 in microseconds. */
const START = Date.UTC(2024, 11, 31, 23, 50) / 1000;

function row(t: number, micro: boolean): string {
  const i = (t - START) / MIN;
  const p = 93_000 + i;
  const unit = micro ? 1_000_000 : 1000;
  const open = t * unit;
  const close = (t + MIN) * unit - 1;
  return [open, p.toFixed(8), (p + 5).toFixed(8), (p - 5).toFixed(8), (p + 1).toFixed(8), '1.50000000', close, (1.5 * (p + 1)).toFixed(8), 42, '0.7', '100.1', '0'].join(',');
}

describe('quotes import-klines', () => {
  const dir = tempDir('quotes-import-');
  const env = { QUOTES_DATA_DIR: dir.path, QUOTES_LOG_LEVEL: 'warn', MARKET_SOURCE: 'simulated' };
  after(() => dir.cleanup());
  const run = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['import-klines', ...args], env, { out: (l) => out.push(l), err: (l) => err.push(l) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  // December 2024 dump: plain CSV, millisecond times, with a good checksum.
  const dec = join(dir.path, 'BTCUSDT-1m-2024-12-31.csv');
  const decRows = Array.from({ length: 10 }, (_, i) => row(START + i * MIN, false));
  writeFileSync(dec, `${decRows.join('\n')}\n`);
  writeFileSync(`${dec}.CHECKSUM`, `${createHash('sha256').update(`${decRows.join('\n')}\n`).digest('hex')}  BTCUSDT-1m-2024-12-31.csv\n`);
  // January 2025 dump: zipped, microsecond times, CRLF line ends.
  const jan = join(dir.path, 'BTCUSDT-1m-2025-01-01.zip');
  const janCsv = Array.from({ length: 20 }, (_, i) => row(START + (10 + i) * MIN, true)).join('\r\n');
  const zipped = zipSync({ 'BTCUSDT-1m-2025-01-01.csv': new TextEncoder().encode(janCsv) });
  writeFileSync(jan, zipped);
  writeFileSync(`${jan}.CHECKSUM`, `${createHash('sha256').update(zipped).digest('hex')}  BTCUSDT-1m-2025-01-01.zip\n`);
  // A corrupted download: the checksum does not match.
  const bad = join(dir.path, 'ETHUSDT-1m-2025-01-01.csv');
  writeFileSync(bad, row(START, false));
  writeFileSync(`${bad}.CHECKSUM`, `${'0'.repeat(64)}  ETHUSDT-1m-2025-01-01.csv\n`);

  test('timestamps normalised by digit count: 13 digits ms, 16 digits µs', () => {
    assert.equal(klineTimeSeconds('1735689600000'), 1735689600);
    assert.equal(klineTimeSeconds('1735689600000000'), 1735689600);
    assert.equal(klineTimeSeconds('17356896'), undefined);
  });

  test('plain and zipped dumps in both units land as one contiguous USD series; checksums verified', async () => {
    const r = await run([dec, jan]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /BTCUSDT-1m-2024-12-31\.csv: BTC\/1m 10 candles, 10 new, checksum verified/);
    assert.match(r.out, /BTCUSDT-1m-2025-01-01\.zip: BTC\/1m 20 candles, 20 new, checksum verified/);
    const store = openSqliteStore(join(dir.path, 'quotes.sqlite'));
    try {
      const rows = await store.candles.range('BTC', '1m', 0, 2 ** 40);
      assert.equal(rows.length, 30);
      for (let i = 0; i < 30; i++) {
        const p = 93_000 + i;
        assert.deepEqual(rows[i], { time: START + i * MIN, open: p, high: p + 5, low: p - 5, close: p + 1, volume: Number((1.5 * (p + 1)).toFixed(8)) });
      }
      assert.deepEqual(await store.candles.coverage('BTC', '1m'), { from: START, to: START + 30 * MIN });
    } finally {
      await store.close();
    }
  });

  test('re-importing changes nothing', async () => {
    const r = await run([jan, dec]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /20 candles, 0 new/);
    assert.match(r.out, /10 candles, 0 new/);
    const store = openSqliteStore(join(dir.path, 'quotes.sqlite'));
    try {
      assert.equal(await store.candles.count('BTC', '1m', 0, 2 ** 40), 30);
    } finally {
      await store.close();
    }
  });

  test('a checksum mismatch is refused and nothing is imported', async () => {
    const r = await run([bad]);
    assert.equal(r.code, 1);
    assert.match(r.err, /checksum mismatch.*not imported/);
    const store = openSqliteStore(join(dir.path, 'quotes.sqlite'));
    try {
      assert.equal(await store.candles.count('ETH', '1m', 0, 2 ** 40), 0);
    } finally {
      await store.close();
    }
  });
});
