import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeBinance, startFakeBinanceUs, startFakePtax, tempDir, waitFor, type FakeBinance, type FakePtax, type FakeTicker } from '@rls/testkit';
import { makeExchangeApp, type ExchangeApp } from './exchange-support.js';
import type { CryptoJson } from '../support/helpers.js';

/** Sunday 15 March 2026, 12:34:56 UTC: the latest PTAX is Friday's. */
const T0 = Date.UTC(2026, 2, 15, 12, 34, 56);
const DAY_MS = 86_400_000;
const d = (iso: string): number => Date.parse(`${iso}T00:00:00Z`);

const ticker = (symbol: string, lastPrice: number, quoteVolume: number, extra: Partial<FakeTicker> = {}): FakeTicker => ({
  symbol,
  lastPrice,
  openPrice: lastPrice * 0.98,
  highPrice: lastPrice * 1.01,
  lowPrice: lastPrice * 0.97,
  volume: quoteVolume / lastPrice,
  quoteVolume,
  openTime: T0 - 1000 - DAY_MS,
  closeTime: T0 - 1000,
  ...extra,
});

const PTAX = { USD: { '2026-03-12': 5.25, '2026-03-13': 5.5 }, EUR: { '2026-03-12': 5.9, '2026-03-13': 6.0 } };

describe('exchange source end to end (fake Binance + fake PTAX)', () => {
  let binance: FakeBinance;
  let ptax: FakePtax;
  let t: ExchangeApp;
  const dir = tempDir('quotes-supply-');
  const get = (url: string) => t.app.inject({ url, headers: { authorization: `Bearer ${t.token}` } });

  before(async () => {
    binance = await startFakeBinance({
      markets: [
        { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' },
        { symbol: 'ETHUSDT', base: 'ETH', quote: 'USDT' },
        { symbol: 'DOGEUSDC', base: 'DOGE', quote: 'USDC' },
        { symbol: 'USDTBRL', base: 'USDT', quote: 'BRL' },
        { symbol: 'XRPBRL', base: 'XRP', quote: 'BRL' },
        { symbol: 'ETHBTC', base: 'ETH', quote: 'BTC' },
        { symbol: 'LUNAUSDT', base: 'LUNA', quote: 'USDT', status: 'BREAK' },
      ],
      tickers: [
        ticker('BTCUSDT', 100000.5, 1e6, { openPrice: 98000, highPrice: 101000, lowPrice: 97000 }),
        ticker('ETHUSDT', 2000, 5e5),
        ticker('DOGEUSDC', 0.2, 1e4),
        ticker('USDTBRL', 5.6, 2e7),
        ticker('XRPBRL', 3, 1e3),
        ticker('ETHBTC', 0.02, 10),
      ],
    });
    // Wednesday to Saturday; Wednesday has no PTAX yet, Saturday uses Friday's.
    binance.setKlines(
      'BTCUSDT',
      '1d',
      [80000, 82000, 84000, 86000].map((close, i) => ({ openTime: d('2026-03-11') + i * DAY_MS, open: close - 1000, high: close + 500, low: close - 1500, close, volume: 2, quoteVolume: 2 * close })),
    );
    ptax = await startFakePtax({ closings: PTAX });
    const supply = join(dir.path, 'supply.json');
    writeFileSync(supply, JSON.stringify({ BTC: 19_800_000 }));
    t = await makeExchangeApp(T0, { MARKET_EXCHANGES: 'binance', MARKET_EXCHANGE_URL_BINANCE: binance.url, FX_SOURCE: 'ptax', FX_PTAX_URL: ptax.url, MARKET_SUPPLY_FILE: supply, MARKET_WEBSOCKET: 'true' });
  });
  after(async () => {
    await t.close();
    await binance.close();
    await ptax.close();
    dir.cleanup();
  });

  test('known ticker x known PTAX closing = known regularMarketPrice in BRL (and EUR via PTAX cross)', async () => {
    const res = await get('/api/v2/crypto?coin=BTC&currency=BRL');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['x-data-source'], 'exchange');
    const c = res.json<CryptoJson>().coins[0]!;
    assert.equal(c.currencyRateFromUSD, 5.5, "Friday's closing bulletin (not the opening one), carried over the weekend");
    assert.equal(c.regularMarketPrice, 550002.75);
    assert.equal(c.regularMarketChange, (100000.5 - 98000) * 5.5);
    assert.equal(c.regularMarketDayHigh, 101000 * 5.5);
    assert.equal(c.regularMarketDayLow, 97000 * 5.5);
    assert.equal(c.regularMarketVolume, 1e6 * 5.5);
    assert.equal(c.marketCap, 100000.5 * 19_800_000 * 5.5, 'price x configured circulating supply');
    assert.equal(c.regularMarketTime, new Date(T0 - 1000).toISOString());
    const eth = (await get('/api/v2/crypto?coin=ETH&currency=BRL')).json<CryptoJson>().coins[0]!;
    assert.equal(eth.marketCap, 0, 'no supply figure -> 0, as brapi');
    const eur = (await get('/api/v2/crypto?coin=BTC&currency=EUR')).json<CryptoJson>().coins[0]!;
    assert.equal(eur.currencyRateFromUSD, 0.916666666667, '5.5 / 6.0 to the documented 12 significant digits of a rate');
    assert.equal(eur.regularMarketPrice, 100000.5 * (5.5 / 6.0));
    // One batched ticker call for every pair, never one call per coin.
    const tickerCalls = binance.requests.filter((r) => r.path.endsWith('/ticker/24hr'));
    assert.ok(tickerCalls.every((r) => r.query.get('symbols') !== null && r.query.get('symbol') === null));
  });

  test("/api/v2/currency: PTAX's closing bid/ask for official pairs (inverted for BRL-X), the layer's rate for crosses, change against the previous fixing", async () => {
    const res = await get('/api/v2/currency?currency=USD-BRL,BRL-EUR,EUR-USD');
    assert.equal(res.statusCode, 200, res.body);
    const [usdBrl, brlEur, eurUsd] = res.json<{ currency: Array<Record<string, string>> }>().currency;
    // The fake bulletins: closing ask 5.5, bid 0.0006 below; the day's extremes over three bulletins.
    assert.deepEqual([usdBrl!.bidPrice, usdBrl!.askPrice, usdBrl!.source], ['5.49940', '5.50000', 'ptax']);
    assert.equal(usdBrl!.updatedAtDate, '2026-03-13 13:05:31', "the closing bulletin's Brasília time");
    assert.equal(usdBrl!.percentageChange, ((5.5 / 5.25 - 1) * 100).toFixed(4), "against Thursday's fixing");
    assert.deepEqual([brlEur!.bidPrice, brlEur!.askPrice, brlEur!.source], [(1 / 6.0).toFixed(6), (1 / (6.0 - 0.0006)).toFixed(6), 'ptax']);
    assert.equal(eurUsd!.bidPrice, eurUsd!.askPrice, 'a cross pair: the FX layer rate on both sides');
    assert.equal(Number(eurUsd!.bidPrice), Number((6.0 / 5.5).toFixed(5)));
    assert.equal(eurUsd!.source, 'ptax', 'the source that gave the rates');
  });

  test('/available: coins traded against a USD-stable or fiat quote (not BTC-quoted, not halted)', async () => {
    const res = await get('/api/v2/crypto/available');
    assert.deepEqual(res.json(), { coins: ['BTC', 'DOGE', 'ETH', 'USDT'] });
    const usdtRes = await get('/api/v2/crypto?coin=USDT&currency=BRL');
    assert.equal(usdtRes.statusCode, 200, usdtRes.body);
    const usdt = usdtRes.json<CryptoJson>().coins[0]!;
    assert.equal(usdt.regularMarketPrice, 5.5, 'stablecoins are 1 USD');
  });

  test('known klines -> known history in BRL with each candle day\'s PTAX, weekend carried, null before the first fixing', async () => {
    const res = await get('/api/v2/crypto?coin=BTC&currency=BRL&range=5d&interval=1d');
    assert.equal(res.statusCode, 200, res.body);
    const h = res.json<CryptoJson>().coins[0]!.historicalDataPrice!;
    assert.deepEqual(h, [
      { date: d('2026-03-11') / 1000, open: null, high: null, low: null, close: null, volume: null, adjustedClose: null },
      { date: d('2026-03-12') / 1000, open: 81000 * 5.25, high: 82500 * 5.25, low: 80500 * 5.25, close: 82000 * 5.25, volume: 2 * 82000 * 5.25, adjustedClose: 82000 * 5.25 },
      { date: d('2026-03-13') / 1000, open: 83000 * 5.5, high: 84500 * 5.5, low: 82500 * 5.5, close: 84000 * 5.5, volume: 2 * 84000 * 5.5, adjustedClose: 84000 * 5.5 },
      { date: d('2026-03-14') / 1000, open: 85000 * 5.5, high: 86500 * 5.5, low: 84500 * 5.5, close: 86000 * 5.5, volume: 2 * 86000 * 5.5, adjustedClose: 86000 * 5.5 },
    ]);
    const stored = await t.services.store.fxRates.range('BRL', '2026-03-01', '2026-03-31');
    assert.deepEqual(stored, [
      { date: '2026-03-12', rate: 5.25 },
      { date: '2026-03-13', rate: 5.5 },
    ], 'daily fixings are kept in the store for historical conversion');
  });

  test('WebSocket miniTicker updates the price between REST refreshes', async () => {
    await waitFor(() => binance.subscriptions().includes('btcusdt@miniTicker'), { what: 'miniTicker subscription' });
    const sent = binance.pushMiniTicker(ticker('BTCUSDT', 100200, 1.1e6, { openPrice: 98000, highPrice: 101000, lowPrice: 97000 }), T0);
    assert.ok(sent > 0);
    await waitFor(async () => {
      await t.services.snapshots.refreshNow();
      return (await get('/api/v2/crypto?coin=BTC&currency=BRL')).json<CryptoJson>().coins[0]!.regularMarketPrice === 100200 * 5.5;
    }, { what: 'streamed price' });
  });

  test('data going stale is answered with 503 stating its age', async () => {
    t.clock.advance(400_000); // MARKET_STALE_AFTER default 300 s; the exchange keeps its old closeTime
    binance.setTicker(ticker('BTCUSDT', 100000.5, 1e6, { closeTime: T0 - 1000 }));
    await t.services.snapshots.refreshNow();
    const res = await get('/api/v2/crypto?coin=ETH');
    assert.equal(res.statusCode, 503);
    assert.deepEqual(res.json(), { error: true, message: 'Quote temporarily unavailable: ETH (data is 401 s old; limit 300 s)' });
  });
});

describe('several exchanges: volume weighting and outliers', () => {
  test('price is volume-weighted, volume summed, an exchange deviating beyond the threshold is left out and logged', async () => {
    const a = await startFakeBinance({
      markets: [
        { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' },
        { symbol: 'ETHUSDT', base: 'ETH', quote: 'USDT' },
      ],
      tickers: [ticker('BTCUSDT', 100000.5, 1e6), ticker('ETHUSDT', 2000, 5e6)],
    });
    const b = await startFakeBinanceUs({
      markets: [
        { symbol: 'BTCUSD', base: 'BTC', quote: 'USD' },
        { symbol: 'BTCUSDT', base: 'BTC', quote: 'USDT' },
        { symbol: 'ETHUSDT', base: 'ETH', quote: 'USDT' },
      ],
      tickers: [ticker('BTCUSD', 100100, 3e6), ticker('BTCUSDT', 100300, 1e5), ticker('ETHUSDT', 2300, 1e5)],
    });
    const ptax = await startFakePtax({ closings: PTAX });
    const t = await makeExchangeApp(T0, {
      MARKET_EXCHANGES: 'binance,binanceus',
      MARKET_EXCHANGE_URL_BINANCE: a.url,
      MARKET_EXCHANGE_URL_BINANCEUS: b.url,
      FX_SOURCE: 'ptax',
      FX_PTAX_URL: ptax.url,
      MARKET_OUTLIER_PERCENT: '5',
    });
    try {
      const get = (url: string) => t.app.inject({ url, headers: { authorization: `Bearer ${t.token}` } });
      const res = (await get('/api/v2/crypto?coin=BTC,ETH&currency=USD')).json<CryptoJson>();
      const [btc, eth] = res.coins;
      // binanceus: its most liquid USD-stable pair (BTC/USD, 3e6) is used, not BTC/USDT.
      const expected = (1e6 / 4e6) * 100000.5 + (3e6 / 4e6) * 100100;
      assert.equal(btc!.regularMarketPrice, expected);
      assert.equal(btc!.regularMarketVolume, 4e6);
      assert.equal(eth!.regularMarketPrice, 2000, 'the 15 % outlier is left out');
      assert.equal(eth!.regularMarketVolume, 5e6);
      assert.ok(t.logs.some((l) => l.includes('outlier') && l.includes('binanceus')), 'the outlier is logged');
      assert.equal(t.services.counters.get('binanceus.outliers'), 1);

      // CoinGecko's per-exchange tickers: every pair ingested, with what the aggregation made of it.
      const cg = async <T>(url: string): Promise<T> => {
        const r = await t.app.inject({ url, headers: { 'x-cg-pro-api-key': t.token } });
        assert.equal(r.statusCode, 200, `${url}: ${r.body}`);
        return r.json<T>();
      };
      interface CgTicker { base: string; target: string; market: { identifier: string; name: string; logo?: string }; last: number; volume: number; converted_last: { usd: number; btc: number }; converted_volume: { usd: number }; trust_score: string; is_anomaly: boolean; is_stale: boolean; coin_id: string; target_coin_id?: string }
      const ethTickers = await cg<{ name: string; tickers: CgTicker[] }>('/api/v3/coins/ethereum/tickers');
      assert.equal(ethTickers.name, 'Ethereum');
      assert.deepEqual(
        ethTickers.tickers.map((x) => [x.market.identifier, `${x.base}/${x.target}`, x.last, x.trust_score, x.is_anomaly]),
        [
          ['binance', 'ETH/USDT', 2000, 'green', false],
          ['binance_us', 'ETH/USDT', 2300, 'red', true],
        ],
        'the outlier the aggregation dropped is flagged as an anomaly',
      );
      assert.equal(ethTickers.tickers[0]!.converted_volume.usd, 5e6);
      assert.equal(ethTickers.tickers[0]!.volume, 5e6 / 2000, 'volume in base units');
      assert.equal(ethTickers.tickers[0]!.converted_last.btc, 2000 / expected, 'in BTC at the aggregated BTC price');
      assert.equal(ethTickers.tickers[0]!.target_coin_id, 'tether');
      const btcTickers = await cg<{ tickers: CgTicker[] }>('/api/v3/coins/bitcoin/tickers?order=volume_desc&include_exchange_logo=true');
      assert.deepEqual(
        btcTickers.tickers.map((x) => [x.market.identifier, `${x.base}/${x.target}`, x.trust_score]),
        [
          ['binance_us', 'BTC/USD', 'green'],
          ['binance', 'BTC/USDT', 'green'],
          ['binance_us', 'BTC/USDT', 'yellow'],
        ],
        "each exchange's most liquid pair is used; another pair on the same exchange is shown, not used",
      );
      assert.ok(btcTickers.tickers[0]!.market.logo?.endsWith('/icons/exchanges/binance_us.svg'));
      const only = await cg<{ tickers: CgTicker[] }>('/api/v3/coins/bitcoin/tickers?exchange_ids=binance');
      assert.deepEqual(only.tickers.map((x) => x.market.identifier), ['binance']);
      const coin = await cg<{ tickers: CgTicker[] }>('/api/v3/coins/bitcoin');
      assert.equal(coin.tickers.length, 3, '/coins/{id} fills its tickers the same way');
      const exchanges = await cg<Array<{ id: string; name: string; trade_volume_24h_btc: number }>>('/api/v3/exchanges');
      assert.deepEqual(exchanges.map((x) => x.id), ['binance', 'binance_us']);
      assert.ok(Math.abs(exchanges[0]!.trade_volume_24h_btc - 6e6 / expected) < 1e-6, '24 h volume in BTC from its tickers');
      assert.ok(Math.abs(exchanges[1]!.trade_volume_24h_btc - 3.2e6 / expected) < 1e-6);
      assert.deepEqual(await cg('/api/v3/exchanges/list'), [{ id: 'binance', name: 'Binance' }, { id: 'binance_us', name: 'Binance.US' }]);
      const us = await cg<{ name: string; coins: number; pairs: number; tickers: CgTicker[]; trade_volume_24h_btc: number }>('/api/v3/exchanges/binance_us');
      assert.deepEqual([us.name, us.coins, us.pairs, us.tickers.length], ['Binance.US', 2, 3, 3]);
      const usTickers = await cg<{ name: string; tickers: CgTicker[] }>('/api/v3/exchanges/binance_us/tickers?coin_ids=ethereum');
      assert.deepEqual(usTickers.tickers.map((x) => [x.base, x.is_anomaly]), [['ETH', true]]);
      const unknown = await t.app.inject({ url: '/api/v3/exchanges/nowhere', headers: { 'x-cg-pro-api-key': t.token } });
      assert.equal(unknown.statusCode, 404);
      assert.deepEqual(unknown.json(), { error: 'exchange not found' });
    } finally {
      await t.close();
      await a.close();
      await b.close();
      await ptax.close();
    }
  });
});
