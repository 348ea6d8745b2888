import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Coingecko, { AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError, RateLimitError } from '@coingecko/coingecko-typescript';
import type { Account } from '../../src/accounts/account-service.js';
import type { RequestLimiter } from '../../src/accounts/request-limiter.js';
import { QuotesError } from '../../src/errors.js';
import { FakeClock } from '@rls/testkit';
import { createLogger } from '../../src/logger.js';
import { createGate, embeddedDecider } from '../../src/ratelimit/create-gate.js';
import { makeTestApp, plansWith, T0, type CryptoJson, type TestApp } from '../support/helpers.js';

/** Refuses with RATE_LIMITED while `on` (stands in for the burst limiter). */
class SwitchLimiter implements RequestLimiter {
  readonly name = 'switch';
  on = false;
  admit(_account: Account): Promise<Readonly<Record<string, string>>> {
    if (this.on) return Promise.reject(new QuotesError('RATE_LIMITED', { retryAfterSeconds: 7 }));
    return Promise.resolve({});
  }
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** Median spacing of ascending [ms, ...] rows. */
function spacing(rows: number[][]): number {
  const d = rows.slice(1).map((r, i) => r[0]! - rows[i]![0]!);
  d.sort((a, b) => a - b);
  return d[Math.floor(d.length / 2)] ?? 0;
}

describe('the official CoinGecko SDK against a listening server', () => {
  let t: TestApp;
  let origin: string;
  let baseURL: string;
  const limiter = new SwitchLimiter();
  const demo = (key: string | null = null): Coingecko => new Coingecko({ demoAPIKey: key, proAPIKey: null, baseURL, maxRetries: 0 });
  const pro = (key: string): Coingecko => new Coingecko({ proAPIKey: key, demoAPIKey: null, baseURL, maxRetries: 0 });
  before(async () => {
    t = await makeTestApp({ logLevel: 'warn', extraLimiters: [limiter] });
    origin = await t.app.listen({ host: '127.0.0.1', port: 0 });
    baseURL = `${origin}/api/v3`;
  });
  after(async () => {
    await t.close();
  });

  test('ping answers without a key and does not count', async () => {
    const res = await demo().ping.get({ headers: { 'x-cg-demo-api-key': null } }).withResponse();
    assert.equal(res.data.gecko_says, '(V3) To the Moon!');
    assert.equal(res.response.headers.get('x-quota-remaining'), null);
  });

  test('auth: demo and pro key headers and query parameters, Bearer and ?token= name the same token; each call counts once', async () => {
    const token = t.tokens.startup!;
    const remaining: number[] = [];
    const record = (r: Response): void => void remaining.push(Number(r.headers.get('x-quota-remaining')));
    record((await demo(token).simple.supportedVsCurrencies.get().withResponse()).response);
    record((await pro(token).simple.supportedVsCurrencies.get().withResponse()).response);
    for (const url of [`${baseURL}/simple/supported_vs_currencies?x_cg_demo_api_key=${token}`, `${baseURL}/simple/supported_vs_currencies?x_cg_pro_api_key=${token}`, `${baseURL}/simple/supported_vs_currencies?token=${token}`]) {
      const r = await fetch(url);
      assert.equal(r.status, 200, url);
      record(r);
    }
    const bearer = await fetch(`${baseURL}/simple/supported_vs_currencies`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(bearer.status, 200);
    record(bearer);
    assert.deepEqual(
      remaining.map((r) => remaining[0]! - r),
      [0, 1, 2, 3, 4, 5],
      'every /api/v3 call counts one request against the monthly quota',
    );
  });

  test('auth errors in CoinGecko shape: missing key, unknown key (401), plan without crypto (403)', async () => {
    const missing = await fetch(`${baseURL}/simple/price?ids=bitcoin&vs_currencies=usd`);
    assert.equal(missing.status, 401);
    const body = (await missing.json()) as { status: { error_code: number; error_message: string } };
    assert.equal(body.status.error_code, 10002);
    assert.match(body.status.error_message, /API Key Missing/);
    await assert.rejects(demo().simple.price.get({ ids: 'bitcoin', vs_currencies: 'usd' }, { headers: { 'x-cg-demo-api-key': null } }), AuthenticationError);
    await assert.rejects(pro('qt_not_a_token').simple.price.get({ ids: 'bitcoin', vs_currencies: 'usd' }), (err: unknown) => err instanceof AuthenticationError && err.status === 401);
    await assert.rejects(demo(t.tokens.free).coins.list.get(), (err: unknown) => {
      assert.ok(err instanceof PermissionDeniedError);
      assert.deepEqual((err.error as { status: { error_code: number } }).status.error_code, 10005);
      return true;
    });
  });

  test('burst limits answer 429 with CoinGecko status body and Retry-After', async () => {
    limiter.on = true;
    try {
      await assert.rejects(demo(t.tokens.pro).global.get(), (err: unknown) => {
        assert.ok(err instanceof RateLimitError);
        assert.deepEqual((err.error as { status: { error_code: number } }).status.error_code, 429);
        assert.equal(err.headers?.get('retry-after'), '7');
        return true;
      });
    } finally {
      limiter.on = false;
    }
  });

  test('simple/supported_vs_currencies: fiat with a rate, CoinGecko crypto units we track', async () => {
    const list = await demo(t.tokens.pro).simple.supportedVsCurrencies.get();
    for (const c of ['usd', 'brl', 'eur', 'jpy', 'ars', 'mxn', 'btc', 'eth', 'sol']) assert.ok(list.includes(c), c);
    assert.ok(!list.includes('usdt'), 'usdt is not a CoinGecko vs_currency');
  });

  test('simple/price: ids, vs_currencies, includes, precision; unknown ids left out; missing parameters 400', async () => {
    const cg = demo(t.tokens.pro);
    const p = await cg.simple.price.get({ ids: 'bitcoin,ethereum,no-such-coin', vs_currencies: 'usd,brl,btc', include_market_cap: true, include_24hr_vol: true, include_24hr_change: true, include_last_updated_at: true });
    assert.deepEqual(Object.keys(p).sort(), ['bitcoin', 'ethereum']);
    const btc = p.bitcoin!;
    assert.deepEqual(Object.keys(btc), ['usd', 'usd_market_cap', 'usd_24h_vol', 'usd_24h_change', 'brl', 'brl_market_cap', 'brl_24h_vol', 'brl_24h_change', 'btc', 'btc_market_cap', 'btc_24h_vol', 'btc_24h_change', 'last_updated_at']);
    assert.equal((btc as Record<string, number>).btc, 1);
    assert.equal((btc as Record<string, number>).btc_24h_change, 0);
    assert.ok(Number.isInteger(btc.last_updated_at));
    const eth = p.ethereum as Record<string, number>;
    assert.ok(Math.abs(eth.btc! - eth.usd! / btc.usd!) <= 1e-9 * eth.btc!, 'ETH in BTC is ETH/USD over BTC/USD');
    const plain = await cg.simple.price.get({ ids: 'bitcoin', vs_currencies: 'usd' });
    assert.deepEqual(Object.keys(plain.bitcoin!), ['usd']);
    const p2 = await cg.simple.price.get({ ids: 'pepe', vs_currencies: 'usd', precision: '2' });
    assert.equal(p2.pepe!.usd, 0, 'precision=2 rounds PEPE to 2 decimals');
    const full = await cg.simple.price.get({ ids: 'pepe', vs_currencies: 'usd', precision: 'full' });
    assert.ok(full.pepe!.usd! > 0 && full.pepe!.usd! < 0.001);
    const bySymbol = await cg.simple.price.get({ symbols: 'btc,eth', vs_currencies: 'usd' });
    assert.deepEqual(Object.keys(bySymbol).sort(), ['bitcoin', 'ethereum']);
    await assert.rejects(cg.simple.price.get({ vs_currencies: 'usd' }), (err: unknown) => err instanceof BadRequestError && /ids/.test(JSON.stringify(err.error)));
    await assert.rejects(cg.simple.price.get({ ids: 'bitcoin', vs_currencies: 'usd', precision: '99' as '1' }), BadRequestError);
  });

  test('coins/list: every listed coin with its CoinGecko id, sorted by id; include_platform', async () => {
    const cg = demo(t.tokens.pro);
    const list = await cg.coins.list.get();
    assert.ok(list.length >= 50);
    assert.deepEqual(list.find((c) => c.id === 'bitcoin'), { id: 'bitcoin', symbol: 'btc', name: 'Bitcoin' });
    for (const [id, symbol] of [['ethereum', 'eth'], ['solana', 'sol'], ['binancecoin', 'bnb'], ['avalanche-2', 'avax'], ['the-open-network', 'ton'], ['pepe', 'pepe']]) {
      assert.equal(list.find((c) => c.id === id)?.symbol, symbol, id);
    }
    const ids = list.map((c) => c.id);
    assert.deepEqual(ids, [...ids].sort());
    assert.equal(new Set(ids).size, ids.length, 'ids are unique');
    const withPlatforms = await cg.coins.list.get({ include_platform: true });
    assert.deepEqual(withPlatforms[0]!.platforms, {});
  });

  test('coins/markets: ranked by market cap, orders, pagination, ids, sparkline and change windows', async () => {
    const cg = demo(t.tokens.pro);
    const all = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 250 });
    assert.ok(all.length >= 50);
    assert.equal(all[0]!.id, 'bitcoin');
    assert.equal(all[0]!.market_cap_rank, 1);
    const ranked = all.filter((c) => c.market_cap_rank !== null);
    ranked.forEach((c, i) => assert.equal(c.market_cap_rank, i + 1));
    for (let i = 1; i < ranked.length; i++) assert.ok(ranked[i - 1]!.market_cap! >= ranked[i]!.market_cap!);
    const asc = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 250, order: 'market_cap_asc' });
    assert.deepEqual(asc.map((c) => c.id), [...all].reverse().map((c) => c.id));
    const vol = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 250, order: 'volume_desc' });
    for (let i = 1; i < vol.length; i++) assert.ok(vol[i - 1]!.total_volume! >= vol[i]!.total_volume!);
    const volAsc = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 250, order: 'volume_asc' });
    assert.ok(volAsc[0]!.total_volume! <= volAsc[volAsc.length - 1]!.total_volume!);
    const byId = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 250, order: 'id_asc' });
    assert.deepEqual(byId.map((c) => c.id), all.map((c) => c.id).sort());
    const byIdDesc = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 250, order: 'id_desc' });
    assert.deepEqual(byIdDesc.map((c) => c.id), all.map((c) => c.id).sort().reverse());
    // Pages are disjoint and cover everything.
    const pages: string[] = [];
    for (let page = 1; ; page++) {
      const rows = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 20, page });
      if (rows.length === 0) break;
      assert.ok(rows.length <= 20);
      pages.push(...rows.map((c) => c.id));
    }
    assert.deepEqual(pages, all.map((c) => c.id));
    const some = await cg.coins.markets.get({ vs_currency: 'eur', ids: 'solana,bitcoin,nope' });
    assert.deepEqual(some.map((c) => c.id), ['bitcoin', 'solana']);
    const rich = await cg.coins.markets.get({ vs_currency: 'brl', ids: 'bitcoin,pepe', sparkline: true, price_change_percentage: '1h,24h,7d,14d,30d,200d,1y' });
    for (const c of rich) {
      const spark = c.sparkline_in_7d?.price ?? [];
      assert.ok(spark.length >= 167 && spark.length <= 170, `${c.id}: ${spark.length} hourly points over 7 days`);
      assert.equal(spark[spark.length - 1], c.current_price, 'the sparkline ends at the current price');
      for (const k of ['price_change_percentage_1h_in_currency', 'price_change_percentage_24h_in_currency', 'price_change_percentage_7d_in_currency', 'price_change_percentage_14d_in_currency', 'price_change_percentage_30d_in_currency', 'price_change_percentage_200d_in_currency', 'price_change_percentage_1y_in_currency'] as const) {
        assert.equal(typeof c[k], 'number', `${c.id} ${k}`);
      }
      assert.equal(c.price_change_percentage_24h_in_currency, c.price_change_percentage_24h);
      // The 7-day change is measured from the close just before the sparkline starts.
      assert.ok(Math.abs(c.price_change_percentage_7d_in_currency!) < 200);
    }
    assert.ok(rich.find((c) => c.id === 'pepe')!.current_price! < 0.001, 'PEPE keeps its significant digits');
    await assert.rejects(cg.coins.markets.get({ vs_currency: 'usd', per_page: 251 }), BadRequestError);
    await assert.rejects(cg.coins.markets.get({ vs_currency: 'usd', page: 0 }), BadRequestError);
    await assert.rejects(cg.coins.markets.get({ vs_currency: 'usd', order: 'gecko_desc' as 'id_asc' }), BadRequestError);
    await assert.rejects(cg.coins.markets.get({ vs_currency: 'usd', price_change_percentage: '2h' }), BadRequestError);
    await assert.rejects(cg.coins.markets.get({ vs_currency: 'xyz' }), (err: unknown) => err instanceof BadRequestError && (err.error as { error: string }).error === 'invalid vs_currency');
  });

  test('change windows are measured against the documented reference closes', async () => {
    const cg = demo(t.tokens.pro);
    const [row] = await cg.coins.markets.get({ vs_currency: 'usd', ids: 'solana', price_change_percentage: '7d,30d,1y' });
    const asOf = Math.floor(Date.parse(row!.last_updated) / 1000);
    const hour = Math.floor(asOf / 3600) * 3600;
    const day = (n: number): number => Math.floor((asOf - n * 86_400) / 86_400) * 86_400;
    const daily = await cg.coins.marketChart.get('solana', { vs_currency: 'usd', days: '400', interval: 'daily' });
    const closeAt = (rows: number[][], sec: number): number => rows.find((r) => r[0] === sec * 1000)![1]!;
    const hourly = await cg.coins.marketChart.getRange('solana', { vs_currency: 'usd', from: String(hour - 8 * 86_400), to: String(hour - 6 * 86_400), interval: 'hourly' });
    const pct = (then: number): number => (row!.current_price! / then - 1) * 100;
    const near = (a: number | null | undefined, b: number): boolean => a !== null && a !== undefined && Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));
    assert.ok(near(row!.price_change_percentage_7d_in_currency, pct(closeAt(hourly.prices, hour - 7 * 86_400))), '7d: the hourly close 7 days before the current hour');
    assert.ok(near(row!.price_change_percentage_30d_in_currency, pct(closeAt(daily.prices, day(30)))), '30d: the daily close 30 days back');
    assert.ok(near(row!.price_change_percentage_1y_in_currency, pct(closeAt(daily.prices, day(365)))), '1y: the daily close 365 days back');
    // In a fiat currency the reference close is converted at its day's fixing, as the chart converts it.
    const [brl] = await cg.coins.markets.get({ vs_currency: 'brl', ids: 'solana', price_change_percentage: '30d' });
    const brlDaily = await cg.coins.marketChart.get('solana', { vs_currency: 'brl', days: '40', interval: 'daily' });
    const brlThen = closeAt(brlDaily.prices, day(30));
    assert.ok(near(brl!.price_change_percentage_30d_in_currency, (brl!.current_price! / brlThen - 1) * 100), '30d in BRL agrees with the BRL chart');
    assert.ok(!near(brl!.price_change_percentage_30d_in_currency, row!.price_change_percentage_30d_in_currency!), 'and includes the BRL/USD move');
  });

  test('coins/{id}: the documented subset, market data per currency, flags accepted; unknown id 404', async () => {
    const cg = demo(t.tokens.pro);
    const c = await cg.coins.getID('ethereum', { localization: false, tickers: false, community_data: false, developer_data: false, sparkline: true });
    assert.equal(c.id, 'ethereum');
    assert.equal(c.symbol, 'eth');
    assert.equal(c.name, 'Ethereum');
    assert.equal(c.market_cap_rank, 2);
    assert.equal(c.localization, undefined);
    assert.equal(c.tickers, undefined);
    assert.ok(c.image.large?.endsWith('/icons/eth.svg'));
    const md = c.market_data!;
    for (const vs of ['usd', 'brl', 'eur', 'btc']) {
      assert.equal(typeof md.current_price?.[vs], 'number', vs);
      assert.equal(typeof md.market_cap?.[vs], 'number', vs);
      assert.equal(typeof md.total_volume?.[vs], 'number', vs);
      assert.equal(typeof md.price_change_percentage_7d_in_currency?.[vs], 'number', vs);
    }
    assert.equal(md.price_change_percentage_24h, md.price_change_percentage_24h_in_currency?.usd);
    assert.equal((md.sparkline_7d as unknown as { price: number[] }).price.length > 160, true);
    const full = await cg.coins.getID('bitcoin');
    assert.equal(full.tickers?.length, 1, 'its per-exchange tickers (one on the simulated exchange)');
    assert.deepEqual(full.localization, { en: 'Bitcoin' });
    await assert.rejects(cg.coins.getID('no-such-coin'), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      assert.deepEqual(err.error, { error: 'coin not found' });
      return true;
    });
  });

  test('coins/{id}/market_chart: auto granularity, interval, days=max, plan history limit', async () => {
    const cg = demo(t.tokens.pro);
    const d1 = await cg.coins.marketChart.get('bitcoin', { vs_currency: 'usd', days: '1' });
    assert.equal(spacing(d1.prices), 5 * 60_000, '1 day: 5-minute points');
    assert.ok(d1.prices.length >= 287 && d1.prices.length <= 290);
    assert.equal(d1.market_caps.length, d1.prices.length);
    assert.equal(d1.total_volumes.length, d1.prices.length);
    const d30 = await cg.coins.marketChart.get('bitcoin', { vs_currency: 'brl', days: '30' });
    assert.equal(spacing(d30.prices), HOUR_MS, '2-90 days: hourly');
    const d365 = await cg.coins.marketChart.get('bitcoin', { vs_currency: 'usd', days: '365' });
    assert.equal(spacing(d365.prices), DAY_MS, 'above 90 days: daily');
    const daily = await cg.coins.marketChart.get('bitcoin', { vs_currency: 'usd', days: '30', interval: 'daily' });
    assert.equal(spacing(daily.prices), DAY_MS);
    assert.ok(daily.prices.length >= 30 && daily.prices.length <= 32);
    const max = await cg.coins.marketChart.get('ethereum', { vs_currency: 'usd', days: 'max' });
    assert.ok(max.prices.length > 3000, 'ETH since 2015, daily');
    assert.equal(max.prices[max.prices.length - 1]![0], Math.floor(t.clock.now() / 1000) * 1000, 'the last point is the live price');
    // The startup plan reaches 366 days back.
    const limited = await demo(t.tokens.startup).coins.marketChart.get('ethereum', { vs_currency: 'usd', days: 'max' });
    assert.ok(limited.prices.length <= 368 && limited.prices[0]![0]! >= t.clock.now() - 367 * DAY_MS);
    await assert.rejects(cg.coins.marketChart.get('bitcoin', { vs_currency: 'usd', days: '200', interval: 'hourly' }), BadRequestError);
    await assert.rejects(cg.coins.marketChart.get('bitcoin', { vs_currency: 'usd', days: 'soon' }), BadRequestError);
    await assert.rejects(cg.coins.marketChart.get('nope', { vs_currency: 'usd', days: '1' }), NotFoundError);
  });

  test('coins/{id}/market_chart/range: UNIX seconds and ISO dates, hourly within 90 days, errors', async () => {
    const cg = demo(t.tokens.pro);
    const to = Math.floor(t.clock.now() / 1000) - 86_400;
    const from = to - 10 * 86_400;
    const r = await cg.coins.marketChart.getRange('bitcoin', { vs_currency: 'usd', from: String(from), to: String(to) });
    assert.equal(spacing(r.prices), HOUR_MS);
    assert.ok(r.prices[0]![0]! >= from * 1000 && r.prices[r.prices.length - 1]![0]! <= to * 1000 + HOUR_MS);
    const iso = await cg.coins.marketChart.getRange('bitcoin', { vs_currency: 'usd', from: '2025-01-01', to: '2025-12-31' });
    assert.equal(spacing(iso.prices), DAY_MS);
    assert.equal(iso.prices[0]![0], Date.UTC(2025, 0, 2), 'the close of 1 January');
    await assert.rejects(cg.coins.marketChart.getRange('bitcoin', { vs_currency: 'usd', from: String(to), to: String(from) }), BadRequestError);
    await assert.rejects(cg.coins.marketChart.getRange('bitcoin', { vs_currency: 'usd', from: 'yesterday', to: String(to) }), BadRequestError);
  });

  test('coins/{id}/ohlc: CoinGecko candle granularity per days, interval, invalid days', async () => {
    const cg = demo(t.tokens.pro);
    const o1 = await cg.coins.ohlc.get('bitcoin', { vs_currency: 'usd', days: '1' });
    assert.equal(spacing(o1), 30 * 60_000, '1-2 days: 30-minute candles');
    const o7 = await cg.coins.ohlc.get('bitcoin', { vs_currency: 'usd', days: '7' });
    assert.equal(spacing(o7), 4 * HOUR_MS, '3-30 days: 4-hour candles');
    const o90 = await cg.coins.ohlc.get('bitcoin', { vs_currency: 'usd', days: '90' });
    assert.equal(spacing(o90), 4 * DAY_MS, '31 days and more: 4-day candles');
    for (const row of o7) {
      assert.equal(row.length, 5);
      const [, o, h, l, c] = row as [number, number, number, number, number];
      assert.ok(h >= Math.max(o, c) && l <= Math.min(o, c));
    }
    const daily = await cg.coins.ohlc.get('bitcoin', { vs_currency: 'eur', days: '30', interval: 'daily' });
    assert.equal(spacing(daily), DAY_MS);
    const hourly = await cg.coins.ohlc.get('bitcoin', { vs_currency: 'usd', days: '7', interval: 'hourly' });
    assert.equal(spacing(hourly), HOUR_MS);
    await assert.rejects(cg.coins.ohlc.get('bitcoin', { vs_currency: 'usd', days: '3' as '1' }), BadRequestError);
  });

  test('search: by name and by symbol, exact symbol first', async () => {
    const cg = demo(t.tokens.pro);
    const s = await cg.search.get({ query: 'bitcoin' });
    const ids = s.coins.map((c) => c.id);
    for (const id of ['bitcoin', 'wrapped-bitcoin', 'bitcoin-cash']) assert.ok(ids.includes(id), id);
    assert.equal(ids[0], 'bitcoin');
    const eth = await cg.search.get({ query: 'ETH' });
    assert.equal(eth.coins[0]!.id, 'ethereum');
    assert.equal(eth.coins[0]!.symbol, 'ETH');
    assert.equal(eth.coins[0]!.market_cap_rank, 2);
    assert.ok(eth.coins[0]!.thumb.endsWith('/icons/eth.svg'));
    assert.deepEqual(eth.exchanges, []);
    const none = await cg.search.get({ query: 'zzzzzz' });
    assert.deepEqual(none.coins, []);
  });

  test('global: totals of the tracked coins, dominance, per currency', async () => {
    const cg = demo(t.tokens.pro);
    const g = (await cg.global.get()).data;
    const markets = await cg.coins.markets.get({ vs_currency: 'usd', per_page: 250 });
    assert.equal(g.active_cryptocurrencies, markets.length);
    const capSum = markets.reduce((s, c) => s + (c.market_cap ?? 0), 0);
    assert.ok(Math.abs(g.total_market_cap.usd! - capSum) <= 1e-6 * capSum);
    const volSum = markets.reduce((s, c) => s + (c.total_volume ?? 0), 0);
    assert.ok(Math.abs(g.total_volume.usd! - volSum) <= 1e-6 * volSum);
    assert.ok(Math.abs(g.market_cap_percentage.btc! - (markets[0]!.market_cap! / capSum) * 100) < 1e-6);
    assert.equal(typeof g.total_market_cap.brl, 'number');
    assert.equal(typeof g.updated_at, 'number');
  });

  test('the same numbers through /api/v2/crypto and /api/v3 for the same coin and currency', async () => {
    const token = t.tokens.pro!;
    const cg = demo(token);
    for (const currency of ['BRL', 'USD', 'EUR', 'BTC']) {
      const v2 = (await (await fetch(`${origin}/api/v2/crypto?coin=ETH,SOL,PEPE&currency=${currency}&token=${token}`)).json()) as CryptoJson;
      const vs = currency.toLowerCase();
      const price = await cg.simple.price.get({ ids: 'ethereum,solana,pepe', vs_currencies: vs, include_market_cap: true, include_24hr_vol: true, include_24hr_change: true });
      const markets = await cg.coins.markets.get({ vs_currency: vs, ids: 'ethereum,solana,pepe' });
      for (const c of v2.coins) {
        const id = { ETH: 'ethereum', SOL: 'solana', PEPE: 'pepe' }[c.coin]!;
        const p = price[id] as Record<string, number>;
        const m = markets.find((x) => x.id === id)!;
        assert.equal(p[vs], c.regularMarketPrice, `${c.coin}/${currency} price`);
        assert.equal(m.current_price, c.regularMarketPrice, `${c.coin}/${currency} markets price`);
        assert.equal(p[`${vs}_market_cap`], c.marketCap, `${c.coin}/${currency} market cap`);
        assert.equal(m.market_cap, c.marketCap);
        assert.equal(p[`${vs}_24h_vol`], c.regularMarketVolume, `${c.coin}/${currency} volume`);
        assert.equal(m.total_volume, c.regularMarketVolume);
        assert.equal(m.high_24h, c.regularMarketDayHigh);
        assert.equal(m.low_24h, c.regularMarketDayLow);
        if (currency !== 'BTC') {
          assert.equal(p[`${vs}_24h_change`], c.regularMarketChangePercent, `${c.coin}/${currency} change`);
          assert.equal(m.price_change_24h, c.regularMarketChange);
        }
      }
    }
  });

  test('unknown /api/v3 paths and methods answer in CoinGecko shape', async () => {
    const r = await fetch(`${baseURL}/derivatives`, { headers: { 'x-cg-demo-api-key': t.tokens.pro! } });
    assert.equal(r.status, 404);
    assert.ok('error' in ((await r.json()) as object));
    const post = await fetch(`${baseURL}/simple/price`, { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD, OPTIONS');
  });
});

describe('CoinGecko API and the monthly quota', () => {
  test('the quota counts /api/v3 calls; used up, it answers 429 in CoinGecko shape with Retry-After', async () => {
    const t = await makeTestApp({ logLevel: 'warn', plans: plansWith({ pro: { monthlyRequests: 2 } }) });
    try {
      const get = (url: string) => t.app.inject({ url, headers: { 'x-cg-pro-api-key': t.tokens.pro! } });
      assert.equal((await get('/api/v3/ping')).statusCode, 200, 'ping is free');
      assert.equal((await get('/api/v3/global')).statusCode, 200);
      assert.equal((await get('/api/v3/coins/nope')).statusCode, 404, 'a failed lookup still counts, as on CoinGecko');
      const res = await get('/api/v3/global');
      assert.equal(res.statusCode, 429);
      assert.equal(res.json<{ status: { error_code: number } }>().status.error_code, 429);
      assert.ok(Number(res.headers['retry-after']) > 0);
      assert.equal(res.headers['x-quota-remaining'], '0');
      // The brapi API keeps its own status for the same condition.
      assert.equal((await t.app.inject({ url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${t.tokens.pro}` } })).statusCode, 402);
    } finally {
      await t.close();
    }
  });
});

describe('CoinGecko API bounds', () => {
  test('QUOTES_COINGECKO_CACHE_BYTES=0 keeps no body (answers unchanged); the history budget refuses oversized charts with 400', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { QUOTES_COINGECKO_CACHE_BYTES: '0', QUOTES_HISTORY_MAX_POINTS: '500' } });
    try {
      const get = (url: string) => t.app.inject({ url, headers: { 'x-cg-demo-api-key': t.tokens.pro! } });
      const url = '/api/v3/coins/markets?vs_currency=brl&per_page=100&sparkline=true';
      const a = await get(url);
      const b = await get(url);
      assert.equal(a.statusCode, 200);
      assert.equal(a.body, b.body, 'rebuilt, the same answer');
      assert.equal(a.headers.etag, b.headers.etag);
      assert.equal((await get(url)).statusCode, 200);
      // 30 days of hourly points (plus a day for the 24 h volumes) exceed 500 candles.
      const big = await get('/api/v3/coins/bitcoin/market_chart?vs_currency=usd&days=30');
      assert.equal(big.statusCode, 400);
      assert.match(big.json<{ error: string }>().error, /500/);
      assert.equal((await get('/api/v3/coins/bitcoin/market_chart?vs_currency=usd&days=10&interval=daily')).statusCode, 200);
    } finally {
      await t.close();
    }
  });
});

describe('CoinGecko history, OHLC range, exchange rates, movers and /key through the SDK', () => {
  let t: TestApp;
  let origin: string;
  let baseURL: string;
  const cg = (key: string): Coingecko => new Coingecko({ demoAPIKey: key, proAPIKey: null, baseURL, maxRetries: 0 });
  before(async () => {
    const clock = new FakeClock(T0);
    t = await makeTestApp({ logLevel: 'warn', clock, rateLimit: createGate(embeddedDecider(undefined, clock), { domain: 'quotes', failureMode: 'allow', address: undefined }, createLogger('silent'), clock) });
    origin = await t.app.listen({ host: '127.0.0.1', port: 0 });
    baseURL = `${origin}/api/v3`;
  });
  after(async () => {
    await t.close();
  });

  /** UTC midnight ten days before T0's day, and its CoinGecko date forms. */
  const day = Math.floor(T0 / DAY_MS) * DAY_MS - 10 * DAY_MS;
  const iso = new Date(day).toISOString().slice(0, 10);
  const dmy = `${iso.slice(8, 10)}-${iso.slice(5, 7)}-${iso.slice(0, 4)}`;

  test('coins/{id}/history: the daily candle closing at 00:00 of the date, in every vs_currency; both date forms; localization', async () => {
    const c = cg(t.tokens.pro!);
    const h = await c.coins.history.get('bitcoin', { date: dmy });
    assert.equal(h.id, 'bitcoin');
    assert.equal(h.symbol, 'btc');
    assert.deepEqual(h.localization, { en: 'Bitcoin' });
    assert.ok(h.image.thumb?.endsWith('/icons/btc.svg'));
    const md = h.market_data;
    const vs = await c.simple.supportedVsCurrencies.get();
    for (const v of ['usd', 'brl', 'eur', 'jpy', 'btc', 'eth']) {
      assert.ok(vs.includes(v), v);
      assert.equal(typeof md.current_price?.[v], 'number', v);
      assert.equal(typeof md.market_cap?.[v], 'number', v);
      assert.equal(typeof md.total_volume?.[v], 'number', v);
    }
    assert.equal(md.current_price?.btc, 1);
    // The same instant on the daily chart (a point at its candle's close time), in USD and BRL.
    for (const v of ['usd', 'brl']) {
      const chart = await c.coins.marketChart.getRange('bitcoin', { vs_currency: v, from: String(day / 1000 - 5 * 86_400), to: String(day / 1000 + 86_400), interval: 'daily' });
      const at = (rows: number[][]): number | undefined => rows.find((r) => r[0] === day)?.[1];
      assert.equal(md.current_price?.[v], at(chart.prices), `${v} price = the daily chart point at 00:00`);
      assert.equal(md.market_cap?.[v], at(chart.market_caps), `${v} market cap`);
      assert.equal(md.total_volume?.[v], at(chart.total_volumes), `${v} volume`);
    }
    // And the daily candle of /api/v2/crypto history (its bucket starts the day before).
    const v2 = (await (await fetch(`${origin}/api/v2/crypto?coin=BTC&currency=BRL&range=1mo&interval=1d&token=${t.tokens.pro}`)).json()) as CryptoJson;
    const candle = v2.coins[0]!.historicalDataPrice!.find((p) => p.date === day / 1000 - 86_400)!;
    assert.equal(md.current_price?.brl, candle.close, 'BRL close of the daily candle');
    assert.equal(md.total_volume?.brl, candle.volume, 'BRL volume of the daily candle');
    const same = await c.coins.history.get('bitcoin', { date: iso, localization: false });
    assert.deepEqual(same.market_data, md, 'yyyy-mm-dd names the same day');
    assert.equal(same.localization, undefined);
  });

  test('coins/{id}/history: before our history no market_data; plan reach 401 (10012); bad dates 400; unknown coin 404', async () => {
    const c = cg(t.tokens.pro!);
    const early = await c.coins.history.get('bitcoin', { date: '01-01-2005' });
    assert.equal(early.id, 'bitcoin');
    assert.equal(early.market_data, undefined, 'CoinGecko answers an unknown date without market_data');
    const future = await c.coins.history.get('bitcoin', { date: '01-01-2030' });
    assert.equal(future.market_data, undefined);
    await assert.rejects(cg(t.tokens.startup!).coins.history.get('bitcoin', { date: '01-01-2024' }), (err: unknown) => {
      assert.ok(err instanceof AuthenticationError);
      assert.equal((err.error as { error: { status: { error_code: number } } }).error.status.error_code, 10012);
      return true;
    });
    for (const bad of ['31-02-2026', '2026/03/01', 'yesterday']) await assert.rejects(c.coins.history.get('bitcoin', { date: bad }), BadRequestError, bad);
    await assert.rejects(c.coins.history.get('no-such-coin', { date: dmy }), NotFoundError);
  });

  test('coins/{id}/ohlc/range: daily and hourly candles within the range, their limits, the same candles as /ohlc', async () => {
    const c = cg(t.tokens.pro!);
    const to = Math.floor(T0 / 1000);
    const daily = await c.coins.ohlc.getRange('bitcoin', { vs_currency: 'usd', from: String(to - 20 * 86_400), to: String(to), interval: 'daily' });
    assert.equal(spacing(daily), DAY_MS);
    assert.ok(daily.length >= 20 && daily.length <= 22, `${daily.length} daily candles`);
    const hourly = await c.coins.ohlc.getRange('bitcoin', { vs_currency: 'eur', from: iso, to: new Date(day + 2 * DAY_MS).toISOString().slice(0, 10), interval: 'hourly' });
    assert.equal(spacing(hourly), HOUR_MS);
    assert.equal(hourly.length, 48, 'two days of hourly candles');
    assert.equal(hourly[0]![0], day + HOUR_MS, 'stamped at each candle close');
    for (const row of hourly) {
      const [, o, h, l, cl] = row as [number, number, number, number, number];
      assert.ok(h >= Math.max(o, cl) && l <= Math.min(o, cl));
    }
    const ohlc = await c.coins.ohlc.get('bitcoin', { vs_currency: 'usd', days: '30', interval: 'daily' });
    const last = daily[daily.length - 2]!;
    assert.deepEqual(ohlc.find((r) => r[0] === last[0]), last, 'a closed daily candle equals /ohlc?interval=daily');
    await assert.rejects(c.coins.ohlc.getRange('bitcoin', { vs_currency: 'usd', from: String(to - 200 * 86_400), to: String(to), interval: 'daily' }), BadRequestError);
    await assert.rejects(c.coins.ohlc.getRange('bitcoin', { vs_currency: 'usd', from: String(to - 40 * 86_400), to: String(to), interval: 'hourly' }), BadRequestError);
    await assert.rejects(c.coins.ohlc.getRange('bitcoin', { vs_currency: 'usd', from: String(to), to: String(to - 86_400), interval: 'daily' }), BadRequestError);
    await assert.rejects(c.coins.ohlc.getRange('bitcoin', { vs_currency: 'usd', from: String(to - 86_400), to: String(to), interval: 'weekly' as 'daily' }), BadRequestError);
  });

  test('exchange_rates: BTC in every supported vs_currency, equal to /simple/price of bitcoin', async () => {
    const c = cg(t.tokens.pro!);
    const { rates } = await c.exchangeRates.get();
    const vs = await c.simple.supportedVsCurrencies.get();
    const price = (await c.simple.price.get({ ids: 'bitcoin', vs_currencies: vs.join(',') })).bitcoin as Record<string, number>;
    assert.deepEqual(Object.keys(rates).slice(0, 1), ['btc']);
    for (const v of vs) {
      assert.equal(rates[v]?.value, price[v], `${v}: the BTC quote in that currency`);
      assert.equal(rates[v]?.type, ['btc', 'eth', 'ltc', 'bch', 'bnb', 'eos', 'xrp', 'xlm', 'link', 'dot', 'sol'].includes(v) ? 'crypto' : 'fiat', v);
    }
    assert.deepEqual(rates.usd, { name: 'US Dollar', unit: '$', value: price.usd!, type: 'fiat' });
    assert.equal(rates.brl?.unit, 'R$');
    assert.equal(rates.eth?.name, 'Ethereum');
    assert.equal(rates.sats?.value, 1e8);
  });

  test('coins/top_gainers_losers: 30 each way, ordered by the duration change, as /coins/markets measures it', async () => {
    const c = cg(t.tokens.pro!);
    const m = await c.coins.topGainersLosers.get({ vs_currency: 'usd', duration: '7d', top_coins: 'all', price_change_percentage: '1h,30d' });
    assert.ok(m.top_gainers.length > 0 && m.top_gainers.length <= 30);
    assert.ok(m.top_losers.length > 0 && m.top_losers.length <= 30);
    const g = m.top_gainers.map((x) => x.usd_7d_change!);
    assert.deepEqual(g, [...g].sort((a, b) => b - a));
    assert.ok(g.every((x) => x > 0));
    const l = m.top_losers.map((x) => x.usd_7d_change!);
    assert.deepEqual(l, [...l].sort((a, b) => a - b));
    assert.ok(l.every((x) => x < 0));
    const ids = [...m.top_gainers, ...m.top_losers].map((x) => x.id);
    const markets = await c.coins.markets.get({ vs_currency: 'usd', ids: ids.join(','), price_change_percentage: '1h,24h,7d,30d', per_page: 250 });
    for (const x of [...m.top_gainers, ...m.top_losers]) {
      const row = markets.find((r) => r.id === x.id)!;
      assert.equal(x.usd, row.current_price, x.id);
      assert.equal(x.usd_24h_vol, row.total_volume, x.id);
      assert.equal(x.usd_24h_change, row.price_change_percentage_24h_in_currency, x.id);
      assert.equal(x.usd_7d_change, row.price_change_percentage_7d_in_currency, x.id);
      assert.equal(x.usd_1h_change, row.price_change_percentage_1h_in_currency, x.id);
      assert.equal(x.usd_30d_change, row.price_change_percentage_30d_in_currency, x.id);
      assert.ok(row.total_volume! >= 50_000);
    }
    // Within the top 300 by market cap only ranked coins take part.
    const top = await c.coins.topGainersLosers.get({ vs_currency: 'brl' });
    for (const x of [...top.top_gainers, ...top.top_losers]) assert.ok(x.market_cap_rank !== null && x.market_cap_rank <= 1000);
    assert.equal(typeof (top.top_gainers[0] as unknown as Record<string, number>).brl_24h_change, 'number');
    await assert.rejects(c.coins.topGainersLosers.get({ vs_currency: 'usd', duration: '2h' as '1h' }), BadRequestError);
    await assert.rejects(c.coins.topGainersLosers.get({ vs_currency: 'usd', top_coins: '42' as '300' }), BadRequestError);
    await assert.rejects(c.coins.topGainersLosers.get({ vs_currency: 'nope' }), BadRequestError);
  });

  test('/key: plan, per-minute limit of the burst rules, monthly credit and calls from the quota counter; never charged', async () => {
    const { token } = await t.services.accounts.createToken('key-test', 'startup');
    const c = cg(token);
    const k0 = await c.key.get();
    assert.equal(k0.plan, 'Startup');
    assert.equal(k0.rate_limit_request_per_minute, 600, 'startup: 10/s and 600/min in ratelimit/quotes.yaml');
    assert.equal(k0.api_key_rate_limit_request_per_minute, 600);
    assert.equal(k0.monthly_call_credit, 150_000);
    assert.equal(k0.current_total_monthly_calls, 0);
    assert.equal(k0.current_remaining_monthly_calls, 150_000);
    const quota: string[] = [];
    for (let i = 0; i < 3; i++) quota.push((await c.ping.get().withResponse()).response.headers.get('x-quota-remaining') ?? 'ping');
    await c.global.get();
    const priced = await c.simple.price.get({ ids: 'bitcoin', vs_currencies: 'usd' }).withResponse();
    const k1 = await c.key.get();
    assert.equal(k1.current_total_monthly_calls, 2, 'two counted calls (ping is free)');
    assert.equal(k1.current_remaining_monthly_calls, 150_000 - 2);
    assert.equal(String(k1.current_remaining_monthly_calls), priced.response.headers.get('x-quota-remaining'), 'what the quota headers said');
    const k2 = await c.key.get();
    assert.equal(k2.current_total_monthly_calls, 2, '/key itself is never counted');
    assert.equal((await cg(t.tokens.pro!).key.get()).rate_limit_request_per_minute, 3000);
    await assert.rejects(new Coingecko({ demoAPIKey: null, proAPIKey: null, baseURL, maxRetries: 0 }).key.get({ headers: { 'x-cg-demo-api-key': null } }), AuthenticationError);
    await assert.rejects(cg('qt_nope').key.get(), AuthenticationError);
  });
});

describe('CoinGecko tickers and exchanges through the SDK (the simulated exchange)', () => {
  let t: TestApp;
  let baseURL: string;
  const cg = (key: string): Coingecko => new Coingecko({ demoAPIKey: key, proAPIKey: null, baseURL, maxRetries: 0 });
  before(async () => {
    t = await makeTestApp({ logLevel: 'warn' });
    baseURL = `${await t.app.listen({ host: '127.0.0.1', port: 0 })}/api/v3`;
  });
  after(async () => {
    await t.close();
  });

  test('coins/{id}/tickers: one ticker per exchange and pair, converted figures, spread, flags; paging and errors', async () => {
    const c = cg(t.tokens.pro!);
    const r = await c.coins.tickers.get('bitcoin', { include_exchange_logo: true, depth: true, order: 'volume_desc' });
    assert.equal(r.name, 'Bitcoin');
    assert.equal(r.tickers.length, 1);
    const x = r.tickers[0]!;
    assert.deepEqual([x.base, x.target, x.market.identifier, x.market.name, x.coin_id, x.target_coin_id], ['BTC', 'USDT', 'simulated', 'Simulated Exchange', 'bitcoin', 'tether']);
    const [m] = await c.coins.markets.get({ vs_currency: 'usd', ids: 'bitcoin' });
    assert.ok(Math.abs(x.last - m!.current_price!) <= 1e-9 * x.last, 'the last price is the quote');
    assert.equal(x.converted_last.usd, x.last);
    assert.equal(x.converted_last.btc, 1);
    assert.ok(Math.abs(x.converted_volume.usd! - m!.total_volume!) <= 0.01, 'the 24 h volume is the quote volume');
    assert.ok(Math.abs(x.volume * x.last - x.converted_volume.usd!) <= 1e-6 * x.converted_volume.usd!, 'volume in base units');
    assert.ok(x.bid_ask_spread_percentage > 0 && x.bid_ask_spread_percentage < 1);
    assert.equal(x.is_anomaly, false);
    assert.equal(x.is_stale, false);
    assert.equal(x.trust_score, 'green');
    assert.ok(x.market.logo?.endsWith('/icons/exchanges/simulated.svg'));
    const logo = await fetch(x.market.logo!);
    assert.equal(logo.status, 200);
    assert.match(await logo.text(), /^<svg/);
    assert.equal(x.timestamp, m!.last_updated);
    assert.deepEqual((await c.coins.tickers.get('bitcoin', { page: 2 })).tickers, [], 'past the last page: no tickers');
    assert.deepEqual((await c.coins.tickers.get('bitcoin', { exchange_ids: 'binance' })).tickers, []);
    const coin = await c.coins.getID('bitcoin');
    assert.equal(coin.tickers?.length, 1, '/coins/{id} carries the same tickers');
    await assert.rejects(c.coins.tickers.get('bitcoin', { order: 'best' as 'volume_desc' }), BadRequestError);
    await assert.rejects(c.coins.tickers.get('bitcoin', { page: 0 }), BadRequestError);
    await assert.rejects(c.coins.tickers.get('no-such-coin'), NotFoundError);
  });

  test('exchanges, exchanges/list, exchanges/{id}, exchanges/{id}/tickers: volume in BTC from the tickers; unknown exchange 404', async () => {
    const c = cg(t.tokens.pro!);
    const list = await c.exchanges.get({ per_page: 10 });
    assert.equal(list.length, 1);
    const ex = list[0]!;
    assert.equal(ex.id, 'simulated');
    const markets = await c.coins.markets.get({ vs_currency: 'btc', per_page: 250 });
    const volBtc = markets.reduce((s, m) => s + (m.total_volume ?? 0), 0);
    assert.ok(Math.abs(ex.trade_volume_24h_btc - volBtc) <= 1e-6 * volBtc, `24 h volume in BTC ${ex.trade_volume_24h_btc} = the coins' volumes in BTC ${volBtc}`);
    assert.deepEqual(await c.exchanges.getList(), [{ id: 'simulated', name: 'Simulated Exchange' }]);
    assert.deepEqual(await c.exchanges.getList({ status: 'inactive' }), []);
    const one = await c.exchanges.getID('simulated');
    assert.equal(one.pairs, markets.length);
    assert.equal(one.coins, markets.length);
    assert.equal(one.tickers.length, Math.min(100, markets.length), 'its (at most 100) most traded tickers');
    assert.match(one.public_notice, /Simulated/);
    const page1 = await c.exchanges.tickers.get('simulated', { order: 'volume_desc' });
    const page2 = await c.exchanges.tickers.get('simulated', { order: 'volume_desc', page: 2 });
    assert.equal(page1.tickers.length, Math.min(100, markets.length));
    assert.equal(page1.tickers.length + page2.tickers.length, markets.length, 'pages of 100 cover every pair');
    const vols = [...page1.tickers, ...page2.tickers].map((x) => x.converted_volume.usd!);
    assert.deepEqual(vols, [...vols].sort((a, b) => b - a));
    const eth = await c.exchanges.tickers.get('simulated', { coin_ids: 'ethereum,solana', order: 'base_target' });
    assert.deepEqual(eth.tickers.map((x) => x.base), ['ETH', 'SOL']);
    await assert.rejects(c.exchanges.getID('nowhere'), (err: unknown) => err instanceof NotFoundError && (err.error as { error: string }).error === 'exchange not found');
    await assert.rejects(c.exchanges.tickers.get('nowhere'), NotFoundError);
    await assert.rejects(c.exchanges.get({ per_page: 251 }), BadRequestError);
  });

  test('bodies with absolute URLs are built once for every Host: the origin is put in as they are sent; a Host that is no origin is refused', async () => {
    const key = t.tokens.pro!;
    const etags = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const host = `h${i}-${'x'.repeat(55)}.${'y'.repeat(60)}.${'z'.repeat(60)}.example:8080`;
      const r = await t.app.inject({ url: `/api/v3/exchanges?x_cg_demo_api_key=${key}`, headers: { host } });
      assert.equal(r.statusCode, 200, r.body);
      const [ex] = r.json<{ image: string }[]>();
      assert.equal(ex!.image, `http://${host}/icons/exchanges/simulated.svg`);
      etags.add(String(r.headers.etag));
      const h = await t.app.inject({ url: `/api/v3/coins/bitcoin/history?date=01-01-2020&x_cg_demo_api_key=${key}`, headers: { host } });
      assert.equal(h.statusCode, 200, h.body);
      assert.ok(!h.body.includes('\\u0000'), 'no origin mark left in the body');
    }
    assert.equal(etags.size, 1, 'one body (one ETag) whatever the Host: the Host is not part of any cache key');
    const bad = await t.app.inject({ url: `/api/v3/exchanges?x_cg_demo_api_key=${key}`, headers: { host: 'evil"host' } });
    assert.equal(bad.statusCode, 400);
  });

  test('every endpoint added for issue 26 is in /openapi.json', async () => {
    const oa = (await (await fetch(`${baseURL.replace('/api/v3', '')}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    for (const p of ['/api/v3/coins/{id}/history', '/api/v3/coins/{id}/ohlc/range', '/api/v3/exchange_rates', '/api/v3/coins/top_gainers_losers', '/api/v3/coins/{id}/tickers', '/api/v3/exchanges', '/api/v3/exchanges/list', '/api/v3/exchanges/{id}', '/api/v3/exchanges/{id}/tickers', '/api/v3/key', '/api/v2/currency', '/api/v2/currency/available']) {
      assert.ok(p in oa.paths, p);
    }
  });
});

describe('MARKET_EXCHANGE_TICKERS_MAX bounds the per-exchange tickers kept with a snapshot', () => {
  test('the most traded are kept; the rest are left out of /exchanges and of the snapshot (what replicas share)', async () => {
    const t = await makeTestApp({ logLevel: 'warn', settings: { MARKET_EXCHANGE_TICKERS_MAX: '10' } });
    try {
      const get = async <T>(url: string): Promise<T> => (await t.app.inject({ url, headers: { 'x-cg-demo-api-key': t.tokens.pro! } })).json<T>();
      const markets = await get<Array<{ id: string; total_volume: number }>>('/api/v3/coins/markets?vs_currency=usd&per_page=250');
      assert.ok(markets.length > 10, `${markets.length} coins, more than the bound`);
      const snap = await t.services.snapshots.current();
      assert.equal(snap.venues?.length, 10);
      assert.equal((await get<{ pairs: number }>('/api/v3/exchanges/simulated')).pairs, 10);
      const leastTraded = [...markets].sort((a, b) => a.total_volume - b.total_volume)[0]!;
      assert.deepEqual((await get<{ tickers: unknown[] }>(`/api/v3/coins/${leastTraded.id}/tickers`)).tickers, [], 'the least traded coin lost its ticker');
      const mostTraded = [...markets].sort((a, b) => b.total_volume - a.total_volume)[0]!;
      assert.equal((await get<{ tickers: unknown[] }>(`/api/v3/coins/${mostTraded.id}/tickers`)).tickers.length, 1);
      assert.ok(Buffer.byteLength(JSON.stringify(snap.venues)) < 10 * 400, 'bounded bytes per snapshot');
    } finally {
      await t.close();
    }
  });
});
