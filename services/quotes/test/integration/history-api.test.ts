import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@rls/testkit';
import { makeTestApp, T0, type CryptoJson, type TestApp } from '../support/helpers.js';

const BUDGET_TEXT = (points: number, limit: number): string =>
  `This request asks for ${points} candles (coins x points per coin); the limit is ${limit} per request (QUOTES_HISTORY_MAX_POINTS). Ask for fewer coins, a coarser interval or a shorter range`;
const day = (iso: string): number => Date.parse(`${iso}T00:00:00Z`) / 1000;

describe('history: per-request budget, streamed answers, startDate/endDate', () => {
  let t: TestApp;
  before(async () => {
    // 5d of 1h at T0 (12:34:56) is 121 buckets a coin: two coins fit 242, three do not.
    t = await makeTestApp({ logLevel: 'warn', settings: { QUOTES_HISTORY_MAX_POINTS: '242' } });
  });
  after(async () => {
    await t.close();
  });
  const get = (url: string, headers: Record<string, string> = {}, token = t.tokens.pro!, method: 'GET' | 'HEAD' = 'GET') =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...headers } });

  test('budget: coins x points up to QUOTES_HISTORY_MAX_POINTS is served; one coin more is a 400 naming the limit and the setting', async () => {
    const ok = await get('/api/v2/crypto?coin=BTC,ETH&range=5d&interval=1h');
    assert.equal(ok.statusCode, 200);
    const coins = ok.json<CryptoJson>().coins;
    assert.deepEqual(coins.map((c) => c.historicalDataPrice!.length), [121, 121]);
    const over = await get('/api/v2/crypto?coin=BTC,ETH,SOL&range=5d&interval=1h');
    assert.equal(over.statusCode, 400);
    assert.deepEqual(over.json(), { error: true, message: BUDGET_TEXT(363, 242) });
    const pt = await get('/api/v2/crypto?coin=BTC,ETH,SOL&range=5d&interval=1h', { 'accept-language': 'pt-BR' });
    assert.equal(pt.statusCode, 400);
    assert.match(pt.json<{ message: string }>().message, /^Esta requisição pede 363 candles .* limite é 242 .*QUOTES_HISTORY_MAX_POINTS/);
    // A coarser interval over the same coins fits: 3 x 6 daily points.
    assert.equal((await get('/api/v2/crypto?coin=BTC,ETH,SOL&range=5d&interval=1d')).statusCode, 200);
    // `max` is counted from Bitcoin's genesis (2009-01-03), not from 1970: 208 months a coin.
    assert.equal((await get('/api/v2/crypto?coin=BTC&range=max&interval=1mo')).statusCode, 200);
    const maxDaily = await get('/api/v2/crypto?coin=BTC&range=max&interval=1d');
    assert.equal(maxDaily.statusCode, 400);
    assert.match(maxDaily.json<{ message: string }>().message, /asks for \d+ candles/);
  });

  test('history answers are streamed (chunked, no Content-Length), equal to the whole text, with a stable ETag and 304', async () => {
    const url = '/api/v2/crypto?coin=BTC,ETH&range=5d&interval=1h&currency=USD';
    const a = await get(url);
    assert.equal(a.statusCode, 200);
    assert.equal(a.headers['transfer-encoding'], 'chunked');
    assert.equal(a.headers['content-length'], undefined);
    assert.match(String(a.headers['content-type']), /^application\/json/);
    const body = a.json<CryptoJson>();
    assert.deepEqual(Object.keys(body), ['coins', 'requestedAt', 'took']);
    assert.equal(body.requestedAt, new Date(T0).toISOString());
    assert.equal(typeof body.took, 'number');
    for (const c of body.coins) {
      assert.deepEqual(Object.keys(c).slice(-5), ['usedInterval', 'usedRange', 'historicalDataPrice', 'validRanges', 'validIntervals']);
      const h = c.historicalDataPrice!;
      for (let i = 1; i < h.length; i++) assert.equal(h[i]!.date - h[i - 1]!.date, 3600);
      assert.equal(h[h.length - 1]!.date, Math.floor(T0 / 3_600_000) * 3600, 'the in-progress hour is the last point');
      for (const p of h) assert.equal(p.adjustedClose, p.close);
    }
    const b = await get(url);
    assert.equal(b.headers.etag, a.headers.etag, 'same data, same ETag');
    assert.equal(b.body.replace(/"took":\d+/, ''), a.body.replace(/"took":\d+/, ''));
    const again = await get(url, { 'if-none-match': String(a.headers.etag) });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    const head = await get(url, {}, t.tokens.pro, 'HEAD');
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    // An hour later a new candle closed: new body, new ETag.
    t.clock.advance(3_600_000);
    try {
      const later = await get(url, { 'if-none-match': String(a.headers.etag) });
      assert.equal(later.statusCode, 200);
      assert.notEqual(later.headers.etag, a.headers.etag);
    } finally {
      t.clock.set(T0);
    }
  });

  test('startDate/endDate: whole UTC days, end day included, same candles as the range answer', async () => {
    const r = await get('/api/v2/crypto?coin=BTC&startDate=2026-03-10&endDate=2026-03-12&interval=1d');
    assert.equal(r.statusCode, 200);
    const c = r.json<CryptoJson>().coins[0]!;
    assert.equal(c.usedRange, 'custom');
    assert.equal(c.usedInterval, '1d');
    assert.deepEqual(c.historicalDataPrice!.map((p) => p.date), [day('2026-03-10'), day('2026-03-11'), day('2026-03-12')]);
    const month = (await get('/api/v2/crypto?coin=BTC&range=1mo&interval=1d')).json<CryptoJson>().coins[0]!.historicalDataPrice!;
    assert.deepEqual(c.historicalDataPrice, month.filter((p) => p.date >= day('2026-03-10') && p.date <= day('2026-03-12')));
    // Without an interval the default is 1d; an end date of today includes today's candle so far.
    const today = (await get('/api/v2/crypto?coin=BTC&startDate=2026-03-13&endDate=2026-03-15')).json<CryptoJson>().coins[0]!;
    assert.deepEqual(today.historicalDataPrice!.map((p) => p.date), [day('2026-03-13'), day('2026-03-14'), day('2026-03-15')]);
    assert.deepEqual(today.historicalDataPrice![2], month[month.length - 1], "today's in-progress candle, as the range answer has it");
    // Instants with a zone are exact: [06:00, 12:00) is six hourly candles.
    const hours = (await get('/api/v2/crypto?coin=BTC&startDate=2026-03-14T06:00:00Z&endDate=2026-03-14T12:00:00Z&interval=1h')).json<CryptoJson>().coins[0]!;
    assert.deepEqual(hours.historicalDataPrice!.map((p) => p.date), [6, 7, 8, 9, 10, 11].map((h) => day('2026-03-14') + h * 3600));
    const offset = (await get('/api/v2/crypto?coin=BTC&startDate=2026-03-14T03:00:00-03:00&endDate=2026-03-14T09:00:00-03:00&interval=1h')).json<CryptoJson>().coins[0]!;
    assert.deepEqual(offset.historicalDataPrice, hours.historicalDataPrice);
    // No dates, no range, no interval: no history, as before.
    assert.equal((await get('/api/v2/crypto?coin=BTC')).json<CryptoJson>().coins[0]!.historicalDataPrice, undefined);
    // Documented as an extension in the OpenAPI document.
    type Doc = { paths: Record<string, { get: { parameters: Array<{ name: string; description: string }> } }> };
    const params = (await t.app.inject('/openapi.json')).json<Doc>().paths['/api/v2/crypto']!.get.parameters;
    for (const name of ['startDate', 'endDate']) assert.match(params.find((p) => p.name === name)?.description ?? '', /Extension|startDate/, name);
  });

  test('startDate/endDate: every bad combination is a 400 saying what is wrong', async () => {
    const cases: Array<[string, RegExp]> = [
      ['startDate=2026-03-10', /'startDate' needs 'endDate'/],
      ['endDate=2026-03-10', /'endDate' needs 'startDate'/],
      ['startDate=2026-03-12&endDate=2026-03-10', /'endDate' \(2026-03-10\) must come after 'startDate' \(2026-03-12\)/],
      ['startDate=2026-03-10T12:00:00Z&endDate=2026-03-10T12:00:00Z', /must come after/],
      ['range=5d&startDate=2026-03-10&endDate=2026-03-12', /either 'range' or 'startDate'\/'endDate', not both/],
      ['startDate=2026-02-30&endDate=2026-03-12', /'startDate' is not a calendar date: 2026-02-30/],
      ['startDate=2026-13-01&endDate=2026-03-12', /'startDate' is not a calendar date/],
      ['startDate=yesterday&endDate=2026-03-12', /'startDate' must be a date \(YYYY-MM-DD\) or an ISO 8601 instant/],
      ['startDate=2026-03-10T10:00:00&endDate=2026-03-12', /'startDate' must be a date/],
      [`startDate=${'2026-03-10'.padEnd(60, '0')}&endDate=2026-03-12`, /'startDate' is longer than 40 characters/],
      ['startDate=1969-12-31&endDate=2026-03-12', /'startDate' is before 1970/],
      ['startDate=2026-03-01&endDate=2026-03-12&interval=1m', /interval 1m covers at most 7 days per request/],
      ['startDate=2026-03-16&endDate=2026-03-20', /'startDate' is in the future/],
    ];
    for (const [q, message] of cases) {
      const r = await get(`/api/v2/crypto?coin=BTC&${q}`);
      assert.equal(r.statusCode, 400, q);
      const body = r.json<{ error: boolean; message: string }>();
      assert.equal(body.error, true, q);
      assert.match(body.message, /^Invalid 'startDate'\/'endDate': /, q);
      assert.match(body.message, message, q);
    }
    const pt = await get('/api/v2/crypto?coin=BTC&startDate=2026-03-10', { 'accept-language': 'pt-BR' });
    assert.match(pt.json<{ message: string }>().message, /^Campos 'startDate'\/'endDate' inválidos: /);
    // The plan's reach: startup goes back 366 days; the interval must be one the plan has.
    const old = await get('/api/v2/crypto?coin=BTC&startDate=2024-01-01&endDate=2024-02-01', {}, t.tokens.startup);
    assert.equal(old.statusCode, 400);
    assert.match(old.json<{ message: string }>().message, /your plan reaches back 366 days/);
    const interval = await get('/api/v2/crypto?coin=BTC&startDate=2026-03-10&endDate=2026-03-11&interval=1m', {}, t.tokens.startup);
    assert.equal(interval.statusCode, 400);
    assert.match(interval.json<{ message: string }>().message, /^Invalid field 'interval'/);
    // The budget counts date windows too: 3 coins x 6 days x 24 hours.
    const big = await get('/api/v2/crypto?coin=BTC,ETH,SOL&startDate=2026-03-08&endDate=2026-03-13&interval=1h');
    assert.equal(big.statusCode, 400);
    assert.deepEqual(big.json(), { error: true, message: BUDGET_TEXT(432, 242) });
  });

  test('whole answers are kept per snapshot when small (a sixteenth of QUOTES_HISTORY_ANSWER_CACHE_BYTES), larger ones are streamed every time', async () => {
    const small = await makeTestApp({ logLevel: 'warn', settings: { QUOTES_HISTORY_ANSWER_CACHE_BYTES: '160000' } });
    try {
      const getS = (url: string, headers: Record<string, string> = {}) => small.app.inject({ url, headers: { authorization: `Bearer ${small.tokens.pro!}`, ...headers } });
      const one = '/api/v2/crypto?coin=BTC&range=5d&interval=1d'; // ~2 KB: kept
      const big = '/api/v2/crypto?coin=BTC,ETH&range=5d&interval=1h'; // ~40 KB > 10,000 bytes: streamed
      const first = await getS(one);
      assert.equal(first.headers['transfer-encoding'], 'chunked');
      const second = await getS(one);
      assert.equal(second.headers['transfer-encoding'], undefined);
      assert.equal(Number(second.headers['content-length']), Buffer.byteLength(second.body));
      assert.equal(second.headers.etag, first.headers.etag);
      assert.equal(second.body.replace(/"took":\d+/, ''), first.body.replace(/"took":\d+/, ''));
      assert.equal((await getS(one, { 'if-none-match': String(first.headers.etag) })).statusCode, 304);
      for (let i = 0; i < 2; i++) {
        const r = await getS(big);
        assert.equal(r.statusCode, 200);
        assert.equal(r.headers['transfer-encoding'], 'chunked', 'too large to be kept whole');
      }
      // A new snapshot is new data: the kept answer is not served any more.
      small.clock.advance(60_000);
      assert.equal((await getS(one)).headers['transfer-encoding'], 'chunked');
    } finally {
      await small.close();
    }
  });

  test('a client leaving in the middle of a streamed answer stops its production; the server goes on', async () => {
    const big = await makeTestApp({ logLevel: 'warn', settings: { QUOTES_HISTORY_ANSWER_CACHE_BYTES: '0' } });
    try {
      await big.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (big.app.server.address() as AddressInfo).port;
      const url = '/api/v2/crypto?coin=BTC,ETH,SOL&range=1mo&interval=15m&currency=USD';
      const got = await new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: url, headers: { authorization: `Bearer ${big.tokens.pro!}` } }, (res) => {
          let bytes = 0;
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            if (bytes > 10_000) {
              req.destroy();
              resolve(bytes);
            }
          });
          res.on('error', () => undefined);
        });
        req.on('error', () => undefined);
        req.end();
        setTimeout(() => reject(new Error('no bytes')), 20_000).unref();
      });
      assert.ok(got > 10_000);
      await waitFor(() => big.services.history.turns.pending === 0, { what: 'no history step left waiting', timeoutMs: 5000 });
      const after = await fetch(`http://127.0.0.1:${port}${url}`, { headers: { authorization: `Bearer ${big.tokens.pro!}` } });
      assert.equal(after.status, 200);
      const body = (await after.json()) as CryptoJson;
      assert.equal(body.coins.length, 3);
    } finally {
      await big.close();
    }
  });

  test('large answers in production are bounded (QUOTES_HISTORY_CONCURRENCY); past the queue (QUOTES_HISTORY_QUEUE) a 503 with Retry-After', async () => {
    const busy = await makeTestApp({ logLevel: 'warn', settings: { QUOTES_HISTORY_CONCURRENCY: '1', QUOTES_HISTORY_QUEUE: '0', QUOTES_HISTORY_ANSWER_CACHE_BYTES: '0' } });
    try {
      await busy.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (busy.app.server.address() as AddressInfo).port;
      const auth = { authorization: `Bearer ${busy.tokens.pro!}` };
      const large = '/api/v2/crypto?coin=BTC,ETH,SOL,XRP,BNB,ADA,DOGE,TRX&range=1mo&interval=15m&currency=USD'; // ~24,000 candles, ~3 MB
      // A client that reads nothing: its answer stays in production, holding the one slot.
      const stuck = request({ host: '127.0.0.1', port, path: large, headers: auth });
      const stuckRes = await new Promise<IncomingMessage>((resolve, reject) => {
        stuck.on('response', resolve);
        stuck.on('error', reject);
        stuck.end();
      });
      stuckRes.pause();
      assert.equal(stuckRes.statusCode, 200);
      const refused = await fetch(`http://127.0.0.1:${port}${large}`, { headers: auth });
      assert.equal(refused.status, 503);
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.match(((await refused.json()) as { message: string }).message, /busy with 1 large history requests \(QUOTES_HISTORY_CONCURRENCY \+ QUOTES_HISTORY_QUEUE\)/);
      // Small answers do not need a slot.
      assert.equal((await fetch(`http://127.0.0.1:${port}/api/v2/crypto?coin=BTC&range=5d&interval=1d`, { headers: auth })).status, 200);
      // The client goes away: its slot is freed.
      stuck.destroy();
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}${large}`, { method: 'HEAD', headers: auth })).status === 200, { what: 'slot freed', timeoutMs: 10_000 });
      // HEAD, 304 and whole answers free their slot at once (the one slot is needed by each next request).
      const etag = (await busy.app.inject({ url: large, method: 'HEAD', headers: auth })).headers.etag;
      for (let i = 0; i < 3; i++) assert.equal((await busy.app.inject({ url: large, headers: { ...auth, 'if-none-match': String(etag) } })).statusCode, 304);
      for (let i = 0; i < 2; i++) assert.equal((await busy.app.inject({ url: large, headers: auth })).statusCode, 200);
      assert.equal(busy.services.history.turns.pending, 0);
    } finally {
      await busy.close();
    }
  });
});
