import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE_OF, bucketStart, utcDate, type Interval, type Range } from '../../src/domain/intervals.js';
import { CURRENCIES } from '../../src/market/currencies.js';
import { closeTo, makeTestApp, T0, type CoinJson, type CryptoJson, type TestApp } from '../support/helpers.js';

/** Small seeded PRNG so a failure names a reproducible case. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COINS = ['BTC', 'ETH', 'SOL', 'DOGE', 'SHIB', 'LINK'];
/** Pairs whose base series stay cheap to generate on first use. */
const PAIRS: Array<[Range, Interval]> = [
  ['1d', '1m'], ['5d', '2m'], ['1d', '5m'], ['5d', '15m'], ['1mo', '30m'], ['1mo', '90m'], ['5d', '60m'], ['1mo', '1h'],
  ['1mo', '1d'], ['6mo', '1d'], ['1y', '5d'], ['ytd', '1wk'], ['2y', '1wk'], ['5y', '1mo'], ['max', '3mo'], ['10y', '3mo'], ['3mo', '1d'],
];

describe('invariants over random requests', () => {
  let t: TestApp;
  before(async () => {
    t = await makeTestApp();
  });
  after(async () => {
    await t.close();
  });

  const fetchCoin = async (q: string): Promise<CoinJson> => {
    const res = await t.app.inject({ url: `/api/v2/crypto?${q}`, headers: { authorization: `Bearer ${t.tokens.pro}` } });
    assert.equal(res.statusCode, 200, `${q}: ${res.body}`);
    return res.json<CryptoJson>().coins[0]!;
  };

  test('OHLC ordering, strictly increasing aligned dates, currency ratio, resampling = aggregation of the base series', async () => {
    const rnd = mulberry32(20260315);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    for (let i = 0; i < 40; i++) {
      t.clock.set(T0 + Math.floor(rnd() * 3 * 86_400_000));
      const coin = pick(COINS);
      const currency = pick(CURRENCIES);
      const [range, interval] = pick(PAIRS);
      const label = `case ${i}: ${coin} ${currency} ${range}/${interval} @${new Date(t.clock.now()).toISOString()}`;
      const c = await fetchCoin(`coin=${coin}&currency=${currency}&range=${range}&interval=${interval}`);
      const usd = await fetchCoin(`coin=${coin}&currency=USD&range=${range}&interval=${interval}`);

      // Latest quote: every money field is the USD value times the current rate.
      const r = c.currencyRateFromUSD;
      for (const k of ['regularMarketPrice', 'regularMarketChange', 'regularMarketDayHigh', 'regularMarketDayLow', 'regularMarketVolume', 'marketCap'] as const) {
        assert.ok(closeTo(c[k], usd[k] * r), `${label}: ${k}`);
      }
      if (usd.regularMarketPrice !== 0) assert.ok(closeTo(c.regularMarketPrice / usd.regularMarketPrice, r), label);
      assert.equal(c.regularMarketDayRange, `${c.regularMarketDayLow} - ${c.regularMarketDayHigh}`, label);
      assert.ok(c.regularMarketDayLow <= c.regularMarketPrice && c.regularMarketPrice <= c.regularMarketDayHigh, label);

      const pts = c.historicalDataPrice!;
      assert.ok(pts.length > 0, `${label}: some history`);
      const asOf = Date.parse(c.regularMarketTime) / 1000;
      let prev = -Infinity;
      for (const p of pts) {
        assert.ok(p.date > prev, `${label}: strictly increasing`);
        prev = p.date;
        assert.equal(bucketStart(interval, p.date), p.date, `${label}: ${p.date} aligned to ${interval}`);
        assert.ok(p.date < asOf, `${label}: only started buckets`);
        if (p.close === null) continue;
        assert.ok(p.low! <= p.open! && p.open! <= p.high!, `${label}: low <= open <= high at ${p.date}`);
        assert.ok(p.low! <= p.close && p.close <= p.high!, `${label}: low <= close <= high at ${p.date}`);
        assert.ok(p.volume! >= 0);
        assert.equal(p.adjustedClose, p.close);
      }
      assert.equal(usd.historicalDataPrice!.length, pts.length);

      // Resampled buckets equal the aggregation of the base series (in USD, so no FX is involved).
      const base = BASE_OF[interval];
      if (base !== interval) {
        const b = await fetchCoin(`coin=${coin}&currency=USD&range=${range}&interval=${base}`);
        const groups = new Map<number, NonNullable<CoinJson['historicalDataPrice']>>();
        for (const p of b.historicalDataPrice!) {
          const k = bucketStart(interval, p.date);
          groups.set(k, [...(groups.get(k) ?? []), p]);
        }
        const firstBase = b.historicalDataPrice![0]!.date;
        let compared = 0;
        for (const p of usd.historicalDataPrice!) {
          const g = groups.get(p.date);
          if (p.date < firstBase || g === undefined || bucketStart(interval, firstBase) === p.date) continue;
          assert.equal(p.open, g[0]!.open, `${label}: open of ${p.date}`);
          assert.equal(p.close, g[g.length - 1]!.close, `${label}: close of ${p.date}`);
          assert.equal(p.high, Math.max(...g.map((x) => x.high!)), `${label}: high of ${p.date}`);
          assert.equal(p.low, Math.min(...g.map((x) => x.low!)), `${label}: low of ${p.date}`);
          assert.ok(closeTo(p.volume!, g.reduce((s, x) => s + x.volume!, 0)), `${label}: volume of ${p.date}`);
          compared++;
        }
        assert.ok(compared > 0 || usd.historicalDataPrice!.length <= 1, `${label}: compared some buckets`);
      }
    }
  });

  test('the 24 h ticker is derived from the last 1 440 one-minute candles and the minute in progress', async () => {
    for (const offset of [0, 7_777_000, 86_400_000 * 2 + 123_000, 86_400_000 - 56_000]) {
      t.clock.set(T0 + offset);
      for (const coin of ['BTC', 'SHIB', 'USDT']) {
        const c = await fetchCoin(`coin=${coin}&currency=USD&range=1d&interval=1m`);
        const h = c.historicalDataPrice!;
        const asOf = Date.parse(c.regularMarketTime) / 1000;
        // Off a minute boundary the minute in progress is one more (partial) candle.
        assert.equal(h.length, asOf % 60 === 0 ? 1440 : 1441);
        assert.equal(h[h.length - 1]!.date, asOf % 60 === 0 ? asOf - 60 : Math.floor(asOf / 60) * 60);
        assert.equal(c.regularMarketDayHigh, Math.max(...h.map((p) => p.high!)));
        assert.equal(c.regularMarketDayLow, Math.min(...h.map((p) => p.low!)));
        assert.equal(c.regularMarketPrice, h[h.length - 1]!.close);
        assert.ok(closeTo(c.regularMarketPrice - c.regularMarketChange, h[0]!.open!, 1e-9));
        assert.ok(closeTo(c.regularMarketVolume, h.reduce((s, p) => s + p.volume!, 0), 1e-9));
      }
    }
  });

  test('each historical point uses the fixing of its UTC close date, carried over weekends', async () => {
    t.clock.set(T0);
    for (const interval of ['1d', '1wk'] as const) {
      const brl = await fetchCoin(`coin=ETH&currency=BRL&range=3mo&interval=${interval}`);
      const usd = await fetchCoin(`coin=ETH&currency=USD&range=3mo&interval=${interval}`);
      const fixings = await t.fx.daily('BRL', '2025-01-01', '2026-12-31');
      const rateOn = (d: string): number => {
        let r = NaN;
        for (const f of fixings) if (f.date <= d) r = f.rate;
        return r;
      };
      let weekends = 0;
      brl.historicalDataPrice!.forEach((p, i) => {
        const u = usd.historicalDataPrice![i]!;
        const closeDate = interval === '1d' ? utcDate(p.date) : utcDate(Math.min(p.date + 7 * 86_400, Math.floor(T0 / 86_400_000) * 86_400) - 1);
        const day = new Date(`${closeDate}T00:00:00Z`).getUTCDay();
        if (day === 0 || day === 6) weekends++;
        const expected = rateOn(closeDate);
        for (const k of ['open', 'high', 'low', 'close', 'volume'] as const) assert.ok(closeTo(p[k]!, u[k]! * expected), `${interval} ${closeDate} ${k}`);
      });
      assert.ok(weekends > 0, 'weekend points exercised the carry-forward');
    }
  });
});
