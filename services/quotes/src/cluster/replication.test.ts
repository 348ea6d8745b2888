import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { FakeClock, waitFor } from '@rls/testkit';
import { MarketSnapshots, type MarketSnapshot } from '../market/market-snapshots.js';
import type { FxSource, MarketSource, Ticker } from '../domain/market.js';
import { decodeMarketState, encodeMarketState, liveCandleKey } from './market-state-codec.js';
import { MemoryClusterStore } from './memory-cluster.js';
import { Replication, type Ingestion } from './replication.js';

const log = pino({ level: 'silent' });

const tick = (symbol: string, lastPrice: number, closeTime: number): Ticker => ({
  symbol,
  lastPrice,
  openPrice: lastPrice,
  priceChange: 0,
  priceChangePercent: 0,
  highPrice: lastPrice,
  lowPrice: lastPrice,
  quoteVolume: 1,
  openTime: closeTime - 86_400_000,
  closeTime,
});

/** A market that counts its calls and returns a new price each time. */
function countingMarket(clock: FakeClock): MarketSource & { calls: number } {
  const m = {
    kind: 'exchange',
    calls: 0,
    listSymbols: () => Promise.resolve(['BTC']),
    tickers: () => Promise.resolve({ coins: [tick('BTC', 100 + ++m.calls + 0.1, clock.now())], venues: [] }),
    candles: () => Promise.resolve({ candles: [] }),
  };
  return m;
}

const fx: FxSource = { kind: 'simulated', currencies: ['BRL'], latest: () => Promise.resolve({ time: 1, rates: new Map([['BRL', 5.5]]) }), daily: () => Promise.resolve([]) };

describe('market state codec', () => {
  test('round trip keeps every number exactly; malformed states are refused by name', () => {
    const snap: MarketSnapshot = { version: 3, fetchedAt: 1234, tickers: new Map([['BTC', { ...tick('BTC', 92392.02801000001, 5000), circulatingSupply: 19.8e6 }]]), fx: { time: 77, rates: new Map([['BRL', 5.123456789012345]]) } };
    const body = encodeMarketState(snap, ['BTC', 'ETH']);
    const back = decodeMarketState({ version: 9, fetchedAt: 1234, body });
    assert.deepEqual(back.symbols, ['BTC', 'ETH']);
    assert.equal(back.snapshot.version, 9, 'the stored version, not the writer\'s local one');
    assert.deepEqual(back.snapshot.tickers.get('BTC'), snap.tickers.get('BTC'));
    assert.deepEqual([...back.snapshot.fx.rates], [['BRL', 5.123456789012345]]);
    assert.equal(encodeMarketState(back.snapshot, back.symbols), body, 'encoding what was decoded gives the same text');
    // Official bid/ask quotes and the source of each rate reach followers too (brapi's /api/v2/currency).
    const withQuotes: MarketSnapshot = { ...snap, fx: { ...snap.fx, quotes: new Map([['USD', { bid: 5.4994, ask: 5.5, high: 5.511, low: 5.488, time: 99 }]]), sources: new Map([['BRL', 'ptax']]) } };
    const q = decodeMarketState({ version: 4, fetchedAt: 1, body: encodeMarketState(withQuotes, ['BTC']) }).snapshot.fx;
    assert.deepEqual(q.quotes, withQuotes.fx.quotes);
    assert.deepEqual(q.sources, withQuotes.fx.sources);
    assert.equal(back.snapshot.fx.quotes, undefined, 'absent where the source has none');
    // Per-exchange tickers too (CoinGecko's tickers and exchanges on every replica).
    const venue = { exchange: 'binance', pair: 'BTC/USDT', base: 'BTC', target: 'USDT', last: 100.5, baseVolume: 3.25, quoteVolume: 326.625, usdPerTarget: 1, bid: 100.4, ask: null, time: 5000, status: 'outlier' as const };
    const v = decodeMarketState({ version: 5, fetchedAt: 1, body: encodeMarketState({ ...snap, venues: [venue] }, ['BTC']) }).snapshot;
    assert.deepEqual(v.venues, [venue]);
    assert.throws(() => decodeMarketState({ version: 6, fetchedAt: 0, body: JSON.stringify({ v: 1, symbols: [], tickers: [], fx: { time: 0, rates: [] }, venues: [['x']] }) }), /malformed exchange ticker/);
    assert.throws(() => decodeMarketState({ version: 1, fetchedAt: 0, body: '{"v":2}' }), /market state version 1: not a version-1 market state/);
    assert.throws(() => decodeMarketState({ version: 2, fetchedAt: 0, body: JSON.stringify({ v: 1, symbols: [], tickers: [{ symbol: 'X' }], fx: { time: 0, rates: [] } }) }), /malformed ticker/);
  });
});

describe('replication over one in-memory cluster store', () => {
  test('only the lease holder asks the market; the follower serves the same snapshot, version and numbers', async () => {
    const clock = new FakeClock(1_000_000);
    const cluster = new MemoryClusterStore(() => clock.now());
    const replica = (role: 'all' | 'api') => {
      const market = countingMarket(clock);
      const rep = new Replication({ cluster, role, holder: role, leaseMs: 60_000, pollMs: 100_000, now: () => clock.now(), log });
      const snapshots = new MarketSnapshots({ market, fx, clock, symbols: ['BTC'], refreshMs: 100_000, log, mode: 'background', mayIngest: rep.mayIngest, publish: rep.publish });
      const ingestion: Ingestion = { start: () => Promise.resolve(snapshots.start()), stop: () => Promise.resolve(snapshots.stop()) };
      return { market, rep, snapshots, ingestion };
    };
    const leader = replica('all');
    const follower = replica('api');
    assert.deepEqual(await leader.rep.initialSymbols(() => leader.market.listSymbols()), ['BTC']);
    leader.rep.start(leader.snapshots, leader.ingestion);
    await waitFor(() => leader.snapshots.latestVersion() === 1, { what: 'first published snapshot', timeoutMs: 2000 });
    assert.deepEqual(await follower.rep.initialSymbols(() => Promise.reject(new Error('an api replica never asks the market'))), ['BTC']);
    follower.rep.start(follower.snapshots, follower.ingestion);
    const a = await leader.snapshots.current();
    const b = await follower.snapshots.current();
    assert.equal(b.version, a.version);
    assert.deepEqual([...b.tickers], [...a.tickers]);
    assert.equal(follower.market.calls, 0, 'the follower never asked its market');
    assert.equal(leader.market.calls, 1);

    // A new refresh on the leader reaches the follower at its next poll; listeners hear of it.
    const heard: number[] = [];
    follower.snapshots.onSnapshot((s) => heard.push(s.version));
    await leader.snapshots.refreshNow();
    await follower.rep.poll();
    assert.equal(follower.snapshots.latestVersion(), 2);
    assert.deepEqual(heard, [2]);
    assert.equal((await follower.snapshots.current()).tickers.get('BTC')?.lastPrice, 102.1);

    // Token changes reach changeVersion at the next poll; without successful polls nothing stays cached.
    const v0 = follower.rep.changeVersion();
    cluster.tokensChanged();
    await follower.rep.poll();
    assert.notEqual(follower.rep.changeVersion(), v0);
    clock.advance(200_001);
    assert.notEqual(follower.rep.changeVersion(), follower.rep.changeVersion(), 'stale polls: a new number every call');
    await Promise.all([leader.rep.stop(), follower.rep.stop()]);
  });

  test('in-progress candles travel with the snapshot: the follower serves the leader\'s, for the current bucket only', async () => {
    const HOUR = 3600;
    const t0 = 1_773_619_200; // 2026-03-16 00:00 UTC
    const clock = new FakeClock(t0 * 1000 + 60_000);
    const cluster = new MemoryClusterStore(() => clock.now());
    const make = (role: 'all' | 'api') => {
      const rep = new Replication({ cluster, role, holder: role, leaseMs: 60_000, pollMs: 100_000, now: () => clock.now(), log });
      const snapshots = new MarketSnapshots({ market: countingMarket(clock), fx, clock, symbols: ['BTC'], refreshMs: 100_000, log, mode: 'background', mayIngest: rep.mayIngest, publish: rep.publish });
      return { rep, snapshots, ingestion: { start: () => Promise.resolve(snapshots.start()), stop: () => Promise.resolve(snapshots.stop()) } satisfies Ingestion };
    };
    const leader = make('all');
    const follower = make('api');
    let live = new Map([[liveCandleKey('BTC', '1h'), { time: t0, open: 1, high: 3, low: 0.5, close: 2, volume: 7 }]]);
    leader.rep.publishLiveCandles(() => live);
    await leader.rep.initialSymbols(() => Promise.resolve(['BTC']));
    leader.rep.start(leader.snapshots, leader.ingestion);
    await waitFor(() => leader.snapshots.latestVersion() === 1, { what: 'first published snapshot', timeoutMs: 2000 });
    await follower.rep.initialSymbols(() => Promise.reject(new Error('never')));
    follower.rep.start(follower.snapshots, follower.ingestion);
    assert.deepEqual(await follower.rep.liveCandle('BTC', '1h', t0 + 60), await leader.rep.liveCandle('BTC', '1h', t0 + 60));
    assert.equal((await follower.rep.liveCandle('BTC', '1h', t0 + 60))?.close, 2);
    assert.equal(await follower.rep.liveCandle('BTC', '1h', t0 + HOUR + 1), undefined, 'not served for the next bucket');
    assert.equal(await follower.rep.liveCandle('BTC', '1d', t0 + 60), undefined, 'nor for another base');
    live = new Map([[liveCandleKey('BTC', '1h'), { time: t0, open: 1, high: 4, low: 0.5, close: 4, volume: 9 }]]);
    await leader.snapshots.refreshNow();
    assert.equal((await follower.rep.liveCandle('BTC', '1h', t0 + 60))?.close, 2, 'the follower serves what came with its snapshot');
    await follower.rep.poll();
    assert.equal((await follower.rep.liveCandle('BTC', '1h', t0 + 60))?.close, 4, 'and the new one with the next');
    // A keeper with nothing yet (a new leader's first pass): the candles served now are published again.
    leader.rep.publishLiveCandles(() => undefined);
    await leader.snapshots.refreshNow();
    await follower.rep.poll();
    assert.equal(follower.snapshots.latestVersion(), 3);
    assert.equal((await follower.rep.liveCandle('BTC', '1h', t0 + 60))?.close, 4);
    await Promise.all([leader.rep.stop(), follower.rep.stop()]);
  });

  test('losing the lease stops ingestion first, then hands over to the lost handler (main.ts exits)', async () => {
    const clock = new FakeClock(0);
    const cluster = new MemoryClusterStore(() => clock.now());
    let down = false;
    const flaky = Object.assign(Object.create(cluster) as MemoryClusterStore, {
      lease: { acquire: (n: string, h: string, t: number) => (down ? Promise.reject(new Error('db down')) : cluster.acquire(n, h, t)), release: (n: string, h: string) => cluster.release(n, h) },
      state: cluster,
      versions: () => cluster.versions(),
      close: () => Promise.resolve(),
    });
    const events: string[] = [];
    const rep = new Replication({ cluster: flaky, role: 'all', holder: 'x', leaseMs: 500, pollMs: 100_000, now: () => clock.now(), log });
    const market = countingMarket(clock);
    const snapshots = new MarketSnapshots({ market, fx, clock, symbols: ['BTC'], refreshMs: 100_000, log, mode: 'background', mayIngest: rep.mayIngest, publish: rep.publish });
    rep.onLost((reason) => events.push(`lost: ${reason}`));
    await rep.initialSymbols(() => market.listSymbols());
    rep.start(snapshots, {
      start: () => {
        events.push('start');
        return Promise.resolve();
      },
      stop: () => {
        events.push('stop');
        return Promise.resolve();
      },
    });
    await waitFor(() => events.includes('start'), { what: 'elected', timeoutMs: 2000 });
    assert.equal(rep.mayIngest(), true);
    down = true;
    clock.advance(400); // past 80 % of the 500 ms lease: no longer trusted
    assert.equal(rep.mayIngest(), false, 'checked synchronously before any upstream call');
    await snapshots.refreshNow();
    assert.equal(market.calls, 0, 'a refresh after the deadline asks nothing');
    await waitFor(() => events.length === 3, { what: 'the deadline timer', timeoutMs: 2000 });
    assert.deepEqual(events, ['start', 'stop', 'lost: the ingest lease was not renewed in time']);
    await rep.stop();
  });
});
