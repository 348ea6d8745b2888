import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startPostgres, tempDir, type PostgresServer } from '@rls/testkit';
import { HistoryService } from '../../src/history/history-service.js';
import { BASE_OF, bucketStart, DAY, type BaseInterval, type Interval } from '../../src/domain/intervals.js';
import { resample, type SeriesPoint } from '../../src/history/resample.js';
import type { Candle, CandlePage, CandlePageRequest, MarketSource } from '../../src/domain/market.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { CandleRepository, Store } from '../../src/domain/repositories.js';

/** Thursday 1 January 2026 00:00 UTC: weeks start on the Monday before (29 December 2025). */
const START = Date.UTC(2026, 0, 1) / 1000;
const STEP: Record<Exclude<BaseInterval, '1mo'>, number> = { '1m': 60, '30m': 1800, '1h': 3600, '1d': DAY };

/** Deterministic candles with gaps (every 97th missing) and a few without volume. */
function baseCandles(base: Exclude<BaseInterval, '1mo'>, n: number): Candle[] {
  const out: Candle[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 97 === 50) continue;
    const p = 100 + Math.sin(i / 13) * 9 + i / 50;
    out.push({ time: START + i * STEP[base], open: p, high: p * 1.013 + (i % 7), low: p * 0.987 - (i % 5), close: p + 0.25, volume: i % 211 === 3 ? null : 10 + (i % 17) });
  }
  return out;
}

/** A source with no candles: every series is read from what the test stored. */
class EmptySource implements MarketSource {
  readonly kind = 'empty';
  listSymbols(): Promise<readonly string[]> {
    return Promise.resolve(['BTC']);
  }
  tickers(): Promise<{ coins: never[]; venues: never[] }> {
    return Promise.resolve({ coins: [], venues: [] });
  }
  candles(_req: CandlePageRequest): Promise<CandlePage> {
    return Promise.resolve({ candles: [] });
  }
}

type Open = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

const CASES: Array<{ interval: Interval; n: number }> = [
  { interval: '2m', n: 3000 },
  { interval: '5m', n: 3000 },
  { interval: '15m', n: 6000 },
  { interval: '90m', n: 2000 },
  { interval: '60m', n: 1500 },
  { interval: '1wk', n: 400 },
  { interval: '5d', n: 400 },
  { interval: '1d', n: 400 },
];

function aggregationSuite(kind: string, open: Open): void {
  describe(`history aggregated in chunks by the store: ${kind}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    const stored = new Map<BaseInterval, Candle[]>();
    before(async () => {
      ({ store, cleanup } = await open());
      await store.migrate();
      for (const base of ['1m', '30m', '1h', '1d'] as const) {
        const n = Math.max(...CASES.filter((c) => BASE_OF[c.interval] === base).map((c) => c.n));
        const rows = baseCandles(base, n);
        stored.set(base, rows);
        await store.candles.upsert('BTC', base, rows);
        await store.candles.setCoverage('BTC', base, { from: START - 365 * DAY, to: START + n * STEP[base] });
      }
    });
    after(async () => {
      await store.close();
      await cleanup();
    });

    for (const { interval, n } of CASES) {
      test(`${interval}: equal to resampling every base candle at once, whatever the chunk size`, async () => {
        const base = BASE_OF[interval] as Exclude<BaseInterval, '1mo'>;
        const from = bucketStart(interval, START);
        const to = START + n * STEP[base];
        const rows = stored.get(base)!.filter((k) => k.time >= from && k.time < to);
        const expected: SeriesPoint[] = resample(base, rows, interval);
        // Chunks much smaller than the series (and not a divisor of it), and one chunk for all.
        for (const chunkCandles of [137, 1_000_000]) {
          const history = new HistoryService({ candles: store.candles, source: new EmptySource(), chunkCandles });
          const got = (await history.view('BTC', interval, from, to, to + 3600)).toArray();
          assert.equal(got.length, expected.length, `${interval} chunk ${chunkCandles}: point count`);
          for (let i = 0; i < got.length; i++) {
            const g = got[i]!;
            const e = expected[i]!;
            assert.equal(g.time, e.time, `${interval}[${i}] time`);
            assert.equal(g.open, e.open, `${interval}[${i}] open`);
            assert.equal(g.close, e.close, `${interval}[${i}] close`);
            assert.equal(g.high, e.high, `${interval}[${i}] high`);
            assert.equal(g.low, e.low, `${interval}[${i}] low`);
            assert.equal(g.closeTime, e.closeTime, `${interval}[${i}] closeTime`);
            if (e.volume === null) assert.equal(g.volume, null, `${interval}[${i}] volume is null when a candle has none`);
            else assert.ok(g.volume !== null && Math.abs(g.volume - e.volume) < 1e-9 * e.volume, `${interval}[${i}] volume ${g.volume} vs ${e.volume}`);
          }
        }
      });
    }

    test('as the window moves forward, a cached series is extended (its last, partial bucket read again), equal to a fresh read', async () => {
      const base = '1m';
      // Records the earliest open time each read asks the store for.
      let readFrom = Infinity;
      const spy: CandleRepository = Object.create(store.candles) as CandleRepository;
      spy.range = (symbol, b, from, to) => ((readFrom = Math.min(readFrom, from)), store.candles.range(symbol, b, from, to));
      spy.buckets = (symbol, b, from, to, step, offset) => ((readFrom = Math.min(readFrom, from)), store.candles.buckets(symbol, b, from, to, step, offset));
      const history = new HistoryService({ candles: spy, source: new EmptySource(), chunkCandles: 500 });
      const fresh = (): HistoryService => new HistoryService({ candles: store.candles, source: new EmptySource(), chunkCandles: 500 });
      for (const interval of ['15m', '5m', '1m'] as const) {
        // Windows sliding forward by odd amounts: each ends inside a bucket, so the cached last bucket is partial.
        let from = bucketStart(interval, START);
        let prevTo: number | undefined;
        for (const to of [START + 1000 * 60 + 420, START + 1037 * 60, START + 2500 * 60 + 180, START + 5990 * 60]) {
          const asOf = to + 7;
          readFrom = Infinity;
          const got = (await history.view('BTC', interval, from, to, asOf)).toArray();
          if (prevTo !== undefined) assert.ok(readFrom >= bucketStart(interval, prevTo - 60), `${interval}: only the newest buckets are read (from ${readFrom}, previous end ${prevTo})`);
          prevTo = to;
          const want = (await fresh().view('BTC', interval, from, to, asOf)).toArray();
          assert.deepEqual(got, want, `${interval} [${from}, ${to})`);
          const rows = stored.get(base)!.filter((k) => k.time >= from && k.time < bucketStart(base, to));
          assert.equal(got.length, resample(base, rows, interval).length);
          from = bucketStart(interval, from + 3 * 15 * 60);
        }
      }
    });

    test('the series cache holds at most its byte bound, least recently used out first', async () => {
      const history = new HistoryService({ candles: store.candles, source: new EmptySource(), cacheBytes: 200_000 });
      const to = START + 6000 * 60;
      // 15m over 6000 one-minute candles: 400 points, 22,464 bytes a block.
      for (let k = 0; k < 20; k++) await history.view('BTC', '15m', START + k * 900, to, to + 3600);
      assert.ok(history.cache.bytes <= 200_000, `held ${history.cache.bytes} bytes`);
      assert.ok(history.cache.size >= 7 && history.cache.size < 20, `kept ${history.cache.size} blocks`);
      const hitsBefore = history.cache.hits;
      await history.view('BTC', '15m', START + 19 * 900, to, to + 3600);
      assert.equal(history.cache.hits, hitsBefore + 1, 'the newest block is still cached');
      await history.view('BTC', '15m', START, to, to + 3600);
      assert.equal(history.cache.hits, hitsBefore + 1, 'the oldest block was evicted');
      const none = new HistoryService({ candles: store.candles, source: new EmptySource(), cacheBytes: 0 });
      await none.view('BTC', '15m', START, to, to + 3600);
      assert.equal(none.cache.bytes, 0, 'QUOTES_HISTORY_CACHE_BYTES=0 keeps nothing');
    });
  });
}

aggregationSuite('memory', () => Promise.resolve({ store: new MemoryStore(), cleanup: () => Promise.resolve() }));

aggregationSuite('sqlite', () => {
  const dir = tempDir('quotes-hist-agg-');
  return Promise.resolve({ store: openSqliteStore(join(dir.path, 'q.sqlite')), cleanup: () => Promise.resolve(dir.cleanup()) });
});

aggregationSuite('postgres', async () => {
  const pg: PostgresServer = await startPostgres();
  await pg.createDatabase('history');
  return { store: openPostgresStore(pg.urlFor('history')), cleanup: () => pg.stop() };
});
