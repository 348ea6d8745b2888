import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HistoryService } from '../../src/history/history-service.js';
import { DAY } from '../../src/domain/intervals.js';
import { resample } from '../../src/history/resample.js';
import type { BaseInterval } from '../../src/domain/intervals.js';
import type { Candle, CandlePage, CandlePageRequest, MarketSource } from '../../src/domain/market.js';
import { MemoryStore } from '../../src/store/memory-store.js';

/** Monday 16 March 2026 00:00 UTC. */
const MON = Date.UTC(2026, 2, 16) / 1000;
const day = (i: number, volume: number | null = 10): Candle => ({ time: MON + i * DAY, open: 100 + i, high: 110 + i, low: 90 + i, close: 105 + i, volume });

/** Closed daily candles of the week before and the in-progress one, as an exchange would answer. */
class ScriptedSource implements MarketSource {
  readonly kind = 'scripted';
  liveCalls = 0;
  live: Candle | Error | undefined = { time: MON, open: 100, high: 120, low: 95, close: 118, volume: 4 };
  listSymbols(): Promise<readonly string[]> {
    return Promise.resolve(['BTC']);
  }
  tickers(): Promise<{ coins: never[]; venues: never[] }> {
    return Promise.resolve({ coins: [], venues: [] });
  }
  candles(req: CandlePageRequest): Promise<CandlePage> {
    const all = [-7, -6, -5, -4, -3, -2, -1, 0].map((i) => day(i, i === -3 ? null : 10));
    return Promise.resolve({ candles: all.filter((k) => k.time >= req.from && k.time < req.to) });
  }
  liveCandle(_symbol: string, _base: BaseInterval, asOf: number): Promise<Candle | undefined> {
    this.liveCalls++;
    if (this.live instanceof Error) return Promise.reject(this.live);
    return Promise.resolve(this.live === undefined || asOf <= this.live.time ? undefined : { ...this.live });
  }
}

describe('in-progress candles and volumes the source does not report', () => {
  test('a bucket with a candle without volume has no volume (a partial sum would understate it)', () => {
    const out = resample('1d', [day(-7), day(-6, null), day(0), day(1)], '1wk');
    assert.deepEqual(out.map((p) => p.volume), [null, 20]);
  });

  test('the in-progress base candle is appended (1d) or merged into its bucket (1wk), with the as-of instant as close time', async () => {
    const source = new ScriptedSource();
    const history = new HistoryService({ candles: new MemoryStore().candles, source });
    const asOf = MON + 15 * 3600;
    const daily = await history.series('BTC', '1d', MON - 2 * DAY, asOf);
    assert.deepEqual(daily.map((p) => p.time), [MON - 2 * DAY, MON - DAY, MON]);
    assert.deepEqual(daily[2], { time: MON, open: 100, high: 120, low: 95, close: 118, volume: 4, closeTime: asOf });

    // Tuesday: Monday has closed and is stored; Tuesday is in progress and joins Monday's week.
    source.live = { time: MON + DAY, open: 118, high: 130, low: 117, close: 125, volume: 6 };
    const tue = MON + DAY + 3600;
    const weekly = await history.series('BTC', '1wk', MON - 7 * DAY, tue);
    const last = weekly[weekly.length - 1]!;
    assert.equal(last.time, MON);
    assert.equal(last.open, 100, "Monday's open");
    assert.equal(last.close, 125);
    assert.equal(last.volume, 16, "Monday's volume and Tuesday's so far");
    assert.equal(last.high, 130);
    assert.equal(last.closeTime, tue);
    assert.equal(weekly[0]!.volume, null, 'the week before holds a candle without volume');
  });

  test('requests close together share one in-progress candle; a failing source costs only the newest bucket', async () => {
    const source = new ScriptedSource();
    const history = new HistoryService({ candles: new MemoryStore().candles, source, liveReuseSeconds: 10 });
    const asOf = MON + 3600;
    await history.series('BTC', '1d', MON - 2 * DAY, asOf);
    await history.series('BTC', '1d', MON - 2 * DAY, asOf + 5);
    assert.equal(source.liveCalls, 1, 'reused within 10 s in the same bucket');
    await history.series('BTC', '1d', MON - 2 * DAY, asOf + 10);
    assert.equal(source.liveCalls, 2, 'asked again after 10 s');

    source.live = new Error('exchange down');
    const out = await history.series('BTC', '1d', MON - 2 * DAY, asOf + 60);
    assert.deepEqual(out.map((p) => p.time), [MON - 2 * DAY, MON - DAY], 'closed history still served');
  });
});
