// QuoteService.quote answers at once (no promise) from its cache, and serves a cached answer
// without the staleness check only while nothing in it can have gone stale; with one snapshot and
// an injected clock, the answer must be refused exactly when the full check would refuse it. And
// the byte lengths it carries (coinsBytes, bodyBytes) must be the UTF-8 lengths of text with
// non-ASCII coin names, as the pipeline's writer (AnswerWriter) writes them.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import pino from 'pino';
import { FakeClock } from '@rls/testkit';
import type { Plan } from '../../src/accounts/plans.js';
import { AnswerWriter, quoteAnswer, type Answer } from '../../src/api/answers.js';
import { isPromise } from '../../src/maybe-promise.js';
import { isQuotesError } from '../../src/errors.js';
import type { FxHistory } from '../../src/history/fx-history.js';
import type { HistoryService } from '../../src/history/history-service.js';
import { CoinCatalog } from '../../src/market/coin-catalog.js';
import { MarketSnapshots } from '../../src/market/market-snapshots.js';
import type { FxSnapshot, FxSource, MarketSource, Ticker } from '../../src/domain/market.js';
import { QuoteService, requestKey, type CryptoRequest, type CryptoResult } from '../../src/service/quote-service.js';
import { parsePublicOrigin } from '../../src/origin.js';

const T0 = Date.UTC(2026, 2, 15, 12, 0, 0);
const STALE_MS = 60_000;
const REFRESH_MS = 10_000;
/** Names with accents and beyond the BMP, as a catalogue may hold them. */
const NAMES = { ACC: 'Ça Và Coïn', BTC: 'Bitcoin', ETH: 'Éther 💎', SOL: 'Solana' };

const PLAN: Plan = { id: 'pro', name: 'Pro', crypto: true, monthlyRequests: 1000, maxCoinsPerRequest: 20, historyDays: null, ranges: ['1d'], intervals: ['1d'] };

function ticker(symbol: string, lastPrice: number, closeTime: number): Ticker {
  return { symbol, lastPrice, openPrice: lastPrice, priceChange: 0, priceChangePercent: 0, highPrice: lastPrice, lowPrice: lastPrice, quoteVolume: 1000, openTime: closeTime - 86_400_000, closeTime };
}

interface Setup {
  clock: FakeClock;
  quotes: QuoteService;
  snapshots: MarketSnapshots;
  /** What the next refresh fetches. */
  market: { tickers: Ticker[]; fx: FxSnapshot };
}

/** A quote service over one market snapshot that changes only when the test refreshes it. */
async function setup(closeTimes: Record<string, number>, fxTime = T0, cacheBytes?: number): Promise<Setup> {
  const clock = new FakeClock(T0);
  const market = {
    tickers: Object.entries(closeTimes).map(([s, t], i) => ticker(s, 10 * (i + 1), t)),
    fx: { time: fxTime, rates: new Map([['BRL', 5.5], ['EUR', 0.9]]) } as FxSnapshot,
  };
  const source: MarketSource = {
    kind: 'test',
    listSymbols: () => Promise.resolve(Object.keys(NAMES)),
    tickers: () => Promise.resolve({ coins: market.tickers, venues: [] }),
    candles: () => Promise.reject(new Error('no candles in this test')),
  } as unknown as MarketSource;
  const fx: FxSource = { kind: 'test', currencies: ['BRL', 'EUR'], latest: () => Promise.resolve(market.fx), daily: () => Promise.resolve([]) };
  // Background mode without start(): the snapshot is the one refreshed below, whatever the clock says.
  const snapshots = new MarketSnapshots({ market: source, fx, clock, symbols: Object.keys(NAMES), refreshMs: REFRESH_MS, log: pino({ level: 'silent' }), mode: 'background' });
  await snapshots.refreshNow();
  const quotes = new QuoteService({
    snapshots,
    history: {} as HistoryService, // no history request in this file
    fxHistory: {} as FxHistory,
    catalog: new CoinCatalog(Object.keys(NAMES), NAMES, {}),
    clock,
    staleMs: STALE_MS,
    refreshMs: REFRESH_MS,
    ...(cacheBytes === undefined ? {} : { cacheBytes }),
  });
  return { clock, quotes, snapshots, market };
}

const request = (coins: string[], currency = 'USD'): CryptoRequest => ({ coins, currency, history: undefined, plan: PLAN, baseUrl: parsePublicOrigin('http://localhost'), key: requestKey({ coins, currency, history: undefined }, PLAN) });

/**
 * `quote` with its snapshot held (background mode): answered at once, never a promise; the
 * result, or undefined when it refuses (QUOTE_UNAVAILABLE, thrown at once too).
 */
function atOnce(quotes: QuoteService, req: CryptoRequest): CryptoResult | undefined {
  try {
    const r = quotes.quote(req);
    assert.ok(!isPromise(r), 'answered without a promise');
    return r;
  } catch (err) {
    assert.ok(isQuotesError(err));
    assert.equal(err.code, 'QUOTE_UNAVAILABLE');
    return undefined;
  }
}

const writer = new AnswerWriter(undefined, pino({ level: 'silent' }));
function writeAnswer(res: ServerResponse, answer: Answer): void {
  assert.equal(writer.write(res, answer, {}, false), undefined, 'written at once');
}

/** What `quote` says now: its result, or the code of the error it throws. */
async function quoteOrCode(quotes: QuoteService, req: CryptoRequest): Promise<CryptoResult | string> {
  try {
    return await quotes.quote(req);
  } catch (err) {
    assert.ok(isQuotesError(err));
    return err.code;
  }
}

describe('quote at once and staleness with one snapshot', () => {
  test('served until the oldest ticker of the answer passes the stale limit, then undefined (as quote refuses)', async () => {
    const oldest = T0 - 20_000;
    const { clock, quotes } = await setup({ ACC: T0 - 5_000, BTC: oldest, ETH: T0 - 1_000 });
    const req = request(['ACC', 'BTC']);
    const first = await quotes.quote(req);
    const hit = atOnce(quotes, req);
    assert.equal(hit?.coinsJson, first.coinsJson);
    assert.equal(hit?.etag, first.etag);

    // The last millisecond BTC is not stale (now - closeTime == staleMs): still served by both.
    clock.set(oldest + STALE_MS);
    assert.equal(atOnce(quotes, req)?.etag, first.etag);
    assert.equal(typeof (await quoteOrCode(quotes, req)), 'object');

    clock.set(oldest + STALE_MS + 1);
    assert.equal(await quoteOrCode(quotes, req), 'QUOTE_UNAVAILABLE');
    assert.equal(atOnce(quotes, req), undefined, 'the same request object (its key remembered)');
    assert.equal(atOnce(quotes, request(['ACC', 'BTC'])), undefined, 'an equal request object');
    clock.advance(3_600_000);
    assert.equal(atOnce(quotes, req), undefined, 'and later');
  });

  test('a request without the oldest coin keeps being served until its own oldest ticker is stale', async () => {
    const { clock, quotes } = await setup({ ACC: T0 - 5_000, BTC: T0 - 40_000, ETH: T0 - 1_000 });
    const fresh = request(['ACC', 'ETH']);
    const withBtc = request(['ACC', 'BTC', 'ETH']);
    await quotes.quote(fresh);
    await quotes.quote(withBtc);
    clock.set(T0 - 40_000 + STALE_MS + 1);
    assert.equal(atOnce(quotes, withBtc), undefined);
    assert.ok(atOnce(quotes, fresh) !== undefined);
    clock.set(T0 - 5_000 + STALE_MS + 1);
    assert.equal(atOnce(quotes, fresh), undefined);
    assert.equal(await quoteOrCode(quotes, fresh), 'QUOTE_UNAVAILABLE');
  });

  test('a new snapshot version is a cache miss: the answer is built again, at once, from the new data', async () => {
    const s = await setup({ ACC: T0, BTC: T0, ETH: T0 });
    const req = request(['ACC']);
    const first = await s.quotes.quote(req);
    const hits = s.quotes.cache.hits;
    assert.equal(atOnce(s.quotes, req)?.etag, first.etag);
    assert.equal(s.quotes.cache.hits, hits + 1);
    s.market.tickers = s.market.tickers.map((t) => ticker(t.symbol, t.lastPrice * 2, T0 + 1_000));
    s.clock.advance(1_000);
    await s.snapshots.refreshNow();
    const misses = s.quotes.cache.misses;
    const again = atOnce(s.quotes, req);
    assert.equal(s.quotes.cache.misses, misses + 1);
    assert.notEqual(again?.etag, first.etag);
    assert.equal(JSON.parse(again?.coinsJson ?? '[]')[0].regularMarketPrice, 2 * JSON.parse(first.coinsJson)[0].regularMarketPrice);
  });

  test('fiat currency: not served once the FX rates are older than the stale limit (as quote refuses)', async () => {
    const fxTime = T0 - 50_000;
    const { clock, quotes } = await setup({ ACC: T0, BTC: T0, ETH: T0 }, fxTime);
    const req = request(['ACC'], 'BRL');
    await quotes.quote(req);
    assert.ok(atOnce(quotes, req) !== undefined);
    clock.set(fxTime + STALE_MS + 1); // tickers 11 s old, FX rates past the limit
    assert.equal(await quoteOrCode(quotes, req), 'QUOTE_UNAVAILABLE');
    assert.equal(atOnce(quotes, req), undefined);
  });

  // The same for a crypto quote currency (BTC, ETH) whose own ticker is older than the coins'.
  test('crypto quote currency: not served once the currency ticker is stale (as quote refuses)', async () => {
    const { clock, quotes } = await setup({ ACC: T0, BTC: T0 - 50_000, ETH: T0 });
    const req = request(['ACC'], 'BTC');
    await quotes.quote(req);
    assert.ok(atOnce(quotes, req) !== undefined);
    clock.set(T0 - 50_000 + STALE_MS + 1);
    assert.equal(await quoteOrCode(quotes, req), 'QUOTE_UNAVAILABLE');
    assert.equal(atOnce(quotes, req), undefined);
  });
});

describe('the quote cache and the origin (issue 23: no request header multiplies it)', () => {
  const withOrigin = (req: CryptoRequest, origin: string): CryptoRequest => ({ ...req, baseUrl: parsePublicOrigin(origin) });

  test('one entry serves every origin: each answer has its own icon URLs, all the same ETag', async () => {
    const { quotes } = await setup({ ACC: T0, BTC: T0, ETH: T0 });
    const req = request(['BTC', 'ETH']);
    const first = await quotes.quote(req);
    const entries = quotes.cache.size;
    for (let i = 0; i < 200; i++) {
      const origin = `https://h${i}.example:8443`;
      const r = i % 2 === 0 ? await quotes.quote(withOrigin(req, origin)) : atOnce(quotes, withOrigin(req, origin));
      assert.ok(r !== undefined);
      const coins = JSON.parse(r.coinsJson) as { coinImageUrl: string }[];
      assert.deepEqual(coins.map((c) => c.coinImageUrl), [`${origin}/icons/btc.svg`, `${origin}/icons/eth.svg`]);
      assert.equal(r.coinsBytes, Buffer.byteLength(r.coinsJson));
      assert.equal(r.etag, first.etag, 'the ETag names the data, not the origin');
    }
    assert.equal(quotes.cache.size, entries, 'no entry per origin');
    // Another plan asking the same coins shares it too (the plan only decides what may be asked).
    await quotes.quote({ ...req, plan: { ...PLAN, id: 'startup' } });
    assert.equal(quotes.cache.size, entries);
  });

  test('the cache holds at most QUOTES_QUOTE_CACHE_BYTES whatever the keys (every order of the coins is a key)', async () => {
    const bound = 64 * 1024;
    const { quotes } = await setup({ ACC: T0, BTC: T0, ETH: T0, SOL: T0 }, T0, bound);
    const coins = ['ACC', 'BTC', 'ETH', 'SOL'];
    const orders: string[][] = [];
    const permute = (done: string[], rest: string[]): void => {
      if (rest.length === 0) orders.push(done);
      for (const c of rest) permute([...done, c], rest.filter((x) => x !== c));
    };
    permute([], coins);
    let built = 0;
    for (const currency of ['USD', 'BRL', 'EUR']) {
      for (const order of orders) {
        const r = await quotes.quote(request(order, currency));
        built += r.coinsJson.length;
        assert.ok(quotes.cache.bytes <= bound, `${quotes.cache.bytes} characters held (bound ${bound})`);
      }
    }
    assert.ok(built > bound, `the test built ${built} characters of answers, more than the bound`);
    assert.ok(quotes.cache.size > 0 && quotes.cache.size < orders.length * 3, `${quotes.cache.size} entries kept of ${orders.length * 3}`);
  });
});

/** A ServerResponse that records what writeAnswer writes. */
function recordingResponse(): { res: ServerResponse; written: { status?: number; headers?: string[]; body?: unknown } } {
  const written: { status?: number; headers?: string[]; body?: unknown } = {};
  const res = {
    writeHead(status: number, headers: string[]) {
      written.status = status;
      written.headers = [...headers];
      return this;
    },
    end(body?: unknown) {
      written.body = body;
      return this;
    },
  } as unknown as ServerResponse;
  return { res, written };
}

function header(headers: readonly string[] | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1];
  return undefined;
}

describe('UTF-8 byte lengths of quote answers', () => {
  test('coinsBytes of quote and cachedQuote are the UTF-8 length of coinsJson with non-ASCII names', async () => {
    const { quotes } = await setup({ ACC: T0, BTC: T0, ETH: T0 });
    const req = request(['ACC', 'ETH', 'BTC']);
    const result = await quotes.quote(req);
    assert.match(result.coinsJson, /Ça Và Coïn/);
    assert.match(result.coinsJson, /Éther 💎/);
    assert.ok(Buffer.byteLength(result.coinsJson) > result.coinsJson.length, 'the text is not ASCII');
    assert.equal(result.coinsBytes, Buffer.byteLength(result.coinsJson));
    const cached = atOnce(quotes, req);
    assert.equal(cached?.coinsBytes, Buffer.byteLength(cached?.coinsJson ?? ''));
    const again = await quotes.quote(req);
    assert.equal(again.coinsBytes, Buffer.byteLength(again.coinsJson));
  });

  test('Content-Length written for a cached non-ASCII answer is the byte length of the body written', async () => {
    const { clock, quotes } = await setup({ ACC: T0, BTC: T0, ETH: T0 });
    const req = request(['ACC', 'ETH']);
    await quotes.quote(req);
    const cached = atOnce(quotes, req);
    assert.ok(cached !== undefined);
    for (const took of [0, 7, 123_456_789]) {
      const answer = quoteAnswer(cached, undefined, clock.now(), took, ['ratelimit-limit', '5']);
      assert.equal(typeof answer.body, 'string');
      assert.equal(answer.bodyBytes, Buffer.byteLength(answer.body as string));
      const { res, written } = recordingResponse();
      writeAnswer(res, answer);
      assert.equal(written.status, 200);
      assert.equal(written.body, answer.body);
      assert.equal(header(written.headers, 'content-length'), String(Buffer.byteLength(written.body as string)), `took ${took}`);
      assert.equal(JSON.parse(written.body as string).coins[0].coinName, 'Ça Và Coïn');
    }
  });

  test('a CryptoResult with non-ASCII coinsJson: with and without coinsBytes, the same Content-Length', () => {
    const coinsJson = JSON.stringify([{ coinName: 'Ñandú – ß 漢字 🚀', coin: 'XYZ' }]);
    const base: CryptoResult = { coinsJson, etag: 'W/"e"', maxAgeSeconds: 5 };
    const lengths = [{ ...base, coinsBytes: Buffer.byteLength(coinsJson) }, base].map((result) => {
      const answer = quoteAnswer(result, undefined, T0, 42);
      const { res, written } = recordingResponse();
      writeAnswer(res, answer);
      const length = header(written.headers, 'content-length');
      assert.equal(length, String(Buffer.byteLength(written.body as string)));
      return length;
    });
    assert.equal(lengths[0], lengths[1]);
  });

  test('304 (If-None-Match names the ETag): no body, no byte length, no Content-Length', () => {
    const coinsJson = '[{"coinName":"Ça"}]';
    const answer: Answer = quoteAnswer({ coinsJson, etag: 'W/"x"', maxAgeSeconds: 5, coinsBytes: Buffer.byteLength(coinsJson) }, 'W/"x"', T0, 1);
    assert.equal(answer.status, 304);
    assert.equal(answer.body, undefined);
    assert.equal(answer.bodyBytes, undefined);
    const { res, written } = recordingResponse();
    writeAnswer(res, answer);
    assert.equal(header(written.headers, 'content-length'), undefined);
  });
});
