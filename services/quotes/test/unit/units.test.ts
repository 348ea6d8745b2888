import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '@rls/testkit';
import { parsePlans } from '../../src/accounts/plans.js';
import { pickLanguage } from '../../src/api/messages.js';
import { alignUp, bucketEnd, bucketStart, type BaseInterval } from '../../src/domain/intervals.js';
import { cappedRange, historyWindow, rangeStart, resolveHistoryParams } from '../../src/history/range-rules.js';
import { resample } from '../../src/history/resample.js';
import { SimulatedMarket } from '../../src/market/simulated-market.js';
import { loadSettings, SettingsError } from '../../src/settings.js';
import { maskCredentials } from '../../src/http/credentials.js';
import { QuotesError } from '../../src/errors.js';

const s = (iso: string): number => Date.parse(iso) / 1000;

describe('UTC buckets', () => {
  test('weeks start on Monday, months and quarters on the calendar, 5d and 90m on epoch multiples', () => {
    assert.equal(bucketStart('1wk', s('2026-03-15T12:00:00Z')), s('2026-03-09T00:00:00Z'));
    assert.equal(bucketStart('1wk', s('2026-03-16T00:00:00Z')), s('2026-03-16T00:00:00Z'));
    assert.equal(bucketStart('1mo', s('2026-03-15T12:00:00Z')), s('2026-03-01T00:00:00Z'));
    assert.equal(bucketEnd('1mo', s('2026-12-01T00:00:00Z')), s('2027-01-01T00:00:00Z'));
    assert.equal(bucketStart('3mo', s('2026-08-31T23:59:59Z')), s('2026-07-01T00:00:00Z'));
    assert.equal(bucketEnd('3mo', s('2026-10-01T00:00:00Z')), s('2027-01-01T00:00:00Z'));
    assert.equal(bucketStart('5d', s('1970-01-07T10:00:00Z')), s('1970-01-06T00:00:00Z'));
    assert.equal(bucketStart('90m', s('2026-03-15T01:29:00Z')), s('2026-03-15T00:00:00Z'));
    assert.equal(bucketStart('90m', s('2026-03-15T01:30:00Z')), s('2026-03-15T01:30:00Z'));
    assert.equal(alignUp('1d', s('2026-03-15T00:00:00Z')), s('2026-03-15T00:00:00Z'));
    assert.equal(alignUp('1d', s('2026-03-15T00:00:01Z')), s('2026-03-16T00:00:00Z'));
  });
});

describe('range rules', () => {
  const pro = { ranges: ['1d', '5d', '1mo', '3mo', '6mo', '1y', '2y', '5y', '10y', 'ytd', 'max'], intervals: ['1m', '2m', '5m', '15m', '30m', '60m', '90m', '1h', '1d', '5d', '1wk', '1mo', '3mo'], historyDays: null } as const;
  test('defaults: range alone -> 1d interval; interval alone -> 1mo range; neither -> no history', () => {
    assert.deepEqual(resolveHistoryParams('5d', undefined, pro), { range: '5d', interval: '1d' });
    assert.deepEqual(resolveHistoryParams(undefined, '1wk', pro), { range: '1mo', interval: '1wk' });
    assert.equal(resolveHistoryParams(undefined, undefined, pro), undefined);
    assert.throws(() => resolveHistoryParams('7d', undefined, pro), (e: unknown) => e instanceof QuotesError && e.code === 'RANGE_INVALID');
    assert.throws(() => resolveHistoryParams('1d', '4h', pro), (e: unknown) => e instanceof QuotesError && e.code === 'INTERVAL_INVALID');
  });
  test('calendar months clamp the day; ytd starts on 1 January', () => {
    assert.equal(rangeStart('1mo', s('2026-03-31T10:00:00Z')), s('2026-02-28T10:00:00Z'));
    assert.equal(rangeStart('1y', s('2028-02-29T00:00:00Z')), s('2027-02-28T00:00:00Z'));
    assert.equal(rangeStart('ytd', s('2026-03-15T12:00:00Z')), s('2026-01-01T00:00:00Z'));
  });
  test('intraday caps', () => {
    const at = s('2026-03-15T12:00:00Z');
    assert.equal(cappedRange('1y', '1m', at), '5d');
    assert.equal(cappedRange('ytd', '2m', at), '1mo');
    assert.equal(cappedRange('max', '1h', at), '2y');
    assert.equal(cappedRange('max', '1d', at), 'max');
    assert.equal(cappedRange('ytd', '1h', at), 'ytd');
  });
  test('history window: aligned start, clipped (aligned up) to the plan limit', () => {
    const at = s('2026-03-15T12:34:00Z');
    assert.deepEqual(historyWindow({ range: '5d', interval: '1d' }, at, pro), { usedRange: '5d', usedInterval: '1d', from: s('2026-03-10T00:00:00Z'), to: at });
    const w = historyWindow({ range: '1y', interval: '3mo' }, at, { ...pro, historyDays: 366 });
    assert.equal(w.from, s('2025-04-01T00:00:00Z'));
  });
  test('resample aggregates and records the close of the last base candle', () => {
    const base = [
      { time: 0, open: 1, high: 3, low: 1, close: 2, volume: 1 },
      { time: 60, open: 2, high: 4, low: 0.5, close: 3, volume: 2 },
      { time: 120, open: 3, high: 3, low: 2, close: 2.5, volume: 4 },
    ];
    assert.deepEqual(resample('1m', base, '2m'), [
      { time: 0, open: 1, high: 4, low: 0.5, close: 3, volume: 3, closeTime: 120 },
      { time: 120, open: 3, high: 3, low: 2, close: 2.5, volume: 4, closeTime: 180 },
    ]);
  });
});

describe('simulated market', () => {
  test('deterministic from the seed, paged, only closed candles', async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 15, 12, 0, 30));
    const a = new SimulatedMarket({ seed: 1, clock });
    const b = new SimulatedMarket({ seed: 1, clock });
    const c = new SimulatedMarket({ seed: 2, clock });
    const req = { symbol: 'BTC', base: '1m' as BaseInterval, from: s('2026-03-15T11:00:00Z'), to: s('2026-03-15T13:00:00Z'), limit: 50 };
    const pa = await a.candles(req);
    assert.deepEqual(pa, await b.candles(req));
    assert.notDeepEqual(pa.candles, (await c.candles(req)).candles);
    assert.equal(pa.candles.length, 50);
    assert.equal(pa.nextFrom, req.from + 50 * 60);
    const rest = await a.candles({ ...req, from: pa.nextFrom ?? 0, limit: 1000 });
    assert.equal(rest.nextFrom, undefined);
    assert.equal(rest.candles[rest.candles.length - 1]!.time, s('2026-03-15T11:59:00Z'), 'the running minute is not served');
    assert.equal((await a.candles({ ...req, base: '1d', from: 0, to: s('2010-07-20T00:00:00Z') })).candles.length, 3, 'history starts at listing');
    const tickers = (await a.tickers(['BTC', 'NOPE'])).coins;
    assert.deepEqual(tickers.map((t) => t.symbol), ['BTC']);
    assert.ok(tickers[0]!.lastPrice > 10_000 && tickers[0]!.lastPrice < 1_000_000, 'realistic BTC price');
  });
});

describe('settings, plans, language, redaction', () => {
  test('defaults, frozen; every bad variable reported at once', () => {
    const st = loadSettings({});
    assert.equal(st.port, 3000);
    assert.equal(st.databaseUrl, undefined);
    assert.equal(st.marketSource, 'exchange');
    assert.ok(Object.isFrozen(st));
    assert.throws(
      () => loadSettings({ QUOTES_PORT: '70000', QUOTES_STALE_SECONDS: 'x', PUBLIC_BASE_URL: 'ftp://x' }),
      (e: unknown) => e instanceof SettingsError && e.problems.length === 3,
    );
    assert.equal(loadSettings({ PUBLIC_BASE_URL: 'https://q.example.com/' }).publicBaseUrl, 'https://q.example.com');
  });
  test('plans file errors name the file and the plan', () => {
    assert.throws(
      () => parsePlans({ plans: [{ id: 'x', crypto: 'yes', monthlyRequests: -1, maxCoinsPerRequest: 1, historyDays: null, ranges: ['7d'], intervals: [] }] }, 'p.json'),
      (e: unknown) => e instanceof Error && /p\.json: plans\[0\] \(x\): "crypto"/.test(e.message) && /monthlyRequests/.test(e.message) && /ranges/.test(e.message),
    );
  });
  test('Accept-Language picks pt-BR only when Portuguese is preferred', () => {
    assert.equal(pickLanguage('pt-BR'), 'pt-BR');
    assert.equal(pickLanguage('en;q=0.5, pt;q=0.9'), 'pt-BR');
    assert.equal(pickLanguage('en-US,pt-BR;q=0.8'), 'en');
    assert.equal(pickLanguage(undefined), 'en');
  });
  test('token query parameters are masked in logged URLs (every form: test/unit/credentials.test.ts)', () => {
    assert.equal(maskCredentials('/api/v2/crypto?coin=BTC&token=abc&x=1'), '/api/v2/crypto?coin=BTC&token=[REDACTED]&x=1');
    assert.equal(maskCredentials('/x?TOKEN=abc'), '/x?TOKEN=[REDACTED]');
  });
});
