import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { FakeClock, startFakeEcb, startFakePtax, type FakeEcb, type FakePtax } from '@rls/testkit';
import { FxHistory } from '../../src/history/fx-history.js';
import { createLogger } from '../../src/logger.js';
import { createSources } from '../../src/compose.js';
import { UpstreamCounters } from '../../src/market/retry.js';
import { loadSettings } from '../../src/settings.js';
import { MemoryStore } from '../../src/store/memory-store.js';

/** Monday 16 March 2026, 10:00 UTC (07:00 in Brasília: no bulletin yet today). */
const NOW = Date.UTC(2026, 2, 16, 10);
const day = (iso: string): number => Date.parse(`${iso}T00:00:00Z`) / 86_400_000;

describe('FX sources: PTAX, ECB, layering, stored daily series', () => {
  let ptax: FakePtax;
  let ecb: FakeEcb;
  const logs: string[] = [];
  const log = createLogger('info', new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString()), cb()) }));
  before(async () => {
    ptax = await startFakePtax({
      closings: {
        USD: { '2026-03-12': 5.25, '2026-03-13': 5.5 },
        EUR: { '2026-03-12': 5.775, '2026-03-13': 6.05 },
        JPY: { '2026-03-13': 0.0366 },
      },
    });
    ecb = await startFakeEcb({
      days: {
        '2026-03-12': { USD: 1.1, BRL: 5.78, JPY: 165 },
        '2026-03-13': { USD: 1.1, BRL: 6.325, JPY: 166.1 },
      },
    });
  });
  after(async () => {
    await ptax.close();
    await ecb.close();
  });

  const sources = (fx: string) => {
    const settings = loadSettings({}, { MARKET_SOURCE: 'exchange', FX_SOURCE: fx, FX_PTAX_URL: ptax.url, FX_ECB_URL: ecb.url, MARKET_RETRY_ATTEMPTS: '2' });
    const counters = new UpstreamCounters();
    return { ...createSources(settings, { clock: new FakeClock(NOW), log, counters, sleep: () => Promise.resolve() }), counters };
  };

  test('PTAX latest: closing bulletin of the last business day (empty weekend answers walked past); crosses via BRL', async () => {
    const { fx } = sources('ptax');
    const snap = await fx.latest();
    assert.equal(snap.rates.get('BRL'), 5.5);
    assert.equal(snap.rates.get('EUR'), 5.5 / 6.05);
    assert.equal(snap.rates.get('JPY'), 5.5 / 0.0366);
    assert.equal(snap.time, NOW, 'fetched now: current');
    // Bid/ask of the closing bulletin, the day's extremes over all three bulletins (brapi's /api/v2/currency).
    const usd = snap.quotes?.get('USD');
    assert.deepEqual(usd, { bid: 5.4994, ask: 5.5, high: Math.round(5.5 * 1.002 * 1e10) / 1e10, low: Math.round((5.5 * 0.998 - 0.0006) * 1e4) / 1e4, time: Date.UTC(2026, 2, 13, 16, 5, 31) });
    const dayQueries = ptax.requests.map((r) => decodeURIComponent(r)).filter((r) => r.includes('CotacaoMoedaDia') && r.includes("'USD'"));
    assert.deepEqual(
      dayQueries.map((r) => /dataCotacao='([^']+)'/.exec(r)?.[1]),
      ['03-16-2026', '03-15-2026', '03-14-2026', '03-13-2026'],
      'today, Sunday and Saturday are empty; Friday has the closing bulletin',
    );
  });

  test('ECB: USD->X = rate(X) / rate(USD) of the newest day; history from the hist file', async () => {
    const { fx } = sources('ecb');
    const snap = await fx.latest();
    assert.equal(snap.rates.get('BRL'), 6.325 / 1.1);
    assert.equal(snap.rates.get('EUR'), 1 / 1.1);
    assert.deepEqual(await fx.daily('JPY', '2026-03-01', '2026-03-31'), [
      { date: '2026-03-12', rate: 165 / 1.1 },
      { date: '2026-03-13', rate: 166.1 / 1.1 },
    ]);
  });

  test('daily PTAX series stored in the store; weekends carried from the last business day', async () => {
    const { fx } = sources('ptax');
    const store = new MemoryStore();
    const hist = new FxHistory(fx, new FakeClock(NOW), { repo: store.fxRates, earliest: '2026-03-01' });
    const rateOn = await hist.lookup('EUR');
    assert.equal(rateOn(day('2026-03-11')), null, 'before the first fixing');
    assert.equal(rateOn(day('2026-03-12')), 5.25 / 5.775);
    assert.equal(rateOn(day('2026-03-14')), 5.5 / 6.05, 'Saturday: Friday carried');
    assert.equal(rateOn(day('2026-03-15')), 5.5 / 6.05, 'Sunday: Friday carried');
    assert.deepEqual(await store.fxRates.range('EUR', '2026-01-01', '2026-12-31'), [
      { date: '2026-03-12', rate: 5.25 / 5.775 },
      { date: '2026-03-13', rate: 5.5 / 6.05 },
    ]);
    // A new process with the PTAX service down still converts history from the store.
    ptax.failNext(100, 503);
    const again = new FxHistory(fx, new FakeClock(NOW), { repo: store.fxRates, earliest: '2026-03-01', log });
    assert.equal((await again.lookup('EUR'))(day('2026-03-14')), 5.5 / 6.05);
    ptax.failNext(0);
  });

  test('layered: PTAX down -> ECB answers; official sources disagreeing are logged and counted', async () => {
    const { fx, counters } = sources('ptax,ecb');
    ptax.failNext(100, 503);
    const snap = await fx.latest();
    assert.equal(snap.rates.get('BRL'), 6.325 / 1.1, 'ECB fills in');
    assert.ok(counters.get('ptax.http-503') >= 1);
    ptax.failNext(0);
    const both = sources('ptax,ecb');
    const s2 = await both.fx.latest();
    assert.equal(s2.rates.get('BRL'), 5.5, 'PTAX preferred when it answers');
    // 5.5 vs 5.75: 4.5 % apart.
    assert.equal(both.counters.get('fx.crosscheck.BRL'), 1);
    assert.ok(logs.some((l) => l.includes('official FX sources disagree')));
  });
});
