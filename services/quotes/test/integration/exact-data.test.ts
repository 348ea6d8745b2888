import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Migration } from 'kysely';
import { startFakeBinance, startFakePtax, startPostgres, tempDir, type FakeBinance, type FakeKline, type FakePtax, type FakeTicker } from '@rls/testkit';
import { minorUnits, PRICE_DIGITS, RATE_DIGITS, valueFormat } from '../../src/domain/value-precision.js';
import { migrations } from '../../src/store/migrations.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/domain/repositories.js';
import { makeExchangeApp, type ExchangeApp } from './exchange-support.js';
import type { CryptoJson } from '../support/helpers.js';
import { digitsOf } from './value-digits.js';

/** Monday 16 March 2026, 15:00 UTC: the daily candle of the 16th is in progress. */
const T0 = Date.UTC(2026, 2, 16, 15);
const DAY_MS = 86_400_000;
const d = (iso: string): number => Date.parse(`${iso}T00:00:00Z`);

const btcTicker = (lastPrice: number, closeTime: number): FakeTicker => ({
  symbol: 'BTCUSDT',
  lastPrice,
  openPrice: 91234.56789,
  highPrice: 93456.7891,
  lowPrice: 90123.4567,
  volume: 1234.5678,
  quoteVolume: 112_233_445.678901,
  openTime: closeTime - DAY_MS,
  closeTime,
});

describe('exact data through the real app (fake Binance + fake PTAX)', () => {
  let binance: FakeBinance;
  let ptax: FakePtax;
  let t: ExchangeApp;
  const get = async (q: string): Promise<{ body: string; json: CryptoJson }> => {
    const res = await t.app.inject({ url: `/api/v2/crypto?${q}`, headers: { authorization: `Bearer ${t.token}` } });
    assert.equal(res.statusCode, 200, res.body);
    return { body: res.body, json: res.json<CryptoJson>() };
  };
  // Closed days 9-15 March, then the 16th in progress. Quote volume is deliberately not base volume x close.
  const closed: FakeKline[] = Array.from({ length: 7 }, (_, i) => ({
    openTime: d('2026-03-09') + i * DAY_MS,
    open: 90000.12345678 + i,
    high: 93000.98765432 + i,
    low: 89000.1111111 + i,
    close: 92392.02801 + i * 1.1,
    volume: 1000.123,
    quoteVolume: 91_000_000.987654 + i,
  }));
  const today = (close: number, high: number, quoteVolume: number): FakeKline => ({ openTime: d('2026-03-16'), open: 92400.5, high, low: 92000.25, close, volume: 500, quoteVolume });

  before(async () => {
    binance = await startFakeBinance({ markets: [{ symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' }], tickers: [btcTicker(92500.12345, T0 - 1000)] });
    binance.setKlines('BTCUSDT', '1d', [...closed, today(92500.12345, 92600.5, 40_000_000.5)]);
    // The first bulletin is Tuesday the 10th: Monday the 9th has none and must stay null.
    ptax = await startFakePtax({
      closings: {
        USD: { '2026-03-10': 5.1234, '2026-03-11': 5.2345, '2026-03-12': 5.3456, '2026-03-13': 5.4567, '2026-03-16': 5.5678 },
        EUR: { '2026-03-13': 6.0517, '2026-03-16': 6.0623 },
        JPY: { '2026-03-13': 0.036612, '2026-03-16': 0.036733 },
      },
    });
    t = await makeExchangeApp(T0, { MARKET_EXCHANGES: 'binance', MARKET_EXCHANGE_URL_BINANCE: binance.url, FX_SOURCE: 'ptax', FX_PTAX_URL: ptax.url });
  });
  after(async () => {
    await t.close();
    await binance.close();
    await ptax.close();
  });

  test('history volume is the exchange\'s quote-asset volume (kline field 7), not base volume x close', async () => {
    const h = (await get('coin=BTC&currency=USD&range=5d&interval=1d')).json.coins[0]!.historicalDataPrice!;
    const byDate = new Map(h.map((p) => [p.date, p]));
    for (const k of closed.slice(-4)) assert.equal(byDate.get(k.openTime / 1000)?.volume, valueFormat('USD').amount(k.quoteVolume), new Date(k.openTime).toISOString());
    const stored = await t.services.store.candles.range('BTC', '1d', d('2026-03-09') / 1000, d('2026-03-16') / 1000);
    assert.ok(stored.length >= 4);
    for (const k of stored) assert.equal(k.volume, closed.find((c) => c.openTime === k.time * 1000)?.quoteVolume, 'the store holds the quote volume as reported');
  });

  test('range=1d&interval=1d includes today\'s in-progress candle, and it follows the exchange', async () => {
    const first = (await get('coin=BTC&currency=USD&range=1d&interval=1d')).json.coins[0]!.historicalDataPrice!;
    assert.deepEqual(first.map((p) => p.date), [d('2026-03-15') / 1000, d('2026-03-16') / 1000], 'yesterday and today');
    assert.deepEqual(first[1], { date: d('2026-03-16') / 1000, open: 92400.5, high: 92600.5, low: 92000.25, close: 92500.12345, volume: 40_000_000.5, adjustedClose: 92500.12345 });

    // Trading goes on: the exchange's current kline moves, the next ticker refresh brings it.
    t.clock.advance(60_000);
    binance.setKlines('BTCUSDT', '1d', [...closed, today(92700.5, 92800.75, 41_000_000.25)]);
    binance.setTicker(btcTicker(92700.5, T0 + 59_000));
    await t.services.snapshots.refreshNow();
    const later = (await get('coin=BTC&currency=USD&range=1d&interval=1d')).json.coins[0]!.historicalDataPrice!;
    assert.deepEqual(later[1], { date: d('2026-03-16') / 1000, open: 92400.5, high: 92800.75, low: 92000.25, close: 92700.5, volume: 41_000_000.25, adjustedClose: 92700.5 });
    // A weekly bucket holds the closed days of the week plus today's candle so far.
    const week = (await get('coin=BTC&currency=USD&range=5d&interval=1wk')).json.coins[0]!.historicalDataPrice!;
    const last = week[week.length - 1]!;
    assert.equal(last.date, d('2026-03-16') / 1000, 'the week starting Monday the 16th');
    assert.equal(last.close, 92700.5);
  });

  test('the first day with a PTAX bulletin is converted with it; the day before has none', async () => {
    const h = (await get('coin=BTC&currency=BRL&range=1mo&interval=1d')).json.coins[0]!.historicalDataPrice!;
    const byDate = new Map(h.map((p) => [p.date, p]));
    assert.equal(byDate.get(d('2026-03-09') / 1000)?.close, null, 'before the first bulletin');
    const first = byDate.get(d('2026-03-10') / 1000)!;
    assert.equal(first.close, valueFormat('BRL').price(closed[1]!.close * 5.1234));
    assert.equal(first.volume, valueFormat('BRL').amount(closed[1]!.quoteVolume * 5.1234));
  });

  test('no value in any answer carries float noise', async () => {
    for (const cur of ['BRL', 'USD', 'EUR', 'JPY']) {
      for (const q of ['', '&range=1mo&interval=1d', '&range=5d&interval=1wk', '&range=1d&interval=1d']) {
        const c = (await get(`coin=BTC&currency=${cur}${q}`)).json.coins[0]!;
        const label = `${cur}${q}`;
        for (const k of ['regularMarketPrice', 'regularMarketChange', 'regularMarketChangePercent', 'regularMarketDayLow', 'regularMarketDayHigh'] as const) {
          assert.ok(digitsOf(c[k]).sig <= PRICE_DIGITS, `${label} ${k} ${c[k]}`);
        }
        assert.ok(digitsOf(c.currencyRateFromUSD).sig <= RATE_DIGITS, `${label} rate ${c.currencyRateFromUSD}`);
        for (const k of ['regularMarketVolume', 'marketCap'] as const) assert.ok(digitsOf(c[k]).decimals <= minorUnits(cur), `${label} ${k} ${c[k]}`);
        const [lo, hi] = c.regularMarketDayRange.split(' - ').map(Number);
        assert.equal(lo, c.regularMarketDayLow);
        assert.equal(hi, c.regularMarketDayHigh);
        for (const p of c.historicalDataPrice ?? []) {
          for (const k of ['open', 'high', 'low', 'close', 'adjustedClose'] as const) {
            const v = p[k];
            if (v !== null) assert.ok(digitsOf(v).sig <= PRICE_DIGITS, `${label} ${p.date} ${k} ${v}`);
          }
          if (p.volume !== null) assert.ok(digitsOf(p.volume).decimals <= minorUnits(cur), `${label} ${p.date} volume ${p.volume}`);
        }
      }
    }
  });
});

describe('migration 004: candle volume may be null (no approximated volume stored)', () => {
  const roundTrip = async (store: Store): Promise<void> => {
    await store.candles.upsert('XYZ', '1h', [
      { time: 3600, open: 1, high: 2, low: 0.5, close: 1.5, volume: null },
      { time: 7200, open: 1.5, high: 2, low: 1, close: 1.75, volume: 12.5 },
    ]);
    assert.deepEqual((await store.candles.range('XYZ', '1h', 0, 10_800)).map((k) => k.volume), [null, 12.5]);
  };

  test('SQLite: candles stored before the migration are kept; a null volume round-trips', async () => {
    const dir = tempDir('quotes-m004-');
    try {
      const file = join(dir.path, 'q.sqlite');
      // A database as the previous release left it: migrations 001-003 and one candle.
      const raw = new BetterSqlite3(file);
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: raw }) });
      const all = migrations('sqlite');
      const upTo3: Record<string, Migration> = Object.fromEntries(Object.entries(all).filter(([name]) => name < '004'));
      const { error } = await new Migrator({ db, provider: { getMigrations: () => Promise.resolve(upTo3) } }).migrateToLatest();
      assert.equal(error, undefined);
      raw.prepare("INSERT INTO candle_series (symbol, base, cov_from, cov_to) VALUES ('OLD', '1d', 0, 86400)").run();
      raw.prepare('INSERT INTO candles (series_id, t, o, h, l, c, v) VALUES (1, 0, 1, 2, 0.5, 1.5, 99.5)').run();
      await db.destroy();

      const store = openSqliteStore(file);
      assert.equal((await store.migrate())[0], '004_candle_volume_nullable', 'migration 004 runs first (later ones follow)');
      assert.deepEqual(await store.candles.range('OLD', '1d', 0, 86_400), [{ time: 0, open: 1, high: 2, low: 0.5, close: 1.5, volume: 99.5 }]);
      await roundTrip(store);
      await store.close();
    } finally {
      dir.cleanup();
    }
  });

  test('PostgreSQL: a null volume round-trips', async () => {
    const pg = await startPostgres();
    try {
      await pg.createDatabase('m004');
      const store = openPostgresStore(pg.urlFor('m004'));
      await store.migrate();
      await roundTrip(store);
      await store.close();
    } finally {
      await pg.stop();
    }
  });
});
