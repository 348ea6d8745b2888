import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { FakeClock, startFakeBinance, type FakeBinance, type FakeTicker } from '@rls/testkit';
import { createLogger } from '../../src/logger.js';
import { CcxtExchangeClient } from '../../src/market/exchange-client.js';
import { ExchangeMarket } from '../../src/market/exchange-market.js';
import { UpstreamCounters, UpstreamFailure } from '../../src/market/retry.js';

const T0 = Date.UTC(2026, 2, 15, 12, 34, 56);
const btc = (lastPrice: number): FakeTicker => ({ symbol: 'BTCUSDT', lastPrice, openPrice: 99000, highPrice: 101000, lowPrice: 98000, volume: 10, quoteVolume: 1e6, openTime: T0 - 86_400_000, closeTime: T0 - 1000 });

describe('exchange faults: retried with backoff, counted, never fatal', () => {
  let fake: FakeBinance;
  const clock = new FakeClock(T0);
  const logs: string[] = [];
  const log = createLogger('info', new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString()), cb()) }));
  let sleeps: number[] = [];
  let counters: UpstreamCounters;
  let client: CcxtExchangeClient;
  let market: ExchangeMarket;

  before(async () => {
    fake = await startFakeBinance({ markets: [{ symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' }], tickers: [btc(100000)] });
  });
  after(async () => {
    await market.close();
    await fake.close();
  });

  const fresh = (): void => {
    sleeps = [];
    counters = new UpstreamCounters();
    client = new CcxtExchangeClient({
      id: 'binance',
      restUrl: fake.url,
      timeoutMs: 400,
      rateLimitMs: 0,
      retry: { attempts: 4, baseMs: 100, maxMs: 10_000, random: { int: (n) => Math.floor(n * 0.5) }, sleep: (ms) => (sleeps.push(ms), Promise.resolve()) },
      clock,
      counters,
      log,
    });
    market = new ExchangeMarket({ clients: [client], clock, log, counters, outlierPercent: 5, fiatPairs: [], staleMs: 300_000 });
  };

  test('429 then 418 with Retry-After: waits at least what the exchange asked, then succeeds', async () => {
    fresh();
    await market.listSymbols();
    fake.addFault({ path: '/ticker/24hr', kind: 'status', status: 429, headers: { 'Retry-After': '2' } });
    fake.addFault({ path: '/ticker/24hr', kind: 'status', status: 418, headers: { 'Retry-After': '7' }, body: JSON.stringify({ code: -1003, msg: 'Way too many requests; IP banned until 1773578103000.' }) });
    const t = (await market.tickers(['BTC'])).coins;
    assert.equal(t[0]?.lastPrice, 100000);
    assert.ok(sleeps[0]! >= 2000 && sleeps.some((s) => s >= 7000), `waits ${sleeps.join(', ')}`);
    assert.equal(counters.get('binance.rate-limited'), 1);
    assert.equal(counters.get('binance.banned'), 1);
    assert.ok(logs.some((l) => l.includes('"reason":"banned"')));
  });

  test('a timeout, a reset connection and garbage payloads are retried', async () => {
    fresh();
    await market.listSymbols();
    fake.addFault({ path: '/ticker/24hr', kind: 'hang' });
    fake.addFault({ path: '/ticker/24hr', kind: 'reset' });
    fake.addFault({ path: '/ticker/24hr', kind: 'garbage' });
    fake.setTicker(btc(100100));
    const t = (await market.tickers(['BTC'])).coins;
    assert.equal(t[0]?.lastPrice, 100100);
    assert.equal(counters.get('binance.timeout'), 1);
    assert.equal(counters.get('binance.network'), 1);
    assert.equal(counters.get('binance.malformed'), 1);
    assert.deepEqual(sleeps, [100, 200, 400].map((b) => b * 0.75), 'exponential backoff with jitter');
  });

  test('when every try fails, the last good tickers stay in use (the quote service ages them out)', async () => {
    fresh();
    await market.listSymbols();
    assert.equal((await market.tickers(['BTC'])).coins[0]?.lastPrice, 100100);
    fake.addFault({ path: '/ticker/24hr', kind: 'status', status: 503, times: 10, body: 'upstream down' });
    clock.advance(30_000);
    const t = (await market.tickers(['BTC'])).coins;
    assert.equal(t[0]?.lastPrice, 100100);
    assert.equal(t[0]?.closeTime, T0 - 1000, 'the source time is the old one');
    assert.equal(counters.get('binance.failures'), 4);
    assert.ok(logs.some((l) => l.includes('keeping the last good tickers')));
    fake.clearFaults();
  });

  test('a bad symbol is not retried', async () => {
    fresh();
    await market.listSymbols();
    await assert.rejects(client.ohlcv('NOPE/USDT', '1h', 0, 10), (e: unknown) => e instanceof UpstreamFailure && e.attempts === 1);
    assert.deepEqual(sleeps, []);
  });
});
