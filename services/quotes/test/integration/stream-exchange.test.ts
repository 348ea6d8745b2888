import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeBinance, startFakePtax, waitFor, type FakeBinance, type FakePtax, type FakeTicker } from '@rls/testkit';
import { makeExchangeApp, type ExchangeApp } from './exchange-support.js';
import { portOf, SseClient } from '../support/sse-client.js';

const T0 = Date.UTC(2026, 2, 16, 12, 0, 0);
const DAY_MS = 86_400_000;
const REFRESH_MS = 1000;

const ticker = (symbol: string, lastPrice: number): FakeTicker => ({
  symbol,
  lastPrice,
  openPrice: lastPrice * 0.98,
  highPrice: lastPrice * 1.01,
  lowPrice: lastPrice * 0.97,
  volume: 1000,
  quoteVolume: 1000 * lastPrice,
  openTime: T0 - 1000 - DAY_MS,
  closeTime: T0 - 1000,
});

describe('live prices from a (fake) exchange', () => {
  let binance: FakeBinance;
  let ptax: FakePtax;
  let t: ExchangeApp;

  before(async () => {
    binance = await startFakeBinance({
      markets: [
        { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' },
        { symbol: 'ETHUSDT', base: 'ETH', quote: 'USDT' },
      ],
      tickers: [ticker('BTCUSDT', 100_000), ticker('ETHUSDT', 2000)],
    });
    ptax = await startFakePtax({ closings: { USD: { '2026-03-13': 5.5 } } });
    // The background refresh runs every second of real time (the clock only stamps).
    t = await makeExchangeApp(T0, { MARKET_EXCHANGES: 'binance', MARKET_EXCHANGE_URL_BINANCE: binance.url, FX_SOURCE: 'ptax', FX_PTAX_URL: ptax.url, MARKET_REFRESH_INTERVAL: String(REFRESH_MS / 1000) });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await t.close();
    await binance.close();
    await ptax.close();
  });

  test('a new price at the exchange reaches an open stream within one refresh', async () => {
    const c = await SseClient.open(portOf(t.app.server.address()), `/api/v2/crypto/stream?coin=BTC,ETH&currency=BRL&token=${t.token}`);
    try {
      assert.equal(c.status, 200);
      await waitFor(() => c.quoteEvents().length >= 1, { what: 'first event', timeoutMs: 10_000 });
      assert.equal(c.quoteEvents()[0]!.coins.find((x) => x.coin === 'BTC')?.regularMarketPrice, 550_000);
      const changedAt = performance.now();
      binance.setTicker(ticker('BTCUSDT', 101_000));
      await waitFor(() => c.quoteEvents().some((e) => e.coins.some((x) => x.coin === 'BTC' && x.regularMarketPrice === 555_500)), { what: 'new BTC price streamed', timeoutMs: 10_000 });
      const latency = performance.now() - changedAt;
      // One refresh interval, plus the refresh's own round trip to the exchange and the fan-out.
      assert.ok(latency < REFRESH_MS + 1500, `arrived ${latency.toFixed(0)} ms after the change (refresh every ${REFRESH_MS} ms)`);
      const update = c.quoteEvents().find((e) => e.coins.some((x) => x.regularMarketPrice === 555_500))!;
      assert.deepEqual(update.coins.map((x) => x.coin), ['BTC'], 'ETH did not change, so it is not resent');
    } finally {
      c.close();
    }
  });
});
