import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { QuotesError } from '../errors.js';
import { COINGECKO_IDS, CoinIds, coinIdFallback } from '../market/coin-ids.js';
import { coingeckoToken } from './cg-routes.js';
import { cgErrorAnswer } from './cg-errors.js';
import { bool, instant, int, list, MAX_LIST_ITEMS, MAX_TEXT, precision, required } from './cg-params.js';
import { chartGranularity, mergeFixed, ohlcGranularity } from './views.js';

const bad = (fn: () => unknown, re: RegExp): void =>
  assert.throws(fn, (err: unknown) => err instanceof QuotesError && err.code === 'BAD_REQUEST' && re.test(err.details.reason ?? ''));

describe('CoinGecko parameters', () => {
  test('booleans, whole numbers in range, lists, precision', () => {
    assert.equal(bool({ sparkline: 'true' }, 'sparkline', false), true);
    assert.equal(bool({}, 'sparkline', true), true);
    bad(() => bool({ sparkline: 'yes' }, 'sparkline', false), /sparkline/);
    assert.equal(int({ per_page: '250' }, 'per_page', 100, 1, 250), 250);
    bad(() => int({ per_page: '251' }, 'per_page', 100, 1, 250), /1 to 250/);
    bad(() => int({ page: '-1' }, 'page', 1, 1, 10), /whole number/);
    bad(() => int({ page: '99999999999999' }, 'page', 1, 1, 10), /whole number/);
    assert.deepEqual(list({ ids: ' Bitcoin, ethereum ,bitcoin,,' }, 'ids'), ['bitcoin', 'ethereum']);
    bad(() => list({ ids: Array.from({ length: MAX_LIST_ITEMS + 1 }, (_, i) => `c${i}`).join(',') }, 'ids'), /too many/);
    bad(() => required({ q: 'x'.repeat(MAX_TEXT + 1) }, 'q'), /too long/);
    bad(() => required({}, 'vs_currency'), /missing 'vs_currency'/);
    assert.equal(precision({}), undefined);
    assert.equal(precision({ precision: 'full' }), 'full');
    assert.equal(precision({ precision: '18' }), 18);
    bad(() => precision({ precision: '19' }), /precision/);
  });

  test('instants: UNIX seconds (fractions dropped) and ISO dates in UTC', () => {
    assert.equal(instant({ from: '1700000000.75' }, 'from'), 1_700_000_000);
    assert.equal(instant({ from: '2025-01-02' }, 'from'), Date.UTC(2025, 0, 2) / 1000);
    assert.equal(instant({ from: '2025-01-02T03:04' }, 'from'), Date.UTC(2025, 0, 2, 3, 4) / 1000);
    bad(() => instant({ from: 'yesterday' }, 'from'), /UNIX seconds or an ISO date/);
  });

  test('granularity rules as CoinGecko documents them', () => {
    assert.equal(chartGranularity(1, undefined).interval, '5m');
    assert.equal(chartGranularity(1.5, undefined).interval, '1h');
    assert.equal(chartGranularity(90, undefined).interval, '1h');
    assert.equal(chartGranularity(91, undefined).interval, '1d');
    assert.equal(chartGranularity(Infinity, 'daily').interval, '1d');
    bad(() => chartGranularity(101, 'hourly'), /100 days/);
    bad(() => chartGranularity(2, '5m'), /1 day/);
    assert.deepEqual(ohlcGranularity(2, undefined), { interval: '30m' });
    assert.deepEqual(ohlcGranularity(30, undefined), { interval: '1h', mergeSeconds: 4 * 3600 });
    assert.deepEqual(ohlcGranularity(31, undefined), { interval: '1d', mergeSeconds: 4 * 86_400 });
    bad(() => ohlcGranularity(365, 'daily'), /180 days/);
  });

  test('mergeFixed: open of the first, close of the last, extremes, summed volume', () => {
    const h = 3600;
    const pts = [0, 1, 2, 3, 4].map((i) => ({ time: i * h, open: i, high: i + 10, low: i - 10, close: i + 0.5, volume: 1, closeTime: (i + 1) * h }));
    const m = mergeFixed(pts, 4 * h);
    assert.equal(m.length, 2);
    assert.deepEqual(m[0], { time: 0, open: 0, high: 13, low: -10, close: 3.5, volume: 4, closeTime: 4 * h });
    assert.deepEqual(m[1], { time: 4 * h, open: 4, high: 14, low: -6, close: 4.5, volume: 1, closeTime: 5 * h });
  });
});

describe('coin ids and keys', () => {
  test('the table maps the reference coins to distinct CoinGecko ids; unknown coins get a slug; clashes get the symbol', () => {
    const ids = new CoinIds(['BTC', 'ETH', 'RNDR', 'RENDER', 'ZZZ'], (s) => (s === 'ZZZ' ? 'Zed Coin 2.0' : s));
    assert.equal(ids.id('BTC'), 'bitcoin');
    assert.equal(ids.symbol('Bitcoin'), 'BTC');
    assert.equal(ids.id('RNDR'), 'render-token', 'the first symbol keeps the id');
    assert.equal(ids.id('RENDER'), 'render-token-render');
    assert.equal(ids.id('ZZZ'), 'zed-coin-2-0');
    assert.equal(coinIdFallback('***', 'XY'), 'xy');
    assert.equal(COINGECKO_IDS.AVAX, 'avalanche-2');
  });

  test('key forms: CoinGecko headers and query parameters first, then Bearer and ?token=', () => {
    assert.equal(coingeckoToken({ 'x-cg-pro-api-key': 'a', authorization: 'Bearer b' }, {}), 'a');
    assert.equal(coingeckoToken({ 'x-cg-demo-api-key': 'd' }, { token: 't' }), 'd');
    assert.equal(coingeckoToken({}, { x_cg_demo_api_key: 'q' }), 'q');
    assert.equal(coingeckoToken({}, { x_cg_pro_api_key: 'p' }), 'p');
    assert.equal(coingeckoToken({ authorization: 'Bearer b' }, {}), 'b');
    assert.equal(coingeckoToken({}, { token: 't' }), 't');
    assert.equal(coingeckoToken({ 'x-cg-demo-api-key': '  ' }, {}), undefined);
  });

  test('error bodies in CoinGecko shapes, limiter headers kept', () => {
    const log = { error: () => undefined };
    const limited = cgErrorAnswer(new QuotesError('RATE_LIMITED', { retryAfterSeconds: 3 }), log, ['x-quota-remaining', '5']);
    assert.equal(limited.status, 429);
    assert.deepEqual(JSON.parse(limited.body ?? ''), { status: { error_code: 429, error_message: "You've exceeded the Rate Limit. Please upgrade your plan for higher rate limits." } });
    assert.deepEqual(limited.headers.slice(0, 4), ['x-quota-remaining', '5', 'retry-after', '3']);
    const missing = cgErrorAnswer(new QuotesError('COIN_UNKNOWN', { coins: ['x'] }), log);
    assert.equal(missing.status, 404);
    assert.equal(missing.body, '{"error":"coin not found"}');
    const boom = cgErrorAnswer(new Error('boom'), log);
    assert.equal(boom.status, 500);
  });
});
