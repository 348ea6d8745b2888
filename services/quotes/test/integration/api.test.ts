import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CURRENCIES } from '../../src/market/currencies.js';
import type { MarketSource } from '../../src/domain/market.js';
import { makeTestApp, T0, type CoinJson, type CryptoJson, type TestApp } from '../support/helpers.js';

const QUOTE_KEYS = [
  'currency',
  'currencyRateFromUSD',
  'coinName',
  'coin',
  'regularMarketChange',
  'regularMarketPrice',
  'regularMarketChangePercent',
  'regularMarketDayLow',
  'regularMarketDayHigh',
  'regularMarketDayRange',
  'regularMarketVolume',
  'marketCap',
  'regularMarketTime',
  'coinImageUrl',
];
const HISTORY_KEYS = ['usedInterval', 'usedRange', 'historicalDataPrice', 'validRanges', 'validIntervals'];
const ALL_RANGES = '1d, 5d, 1mo, 3mo, 6mo, 1y, 2y, 5y, 10y, ytd, max';

describe('quotes API over inject', () => {
  let t: TestApp;
  before(async () => {
    t = await makeTestApp();
  });
  after(async () => {
    await t.close();
  });

  const get = (url: string, token: string | null = t.tokens.pro!, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url, headers: token === null ? headers : { authorization: `Bearer ${token}`, ...headers } });

  test('200: envelope, every coin field in brapi order, defaults to BRL', async () => {
    const res = await get('/api/v2/crypto?coin=BTC,eth');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-data-source'], 'simulated');
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = res.json<CryptoJson>();
    assert.deepEqual(Object.keys(body), ['coins', 'requestedAt', 'took']);
    assert.equal(body.requestedAt, new Date(T0).toISOString());
    assert.equal(typeof body.took, 'number');
    assert.deepEqual(body.coins.map((c) => c.coin), ['BTC', 'ETH']);
    for (const c of body.coins) {
      assert.deepEqual(Object.keys(c), QUOTE_KEYS);
      assert.equal(c.currency, 'BRL');
      assert.ok(c.currencyRateFromUSD > 3 && c.currencyRateFromUSD < 9, `BRL rate ${c.currencyRateFromUSD}`);
      assert.equal(c.regularMarketDayRange, `${c.regularMarketDayLow} - ${c.regularMarketDayHigh}`);
      assert.ok(c.regularMarketDayLow <= c.regularMarketPrice && c.regularMarketPrice <= c.regularMarketDayHigh);
      assert.ok(c.regularMarketVolume > 0 && c.marketCap > 0);
      // Rolling 24 h change: price now minus price 24 h ago, in percent of the latter.
      const open = c.regularMarketPrice - c.regularMarketChange;
      assert.ok(Math.abs((c.regularMarketChange / open) * 100 - c.regularMarketChangePercent) < 1e-4);
      assert.equal(c.regularMarketTime, new Date(Math.floor(T0 / 1000) * 1000).toISOString(), 'the simulated market quotes the current second');
      assert.equal(c.coinImageUrl, `http://localhost:80/icons/${c.coin.toLowerCase()}.svg`);
    }
    assert.equal(body.coins[0]!.coinName, 'Bitcoin');
    assert.equal(body.coins[1]!.coinName, 'Ethereum');
    assert.ok(body.coins[0]!.regularMarketPrice > 100_000, 'BTC in BRL is in the hundreds of thousands');
  });

  test('token in the query is accepted; the Authorization header wins over it', async () => {
    const viaQuery = await get(`/api/v2/crypto?coin=BTC&token=${t.tokens.pro}`, null);
    assert.equal(viaQuery.statusCode, 200);
    const headerWins = await get(`/api/v2/crypto?coin=BTC&token=${t.tokens.pro}`, 'qt_not-a-real-token');
    assert.equal(headerWins.statusCode, 401);
    const goodHeaderBadQuery = await get('/api/v2/crypto?coin=BTC&token=nope', t.tokens.pro);
    assert.equal(goodHeaderBadQuery.statusCode, 200);
  });

  test('401 for a missing or invalid token, in English and in brapi Portuguese', async () => {
    for (const token of [null, 'qt_wrong']) {
      const res = await get('/api/v2/crypto?coin=BTC', token);
      assert.equal(res.statusCode, 401);
      assert.deepEqual(res.json(), { error: true, message: 'Your token is invalid, please check your token' });
      assert.equal(res.headers['x-data-source'], 'simulated');
    }
    const pt = await get('/api/v2/crypto?coin=BTC', 'qt_wrong', { 'accept-language': 'pt-BR,pt;q=0.9,en;q=0.8' });
    assert.deepEqual(pt.json(), { error: true, message: 'O seu token é inválido, por favor, verifique o seu token em brapi.dev/dashboard' });
    const avail = await get('/api/v2/crypto/available', null);
    assert.equal(avail.statusCode, 401);
  });

  test('403 when the plan has no crypto access', async () => {
    const res = await get('/api/v2/crypto?coin=BTC', t.tokens.free);
    assert.equal(res.statusCode, 403);
    assert.equal(res.json<{ error: boolean }>().error, true);
    const pt = await get('/api/v2/crypto/available', t.tokens.free, { 'accept-language': 'pt-BR' });
    assert.equal(pt.statusCode, 403);
    assert.match(pt.json<{ message: string }>().message, /^O seu plano não permite acessar dados de criptomoedas/);
  });

  test('417 when coin is missing or empty', async () => {
    for (const url of ['/api/v2/crypto', '/api/v2/crypto?coin=', '/api/v2/crypto?coin=,,']) {
      const res = await get(url);
      assert.equal(res.statusCode, 417, url);
      assert.deepEqual(res.json(), { error: true, message: 'Missing required parameter: `coin`' });
    }
  });

  test('400 naming unknown coins, even among known ones', async () => {
    const res = await get('/api/v2/crypto?coin=BTC,FOOX,BARX');
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { error: true, message: 'Coin not found: FOOX, BARX' });
    const pt = await get('/api/v2/crypto?coin=FOOX', t.tokens.pro, { 'accept-language': 'pt-BR' });
    assert.deepEqual(pt.json(), { error: true, message: 'Não encontramos a criptomoeda FOOX' });
  });

  test('400 for an unsupported currency, naming the accepted list', async () => {
    const res = await get('/api/v2/crypto?coin=BTC&currency=XYZ');
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { error: true, message: `Invalid field 'currency'. Valid currencies: ${CURRENCIES.join(', ')}` });
    for (const cur of CURRENCIES) {
      const ok = await get(`/api/v2/crypto?coin=BTC&currency=${cur.toLowerCase()}`);
      assert.equal(ok.statusCode, 200, cur);
      const c = ok.json<CryptoJson>().coins[0]!;
      assert.equal(c.currency, cur);
      if (cur === 'USD') assert.equal(c.currencyRateFromUSD, 1);
    }
  });

  test('400 for bad range / interval, naming the values valid for the plan (pt-BR uses brapi text)', async () => {
    const r = await get('/api/v2/crypto?coin=BTC&range=7d&interval=1d');
    assert.equal(r.statusCode, 400);
    assert.deepEqual(r.json(), { error: true, message: `Invalid field 'range'. Valid ranges: ${ALL_RANGES}` });
    const pt = await get('/api/v2/crypto?coin=BTC&range=7d', t.tokens.pro, { 'accept-language': 'pt-BR' });
    assert.deepEqual(pt.json(), { error: true, message: `Campo 'range' inválido. Ranges válidos: ${ALL_RANGES}` });
    const i = await get('/api/v2/crypto?coin=BTC&interval=4h');
    assert.equal(i.statusCode, 400);
    assert.match(i.json<{ message: string }>().message, /^Invalid field 'interval'\. Valid intervals: 1m, 2m, 5m, 15m, 30m, 60m, 90m, 1h, 1d, 5d, 1wk, 1mo, 3mo$/);
    const startup = await get('/api/v2/crypto?coin=BTC&range=2y', t.tokens.startup);
    assert.equal(startup.statusCode, 400);
    assert.equal(startup.json<{ message: string }>().message, "Invalid field 'range'. Valid ranges: 1d, 5d, 1mo, 3mo, 6mo, 1y, ytd");
    const startupInterval = await get('/api/v2/crypto?coin=BTC&range=1d&interval=1m', t.tokens.startup);
    assert.equal(startupInterval.statusCode, 400);
  });

  test('400 for more coins than the plan allows', async () => {
    const eleven = 'BTC,ETH,SOL,XRP,BNB,ADA,DOGE,TRX,LINK,AVAX,DOT';
    const res = await get(`/api/v2/crypto?coin=${eleven}`, t.tokens.startup);
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { error: true, message: 'Your plan allows up to 10 coins per request' });
    assert.equal((await get(`/api/v2/crypto?coin=${eleven}`, t.tokens.pro)).statusCode, 200);
    assert.equal((await get(`/api/v2/crypto?coin=${eleven.split(',').slice(0, 10).join(',')}`, t.tokens.startup)).statusCode, 200);
  });

  test('history: fields in order, either parameter alone triggers it with the other default', async () => {
    const both = (await get('/api/v2/crypto?coin=BTC&range=5d&interval=1d')).json<CryptoJson>().coins[0]!;
    assert.deepEqual(Object.keys(both), [...QUOTE_KEYS, ...HISTORY_KEYS]);
    assert.equal(both.usedRange, '5d');
    assert.equal(both.usedInterval, '1d');
    const h = both.historicalDataPrice!;
    // Five closed days and today's candle in progress (issue 14: it used to be left out).
    assert.equal(h.length, 6);
    for (const p of h) assert.deepEqual(Object.keys(p), ['date', 'open', 'high', 'low', 'close', 'volume', 'adjustedClose']);
    assert.equal(h[h.length - 2]!.date, Date.UTC(2026, 2, 14) / 1000, 'last closed day');
    assert.equal(h[h.length - 1]!.date, Date.UTC(2026, 2, 15) / 1000, "today's in-progress candle");
    assert.equal(both.validRanges!.join(', '), ALL_RANGES);

    const rangeOnly = (await get('/api/v2/crypto?coin=BTC&range=5d')).json<CryptoJson>().coins[0]!;
    assert.equal(rangeOnly.usedInterval, '1d');
    const intervalOnly = (await get('/api/v2/crypto?coin=BTC&interval=1wk')).json<CryptoJson>().coins[0]!;
    assert.equal(intervalOnly.usedRange, '1mo');
    assert.ok(intervalOnly.historicalDataPrice!.length >= 4);
    const none = (await get('/api/v2/crypto?coin=BTC')).json<CryptoJson>().coins[0]!;
    assert.equal(none.historicalDataPrice, undefined);
  });

  test('intraday intervals cap the range and say so in usedRange', async () => {
    const cases: Array<[string, string, string]> = [
      ['1mo', '1m', '5d'],
      ['1y', '5m', '1mo'],
      ['5y', '1h', '2y'],
      ['max', '90m', '1mo'],
      ['5d', '1m', '5d'],
    ];
    for (const [range, interval, used] of cases) {
      const c = (await get(`/api/v2/crypto?coin=ETH&range=${range}&interval=${interval}&currency=USD`)).json<CryptoJson>().coins[0]!;
      assert.equal(c.usedRange, used, `${range}/${interval}`);
      assert.equal(c.usedInterval, interval);
    }
  });

  test('history before the first FX fixing has null prices; USD never does', async () => {
    const brl = (await get('/api/v2/crypto?coin=BTC&range=max&interval=1mo')).json<CryptoJson>().coins[0]!;
    const pts = brl.historicalDataPrice!;
    assert.equal(pts[0]!.date, Date.UTC(2010, 6, 1) / 1000);
    assert.equal(pts[0]!.close, null);
    assert.equal(pts[0]!.volume, null);
    assert.ok(pts.some((p) => p.close === null) && pts[pts.length - 1]!.close !== null);
    const usd = (await get('/api/v2/crypto?coin=BTC&range=max&interval=1mo&currency=USD')).json<CryptoJson>().coins[0]!;
    assert.ok(usd.historicalDataPrice!.every((p) => p.close !== null));
  });

  test('stablecoins trade 1:1 with USD', async () => {
    const res = (await get('/api/v2/crypto?coin=USDT,USDC,DAI&currency=EUR&range=1mo&interval=1d')).json<CryptoJson>();
    for (const c of res.coins) {
      assert.equal(c.regularMarketPrice, c.currencyRateFromUSD);
      assert.equal(c.regularMarketChange, 0);
    }
    const usd = (await get('/api/v2/crypto?coin=USDT&currency=USD&range=1mo&interval=1d')).json<CryptoJson>().coins[0]!;
    assert.ok(usd.historicalDataPrice!.every((p) => p.open === 1 && p.high === 1 && p.low === 1 && p.close === 1));
  });

  test('Cache-Control and ETag; 304 on If-None-Match; new data gives a new ETag', async () => {
    const url = '/api/v2/crypto?coin=BTC,ETH,SOL';
    const first = await get(url);
    const etag = String(first.headers.etag);
    assert.match(etag, /^W\/".+"$/);
    assert.match(String(first.headers['cache-control']), /^private, max-age=\d+$/);
    const again = await get(url, t.tokens.pro, { 'if-none-match': etag });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assert.equal(again.headers.etag, etag);
    t.clock.advance(60_000);
    const later = await get(url, t.tokens.pro, { 'if-none-match': etag });
    assert.equal(later.statusCode, 200);
    assert.notEqual(later.headers.etag, etag);
    t.clock.set(T0);
  });

  test('405 with Allow for other methods', async () => {
    for (const [method, url] of [
      ['POST', '/api/v2/crypto'],
      ['DELETE', '/api/v2/crypto/available'],
      ['PUT', '/api/v2/crypto?coin=BTC'],
    ] as const) {
      const res = await t.app.inject({ method, url, headers: { 'content-type': 'text/xml' }, payload: '<x/>' });
      assert.equal(res.statusCode, 405, `${method} ${url}`);
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
      assert.deepEqual(res.json(), { error: true, message: 'Method not allowed' });
    }
  });

  test('HEAD, CORS headers and preflight', async () => {
    const head = await t.app.inject({ method: 'HEAD', url: '/api/v2/crypto?coin=BTC', headers: { authorization: `Bearer ${t.tokens.pro}` } });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    const res = await get('/api/v2/crypto?coin=BTC', t.tokens.pro, { origin: 'https://app.example' });
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.match(String(res.headers['access-control-expose-headers']), /ETag/);
    const pre = await t.app.inject({ method: 'OPTIONS', url: '/api/v2/crypto?coin=BTC', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } });
    assert.equal(pre.statusCode, 204);
    assert.equal(pre.headers['access-control-allow-origin'], '*');
    assert.match(String(pre.headers['access-control-allow-headers']), /Authorization/);
    assert.match(String(pre.headers['access-control-allow-methods']), /GET/);
  });

  test('unknown routes: 404 brapi-style body', async () => {
    const res = await get('/api/v2/nothing');
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { error: true, message: 'Route not found' });
    assert.equal(res.headers['x-data-source'], 'simulated');
  });

  test('/available: sorted, case-insensitive contains, 404 without error key', async () => {
    const all = await get('/api/v2/crypto/available');
    assert.equal(all.statusCode, 200);
    const coins = all.json<{ coins: string[] }>().coins;
    assert.deepEqual(coins, [...coins].sort());
    assert.ok(coins.length >= 50 && coins.includes('BTC') && coins.includes('ETH'));
    const bt = await get('/api/v2/crypto/available?search=bT');
    assert.deepEqual(bt.json(), { coins: ['BTC', 'WBTC'] });
    const etag = String(bt.headers.etag);
    assert.equal((await get('/api/v2/crypto/available?search=bT', t.tokens.pro, { 'if-none-match': etag })).statusCode, 304);
    const none = await get('/api/v2/crypto/available?search=zzzz');
    assert.equal(none.statusCode, 404);
    assert.deepEqual(none.json(), { message: 'Coin not found' });
    assert.equal((await get(`/api/v2/crypto/available?search=doge&token=${t.tokens.startup}`, null)).json<{ coins: string[] }>().coins[0], 'DOGE');
  });

  test('health, OpenAPI 3.1, local docs page and icons need no token', async () => {
    const health = await t.app.inject('/health');
    assert.equal(health.statusCode, 200);
    assert.equal(health.json<{ status: string }>().status, 'ok');
    assert.equal(health.headers['x-data-source'], 'simulated');
    const oa = (await t.app.inject('/openapi.json')).json<{ openapi: string; paths: Record<string, unknown> }>();
    assert.equal(oa.openapi, '3.1.0');
    assert.ok('/api/v2/crypto' in oa.paths && '/api/v2/crypto/available' in oa.paths);
    const docs = await t.app.inject('/docs');
    assert.match(String(docs.headers['content-type']), /^text\/html/);
    assert.match(docs.body, /openapi\.json/);
    assert.doesNotMatch(docs.body, /<script[^>]+src=|<link[^>]+href="?https?:/, 'no CDN assets');
    const btc = await t.app.inject('/icons/btc.svg');
    assert.equal(btc.statusCode, 200);
    assert.equal(btc.headers['content-type'], 'image/svg+xml');
    assert.equal(btc.headers['x-icon-fallback'], '0');
    assert.match(btc.body, /<svg/);
    const pepe = await t.app.inject('/icons/pepe.svg');
    assert.equal(pepe.statusCode, 200);
    assert.equal(pepe.headers['x-icon-fallback'], '1');
    assert.doesNotMatch(pepe.body, /<text/, 'a generated icon, not lettering');
    assert.equal((await t.app.inject('/icons/pepe.svg')).body, pepe.body, 'the same icon every time');
    assert.notEqual((await t.app.inject('/icons/zzz.svg')).body, pepe.body, 'another coin, another icon');
    assert.equal((await t.app.inject('/icons/..%2Fpackage.json')).statusCode, 404);
  });

  test('quota headers are sent; tokens never reach the logs', async () => {
    const res = await get(`/api/v2/crypto?coin=BTC&token=${t.tokens.startup}`, t.tokens.pro);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-quota-limit'], '500000');
    assert.ok(Number(res.headers['x-quota-remaining']) < 500000);
    await get(`/api/v2/crypto?coin=BTC&token=${t.tokens.startup}`, null);
    const all = t.logs.join('');
    assert.ok(all.includes('token=[REDACTED]'), 'request URLs are logged, masked');
    for (const tok of Object.values(t.tokens)) assert.ok(!all.includes(tok), 'token leaked into logs');
  });
});

describe('missing or stale quotes', () => {
  test('503 when the source does not quote a coin, or its data grew stale', async () => {
    let down = false;
    const t = await makeTestApp({
      settings: { QUOTES_STALE_SECONDS: '120', QUOTES_REFRESH_SECONDS: '15' },
      wrapMarket: (m): MarketSource => ({
        kind: m.kind,
        listSymbols: () => m.listSymbols(),
        candles: (r) => m.candles(r),
        tickers: async (symbols) => {
          if (down) throw new Error('exchange unreachable');
          const t = await m.tickers(symbols);
          return { ...t, coins: t.coins.filter((x) => x.symbol !== 'SOL') };
        },
      }),
    });
    try {
      const get = (url: string) => t.app.inject({ url, headers: { authorization: `Bearer ${t.tokens.pro}` } });
      const missing = await get('/api/v2/crypto?coin=BTC,SOL');
      assert.equal(missing.statusCode, 503);
      assert.deepEqual(missing.json(), { error: true, message: 'Quote temporarily unavailable: SOL' });
      assert.equal((await get('/api/v2/crypto?coin=BTC')).statusCode, 200);
      down = true;
      t.clock.advance(60_000);
      assert.equal((await get('/api/v2/crypto?coin=BTC')).statusCode, 200, 'one minute old is still fresh');
      t.clock.advance(5 * 60_000);
      const stale = await get('/api/v2/crypto?coin=BTC');
      assert.equal(stale.statusCode, 503);
      assert.equal((await t.app.inject('/health')).json<{ status: string }>().status, 'degraded');
      down = false;
      t.clock.advance(15_000); // a failed refresh is retried after the refresh interval, not on every request
      assert.equal((await get('/api/v2/crypto?coin=BTC')).statusCode, 200, 'recovers on the next refresh');
    } finally {
      await t.close();
    }
  });
});

describe('brapi extensions: name search, crypto and more fiat quote currencies', () => {
  let t: TestApp;
  before(async () => {
    // MXN has no rate here: the extension currencies are offered only where a source has one.
    t = await makeTestApp({
      wrapFx: (fx) => ({
        kind: fx.kind,
        currencies: fx.currencies.filter((c) => c !== 'MXN'),
        latest: async () => {
          const snap = await fx.latest();
          const rates = new Map(snap.rates);
          rates.delete('MXN');
          return { time: snap.time, rates };
        },
        daily: (c, from, to) => fx.daily(c, from, to),
      }),
    });
  });
  after(async () => {
    await t.close();
  });
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.tokens.pro!}` } });
  const coins = async (url: string): Promise<CoinJson[]> => {
    const res = await get(url);
    assert.equal(res.statusCode, 200, res.body);
    return res.json<CryptoJson>().coins;
  };

  test('/available?search= matches names as well as symbols', async () => {
    assert.deepEqual((await get('/api/v2/crypto/available?search=bitcoin')).json(), { coins: ['BCH', 'BTC', 'WBTC'] });
    assert.deepEqual((await get('/api/v2/crypto/available?search=Ethereum')).json(), { coins: ['ETC', 'ETH'] });
    assert.deepEqual((await get('/api/v2/crypto/available?search=doge')).json(), { coins: ['DOGE'] });
    assert.equal((await get('/api/v2/crypto/available?search=nothing-like-this')).statusCode, 404);
  });

  test('currency=BTC / ETH: priced by the coin itself; USDT 1:1 with USD', async () => {
    const [usdEth, usdBtc] = await coins('/api/v2/crypto?coin=ETH,BTC&currency=USD');
    const [eth, btc] = await coins('/api/v2/crypto?coin=ETH,BTC&currency=BTC');
    assert.equal(eth!.currency, 'BTC');
    assert.equal(btc!.regularMarketPrice, 1);
    assert.ok(Math.abs(eth!.regularMarketPrice - usdEth!.regularMarketPrice / usdBtc!.regularMarketPrice) <= 1e-9 * eth!.regularMarketPrice);
    assert.ok(Math.abs(eth!.currencyRateFromUSD - 1 / usdBtc!.regularMarketPrice) <= 1e-9 * eth!.currencyRateFromUSD);
    // Amounts in BTC keep 8 decimals (satoshis).
    assert.equal(Math.round(eth!.regularMarketVolume * 1e8) / 1e8, eth!.regularMarketVolume);
    const [inEth] = await coins('/api/v2/crypto?coin=BTC&currency=eth');
    assert.ok(Math.abs(inEth!.regularMarketPrice - usdBtc!.regularMarketPrice / usdEth!.regularMarketPrice) <= 1e-9 * inEth!.regularMarketPrice);
    const [usdt] = await coins('/api/v2/crypto?coin=ETH&currency=USDT');
    assert.equal(usdt!.currencyRateFromUSD, 1);
    assert.equal(usdt!.regularMarketPrice, usdEth!.regularMarketPrice);
  });

  test('history in BTC divides by BTC\'s daily close; in USDT equals USD', async () => {
    const [usd] = await coins('/api/v2/crypto?coin=ETH&currency=USD&range=5d&interval=1d');
    const [btcUsd] = await coins('/api/v2/crypto?coin=BTC&currency=USD&range=5d&interval=1d');
    const [inBtc] = await coins('/api/v2/crypto?coin=ETH&currency=BTC&range=5d&interval=1d');
    const h = inBtc!.historicalDataPrice!;
    assert.equal(h.length, usd!.historicalDataPrice!.length);
    for (let i = 0; i < h.length - 1; i++) {
      const want = usd!.historicalDataPrice![i]!.close! / btcUsd!.historicalDataPrice![i]!.close!;
      assert.ok(Math.abs(h[i]!.close! - want) <= 1e-8 * want, `day ${i}`);
    }
    const [usdt] = await coins('/api/v2/crypto?coin=ETH&currency=USDT&range=5d&interval=1d');
    assert.deepEqual(usdt!.historicalDataPrice!.map((p) => p.close), usd!.historicalDataPrice!.map((p) => p.close));
  });

  test('more fiat currencies from the PTAX list where a rate exists; 400 naming the available ones otherwise', async () => {
    const [ars] = await coins('/api/v2/crypto?coin=BTC&currency=ARS&range=5d&interval=1d');
    assert.equal(ars!.currency, 'ARS');
    assert.ok(ars!.currencyRateFromUSD > 100);
    assert.ok(ars!.historicalDataPrice!.every((p) => p.close !== null && p.close > 0));
    const [krw] = await coins('/api/v2/crypto?coin=BTC&currency=KRW');
    assert.equal(krw!.regularMarketVolume, Math.round(krw!.regularMarketVolume), 'KRW amounts in whole won');
    const mxn = await get('/api/v2/crypto?coin=BTC&currency=MXN');
    assert.equal(mxn.statusCode, 400);
    const msg = mxn.json<{ message: string }>().message;
    assert.match(msg, /Valid currencies: .*ARS/);
    assert.doesNotMatch(msg, /MXN/);
    assert.equal((await get('/api/v2/crypto?coin=BTC&currency=DOGECOIN')).statusCode, 400);
  });

  test('defaults unchanged: no currency is BRL', async () => {
    const [btc] = await coins('/api/v2/crypto?coin=BTC');
    assert.equal(btc!.currency, 'BRL');
  });
});

export type { CoinJson };
