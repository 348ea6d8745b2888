import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { FakeClock, startFakeBinance, tempDir, type FakeBinance, type FakeKline } from '@rls/testkit';
import { Backfiller } from '../../src/history/backfill.js';
import { HistoryService } from '../../src/history/history-service.js';
import { createLogger } from '../../src/logger.js';
import { CcxtExchangeClient } from '../../src/market/exchange-client.js';
import { ExchangeMarket } from '../../src/market/exchange-market.js';
import { UpstreamCounters } from '../../src/market/retry.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/domain/repositories.js';

const HOUR = 3600;
const START = Date.UTC(2026, 0, 1) / 1000;
const N = 2500;
/** The clock sits 30 minutes into the hour after the last candle: all N candles are closed. */
const NOW = (START + N * HOUR + 1800) * 1000;

function klines(skip: (i: number) => boolean = () => false): FakeKline[] {
  const out: FakeKline[] = [];
  for (let i = 0; i < N; i++) {
    if (skip(i)) continue;
    const p = 50_000 + i;
    out.push({ openTime: (START + i * HOUR) * 1000, open: p, high: p + 10, low: p - 10, close: p + 1, volume: 2, quoteVolume: 2 * (p + 1) });
  }
  return out;
}

describe('history backfill: paging, exchange going away, resume after restart, gaps', () => {
  let fake: FakeBinance;
  const dir = tempDir('quotes-backfill-');
  const file = join(dir.path, 'q.sqlite');
  const clock = new FakeClock(NOW);
  const log = createLogger('info', new Writable({ write: (_c: Buffer, _e, cb) => cb() }));

  before(async () => {
    fake = await startFakeBinance({ markets: [{ symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' }] });
    fake.setKlines('BTCUSDT', '1h', klines());
  });
  after(async () => {
    await fake.close();
    dir.cleanup();
  });

  /** A fresh process: new store handle, new ccxt client, new backfiller. */
  async function boot(): Promise<{ store: Store; backfill: Backfiller; market: ExchangeMarket }> {
    const store = openSqliteStore(file);
    await store.migrate();
    const counters = new UpstreamCounters();
    const client = new CcxtExchangeClient({
      id: 'binance',
      restUrl: fake.url,
      timeoutMs: 1000,
      rateLimitMs: 0,
      retry: { attempts: 2, baseMs: 1, maxMs: 1, random: { int: () => 0 }, sleep: () => Promise.resolve() },
      clock,
      counters,
      log,
    });
    const market = new ExchangeMarket({ clients: [client], clock, log, counters, outlierPercent: 5, fiatPairs: [], staleMs: 300_000 });
    const history = new HistoryService({ candles: store.candles, source: market });
    const backfill = new Backfiller({ source: market, candles: store.candles, states: store.backfill, history, clock, log, windows: [{ base: '1h', days: null }] });
    return { store, backfill, market };
  }

  test('the exchange goes away mid-backfill; a restart resumes at the saved cursor and completes', async () => {
    const first = await boot();
    // Two pages get through, then every klines request has its connection reset.
    fake.addFault({ path: '/klines', kind: 'reset', after: 2, times: Infinity });
    assert.equal(await first.backfill.backfillSeries('BTC', { base: '1h', days: null }), 'failed');
    const st = await first.store.backfill.get('BTC', '1h');
    assert.equal(st?.cursor, START + 2000 * HOUR, 'cursor saved after the last good page');
    assert.equal(st?.done, false);
    assert.match(st?.lastError ?? '', /network/);
    assert.equal(await first.store.candles.count('BTC', '1h', 0, 2 ** 40), 2000);
    await first.market.close();
    await first.store.close();

    fake.clearFaults();
    const before = fake.requests.length;
    const second = await boot();
    assert.equal(await second.backfill.backfillSeries('BTC', { base: '1h', days: null }), 'done');
    const klineCalls = fake.requests.slice(before).filter((r) => r.path.endsWith('/klines'));
    assert.equal(klineCalls[0]?.query.get('startTime'), String((START + 2000 * HOUR) * 1000), 'resumed where it stopped, nothing refetched');
    assert.equal(klineCalls.length, 1);
    const rows = await second.store.candles.range('BTC', '1h', 0, 2 ** 40);
    assert.equal(rows.length, N);
    assert.deepEqual(rows[1234], { time: START + 1234 * HOUR, open: 51234, high: 51244, low: 51224, close: 51235, volume: 2 * 51235 });
    assert.deepEqual(await second.store.candles.coverage('BTC', '1h'), { from: 0, to: START + N * HOUR });
    assert.equal((await second.store.backfill.get('BTC', '1h'))?.done, true);
    await second.market.close();
    await second.store.close();
  });

  test('gaps inside the stored span are found and refetched; incremental sync appends new candles', async () => {
    const { store, backfill, market } = await boot();
    // Simulate a hole (as after a partial import): drop two stretches, then refill them.
    const db = (store as unknown as { db: { deleteFrom: (t: string) => { where: (...a: unknown[]) => { where: (...a: unknown[]) => { execute: () => Promise<unknown> } } } } }).db;
    await db.deleteFrom('candles').where('t', '>=', START + 100 * HOUR).where('t', '<', START + 110 * HOUR).execute();
    await db.deleteFrom('candles').where('t', '>=', START + 2400 * HOUR).where('t', '<', START + 2401 * HOUR).execute();
    assert.equal(await store.candles.count('BTC', '1h', 0, 2 ** 40), N - 11);
    const r = await backfill.refillGaps('BTC', '1h');
    assert.deepEqual(r, { found: 2, remaining: 0 });
    assert.equal(await store.candles.count('BTC', '1h', 0, 2 ** 40), N);

    // Two more hours pass and the exchange has two more candles.
    const more = [N, N + 1].map((i) => ({ openTime: (START + i * HOUR) * 1000, open: 1, high: 2, low: 0.5, close: 1.5, volume: 1, quoteVolume: 1.5 }));
    fake.setKlines('BTCUSDT', '1h', [...klines(), ...more]);
    clock.advance(2 * HOUR * 1000);
    await backfill.sync('BTC', '1h');
    assert.equal(await store.candles.count('BTC', '1h', 0, 2 ** 40), N + 2);
    assert.deepEqual(await store.candles.coverage('BTC', '1h'), { from: 0, to: START + (N + 2) * HOUR });
    await market.close();
    await store.close();
  });
});
