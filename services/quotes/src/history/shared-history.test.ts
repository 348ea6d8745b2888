// History as replicas that do not ingest serve it: from the store and the published in-progress
// candles only, never from the sources; and the ingesting replica's keeper that feeds them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { FakeClock } from '@rls/testkit';
import { decodeMarketState, encodeMarketState, liveCandleKey } from '../cluster/market-state-codec.js';
import type { MarketSnapshot } from '../market/market-snapshots.js';
import type { Candle, CandlePage, CandlePageRequest, DailyRate, FxSource, MarketSource } from '../domain/market.js';
import { MemoryStore } from '../store/memory-store.js';
import { FxHistory } from './fx-history.js';
import { HistoryService } from './history-service.js';
import { DAY, type BaseInterval } from '../domain/intervals.js';
import { LiveCandleKeeper } from './live-candle-keeper.js';

const log = pino({ level: 'silent' });
/** Monday 16 March 2026 00:00 UTC. */
const MON = Date.UTC(2026, 2, 16) / 1000;
const day = (i: number): Candle => ({ time: MON + i * DAY, open: 100 + i, high: 110 + i, low: 90 + i, close: 105 + i, volume: 10 + i });

/** Daily candles up to yesterday and today's in progress; counts every call. */
class CountingSource implements MarketSource {
  readonly kind = 'counting';
  candleCalls = 0;
  liveCalls = 0;
  listSymbols(): Promise<readonly string[]> {
    return Promise.resolve(['BTC']);
  }
  tickers(): Promise<{ coins: never[]; venues: never[] }> {
    return Promise.resolve({ coins: [], venues: [] });
  }
  candles(req: CandlePageRequest): Promise<CandlePage> {
    this.candleCalls++;
    const all = [-7, -6, -5, -4, -3, -2, -1].map(day);
    return Promise.resolve({ candles: all.filter((k) => k.time >= req.from && k.time < req.to) });
  }
  liveCandle(_symbol: string, base: BaseInterval): Promise<Candle | undefined> {
    this.liveCalls++;
    return Promise.resolve(base === '1d' ? { time: MON, open: 100, high: 120, low: 95, close: 118, volume: 4 } : undefined);
  }
}

describe('history on a replica that may not fetch', () => {
  test('serves stored candles within the coverage and the published in-progress candle, never asking the source', async () => {
    const store = new MemoryStore();
    const source = new CountingSource();
    const published: Candle = { time: MON, open: 100, high: 125, low: 95, close: 121, volume: 5 };
    const follower = new HistoryService({ candles: store.candles, source, mayFetch: () => false, sharedLive: (_s, base, asOf) => Promise.resolve(base === '1d' && asOf > MON ? published : undefined) });
    const asOf = MON + 15 * 3600;
    // Nothing stored yet: only the published candle of today.
    assert.deepEqual((await follower.series('BTC', '1d', MON - 3 * DAY, asOf)).map((p) => p.time), [MON]);
    // The ingesting replica stores the week up to Saturday first (coverage to Sunday 00:00)...
    await store.candles.upsert('BTC', '1d', [-7, -6, -5, -4, -3, -2].map(day));
    await store.candles.setCoverage('BTC', '1d', { from: MON - 7 * DAY, to: MON - DAY });
    const first = await follower.series('BTC', '1d', MON - 3 * DAY, asOf);
    assert.deepEqual(first.map((p) => p.time), [MON - 3 * DAY, MON - 2 * DAY, MON]);
    // ...and Sunday a moment later: the follower serves it at once, never a block cached without it.
    await store.candles.upsert('BTC', '1d', [day(-1)]);
    await store.candles.setCoverage('BTC', '1d', { from: MON - 7 * DAY, to: MON });
    const later = await follower.series('BTC', '1d', MON - 3 * DAY, asOf + 60);
    assert.deepEqual(later.map((p) => p.time), [MON - 3 * DAY, MON - 2 * DAY, MON - DAY, MON]);
    assert.deepEqual(later[3], { time: MON, open: 100, high: 125, low: 95, close: 121, volume: 5, closeTime: asOf + 60 });
    assert.equal(source.candleCalls, 0, 'no candle request');
    assert.equal(source.liveCalls, 0, 'no in-progress candle request');
  });

  test('the leader (may fetch) fills from the source and both serve the same series', async () => {
    const store = new MemoryStore();
    const source = new CountingSource();
    let leading = true;
    const live = (_s: string, base: BaseInterval, asOf: number): Promise<Candle | undefined> => Promise.resolve(base === '1d' && asOf > MON ? day(0) : undefined);
    const leader = new HistoryService({ candles: store.candles, source, mayFetch: () => leading, sharedLive: live });
    const follower = new HistoryService({ candles: store.candles, source, mayFetch: () => false, sharedLive: live });
    const asOf = MON + 3600;
    const a = await leader.series('BTC', '1d', MON - 5 * DAY, asOf);
    assert.ok(source.candleCalls > 0);
    const calls = source.candleCalls;
    const b = await follower.series('BTC', '1d', MON - 5 * DAY, asOf);
    assert.deepEqual(b, a);
    assert.equal(a.length, 6);
    leading = false;
    await leader.series('BTC', '1d', MON - 7 * DAY, asOf);
    assert.equal(source.candleCalls, calls, 'a replica that lost the lease never fetches');
  });
});

describe('FX history on a replica that may not fetch', () => {
  test('reads the stored fixings only, again after reloadMs; the leader fetches them', async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 16, 12));
    const store = new MemoryStore();
    let dailyCalls = 0;
    const fx: FxSource = {
      kind: 'simulated',
      currencies: ['BRL'],
      latest: () => Promise.resolve({ time: 0, rates: new Map() }),
      daily: (): Promise<DailyRate[]> => {
        dailyCalls++;
        return Promise.resolve([{ date: '2026-03-13', rate: 5.1 }, { date: '2026-03-16', rate: 5.2 }]);
      },
    };
    const follower = new FxHistory(fx, clock, { repo: store.fxRates, mayFetch: () => false, reloadMs: 1000 });
    const leader = new FxHistory(fx, clock, { repo: store.fxRates, mayFetch: () => true });
    const empty = await follower.rates('BRL');
    assert.equal(empty.rateOn(MON / DAY), null, 'nothing stored yet');
    const fromLeader = await leader.rates('BRL');
    assert.equal(dailyCalls, 1);
    assert.equal((await follower.rates('BRL')).stamp, empty.stamp, 'served from memory until reloadMs passed');
    clock.advance(1000);
    const reloaded = await follower.rates('BRL');
    assert.equal(reloaded.rateOn(MON / DAY), 5.2);
    assert.equal(reloaded.stamp, fromLeader.stamp, 'the same digest as the leader (same ETags)');
    assert.equal(dailyCalls, 1, 'the follower never asked the source');
  });
});

describe('in-progress candles in the shared market state', () => {
  test('round trip; a malformed candle is refused by name', () => {
    const snap: MarketSnapshot = { version: 1, fetchedAt: 5, tickers: new Map(), fx: { time: 1, rates: new Map() } };
    const live = new Map([[liveCandleKey('BTC', '1h'), { time: MON, open: 1.1, high: 2.2, low: 0.5, close: 2.00000000001, volume: null }]]);
    const back = decodeMarketState({ version: 4, fetchedAt: 5, body: encodeMarketState(snap, ['BTC'], live) });
    assert.deepEqual([...back.live], [...live]);
    assert.equal(decodeMarketState({ version: 4, fetchedAt: 5, body: encodeMarketState(snap, ['BTC']) }).live.size, 0);
    const bad = JSON.stringify({ v: 1, symbols: [], tickers: [], fx: { time: 0, rates: [] }, live: [['BTC', '7h', 1, 1, 1, 1, 1, 1]] });
    assert.throws(() => decodeMarketState({ version: 2, fetchedAt: 0, body: bad }), /market state version 2: malformed in-progress candle/);
  });
});

describe('LiveCandleKeeper (the ingesting replica)', () => {
  test('a pass fetches each kept series\' in-progress candle, tops up a series one bucket behind, and leaves a far-behind one to the backfill', async () => {
    const clock = new FakeClock((MON + 3600) * 1000);
    const store = new MemoryStore();
    const source = new CountingSource();
    const history = new HistoryService({ candles: store.candles, source });
    const fxHistory = new FxHistory({ kind: 'x', currencies: [], latest: () => Promise.resolve({ time: 0, rates: new Map() }), daily: () => Promise.resolve([]) }, clock, { repo: store.fxRates });
    // BTC covered up to Saturday (one closed day missing), ETH far behind.
    await store.candles.setCoverage('BTC', '1d', { from: MON - 7 * DAY, to: MON - DAY });
    await store.candles.setCoverage('ETH', '1d', { from: MON - 7 * DAY, to: MON - 5 * DAY });
    const keeper = new LiveCandleKeeper({ source, candles: store.candles, history, fxHistory, fxCurrencies: [], clock, log, symbols: () => ['BTC', 'ETH'], bases: ['1d'], key: liveCandleKey });
    assert.equal(keeper.current(), undefined, 'nothing before the first pass ended');
    await keeper.runOnce();
    assert.deepEqual((await store.candles.coverage('BTC', '1d'))?.to, MON, 'topped up to the present');
    assert.equal((await store.candles.range('BTC', '1d', MON - DAY, MON)).length, 1);
    assert.deepEqual((await store.candles.coverage('ETH', '1d'))?.to, MON - 5 * DAY, 'left to the backfill');
    assert.equal(source.liveCalls, 2);
    assert.deepEqual(keeper.current()?.get(liveCandleKey('BTC', '1d'))?.close, 118);
    await keeper.stop();
  });

  test('today\'s candle is built from today\'s stored hourly candles and this hour\'s in progress: one kline request, not two', async () => {
    const H = 3600;
    const clock = new FakeClock((MON + 2 * H + 600) * 1000); // Monday 02:10
    const store = new MemoryStore();
    const asked: BaseInterval[] = [];
    const hour = (i: number, volume: number | null): Candle => ({ time: MON + i * H, open: 100 + i, high: 101 + i, low: 99 - i, close: 100.5 + i, volume });
    const source: MarketSource = {
      kind: 'x',
      listSymbols: () => Promise.resolve(['BTC']),
      tickers: () => Promise.resolve({ coins: [], venues: [] }),
      candles: () => Promise.resolve({ candles: [] }),
      liveCandle: (_s, base) => {
        asked.push(base);
        return Promise.resolve(base === '1h' ? { time: MON + 2 * H, open: 102, high: 110, low: 101, close: 105, volume: 3 } : { time: MON, open: 0, high: 0, low: 0, close: 0, volume: 0 });
      },
    };
    await store.candles.upsert('BTC', '1h', [hour(0, 10), hour(1, 20)]);
    await store.candles.setCoverage('BTC', '1h', { from: MON - DAY, to: MON + 2 * H });
    await store.candles.setCoverage('BTC', '1d', { from: MON - 7 * DAY, to: MON });
    const history = new HistoryService({ candles: store.candles, source });
    const fxHistory = new FxHistory({ kind: 'x', currencies: [], latest: () => Promise.resolve({ time: 0, rates: new Map() }), daily: () => Promise.resolve([]) }, clock, { repo: store.fxRates });
    const keeper = new LiveCandleKeeper({ source, candles: store.candles, history, fxHistory, fxCurrencies: [], clock, log, symbols: () => ['BTC'], bases: ['1d', '1h'], key: liveCandleKey });
    await keeper.runOnce();
    assert.deepEqual(asked, ['1h']);
    assert.deepEqual(keeper.current()?.get(liveCandleKey('BTC', '1d')), { time: MON, open: 100, high: 110, low: 98, close: 105, volume: 33 });
    // An hourly series not stored up to this hour: today's candle is asked of the source.
    await store.candles.setCoverage('BTC', '1h', { from: MON - DAY, to: MON });
    clock.advance(1000);
    asked.length = 0;
    await keeper.runOnce();
    assert.deepEqual(asked, ['1h', '1d']);
    await keeper.stop();
  });
});
