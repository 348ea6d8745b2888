import { createHash } from 'node:crypto';
import type { Plan } from '../accounts/plans.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { FxHistory } from '../history/fx-history.js';
import type { HistoryService } from '../history/history-service.js';
import { pricedPoint, type PricedView } from '../history/priced-history.js';
import { historyWindow, windowPoints, type HistoryParams, type HistoryWindow } from '../history/range-rules.js';
import { bucketStart } from '../domain/intervals.js';
import { ByteLru } from '../history/byte-lru.js';
import { HistorySlots } from '../history/history-slots.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import type { MarketSnapshot, MarketSnapshots } from '../market/market-snapshots.js';
import type { Ticker } from '../domain/market.js';
import { isCryptoQuote, isCurrency, isFiat, QUOTE_CURRENCIES, usdRate, USD_PEGGED } from '../market/currencies.js';
import type { RateOn } from '../history/fx-history.js';
import { valueFormat } from '../domain/value-precision.js';
import { isPromise, type MaybePromise } from '../maybe-promise.js';
import { ORIGIN_MARK, OriginJson, type Origin } from '../origin.js';

export interface CryptoRequest {
  /** Upper-case, de-duplicated, all known to the catalogue. */
  coins: readonly string[];
  currency: string;
  history: HistoryParams | undefined;
  plan: Plan;
  /** Origin of absolute icon URLs (validated: see origin.ts); never part of a cache key. */
  baseUrl: Origin;
  /**
   * The answer's cache key (`requestKey`), built once with the request from the fields that
   * decide the answer: coins and currency; with history also its window and the plan.
   */
  readonly key: string;
}

/** What a quote without history depends on (and is cached by). */
export type QuoteKey = Pick<CryptoRequest, 'coins' | 'currency'>;

export interface CryptoResult {
  /** The JSON text of the `coins` array. */
  coinsJson: string;
  etag: string;
  /** Seconds until fresher data may exist. */
  maxAgeSeconds: number;
  /** UTF-8 bytes of `coinsJson`, when known (cached answers). */
  coinsBytes?: number | undefined;
}

/**
 * A cached quote: the `coins` text for every origin, for one snapshot version, answerable
 * without a check until `answerableUntil` (ms; what QuoteService.answerability returned when the
 * entry was built). `chars`: what it holds, key included, for the cache's byte bound.
 */
interface CachedQuote {
  body: OriginJson;
  etag: string;
  version: number;
  answerableUntil: number;
  chars: number;
}

/** Characters a cache entry costs beyond its texts (the entry object, the map slot), as the byte bound counts it. */
const ENTRY_OVERHEAD = 200;

export interface QuoteServiceDeps {
  snapshots: MarketSnapshots;
  history: HistoryService;
  fxHistory: FxHistory;
  catalog: CoinCatalog;
  clock: Clock;
  /** A ticker or FX rate older than this (ms) is not served. */
  staleMs: number;
  refreshMs: number;
  /** Bytes of built answers without history kept (QUOTES_QUOTE_CACHE_BYTES; default 16 MiB). */
  cacheBytes?: number;
  /** Most history candles per request, coins x points (QUOTES_HISTORY_MAX_POINTS). Default 50,000. */
  historyMaxPoints?: number;
  /** History candles written per chunk of a streamed answer (default 2,000). */
  historyChunkPoints?: number;
  /**
   * Bytes of whole history answers kept for the current market snapshot
   * (QUOTES_HISTORY_ANSWER_CACHE_BYTES; default 32 MiB; answers over a sixteenth of it are not kept).
   */
  historyAnswerCacheBytes?: number;
  /** Turns for large history answers (QUOTES_HISTORY_CONCURRENCY / QUOTES_HISTORY_QUEUE); default 4 at once, 1,000 waiting. */
  historySlots?: HistorySlots;
}

/**
 * A `/api/v2/crypto` answer with history: written as it is produced (the `coins` array in chunks,
 * yielding to the event loop between them), never held whole. Its ETag is computed beforehand
 * from what the body is made of (quotes, candle digests, FX fixings), so equal data gives the
 * same ETag on every replica.
 */
export interface StreamedCryptoResult {
  etag: string;
  maxAgeSeconds: number;
  /** The JSON text of the `coins` array, in pieces. */
  coinsChunks(): AsyncGenerator<string>;
  /** The whole text, when it was already made for this snapshot (then sent like any quote). */
  coinsJson?: string;
  /**
   * Frees the answer's production slot (large answers hold one): call once the response is over,
   * whether it was written, refused with 304 or abandoned. Idempotent.
   */
  release(): void;
}

interface CachedAnswer {
  body: OriginJson;
  etag: string;
  version: number;
  chars: number;
}

interface HistoricalPoint {
  date: number;
  open: number | null;
  high: number | null;
  low: number | null;
  close: number | null;
  volume: number | null;
  adjustedClose: number | null;
}

/** A coin of a history answer: its record's JSON around the history points, and the points. */
interface HistoryCoin {
  /** The record up to the opening bracket of `historicalDataPrice`, built with ORIGIN_MARK (hashed, kept). */
  head: string;
  /** The same for the request's origin (sent). */
  headFor: string;
  /** From the closing bracket of `historicalDataPrice` to the end of the record. */
  tail: string;
  priced: PricedView;
}

/**
 * What a quote without history depends on: the currency and the coins (in order). Not the plan
 * (it only decides what may be asked) nor the origin (put in as the answer is sent), so no request
 * header multiplies the entries.
 */
/** The cache key of a request's answer (CryptoRequest.key). */
export function requestKey(req: Pick<CryptoRequest, 'coins' | 'currency' | 'history'>, plan: Plan): string {
  return req.history === undefined ? cacheKey(req) : historyKey(req, plan);
}

function cacheKey(req: QuoteKey): string {
  return `${req.currency}|${req.coins.join(',')}`;
}

/** A history answer also depends on the window and the plan (its validRanges and validIntervals). */
function historyKey(req: Pick<CryptoRequest, 'coins' | 'currency' | 'history'>, plan: Plan): string {
  const h = req.history;
  const d = h?.dates;
  return `${req.currency}|${h?.range ?? ''}|${h?.interval ?? ''}|${d === undefined ? '' : `${d.from}-${d.to}`}|${plan.id}|${req.coins.join(',')}`;
}

/**
 * Assembles brapi `Coin` records: latest tickers converted at the latest rate, and history
 * converted point by point at the rate of each candle's UTC close date. Responses are cached
 * per market snapshot, so repeated identical requests cost a map lookup.
 */
export class QuoteService {
  /** Answers without history, bounded in bytes; a hit does not reorder (oldest inserted dropped first: each snapshot inserts anew what is asked). */
  readonly cache: ByteLru<CachedQuote>;
  private readonly maxPoints: number;
  private readonly chunkPoints: number;
  /** Whole history answers of the current snapshot, bounded in bytes (a text's length is its size: JSON here is ASCII). */
  readonly historyAnswers: ByteLru<CachedAnswer>;
  private readonly answerMaxBytes: number;
  readonly historySlots: HistorySlots;
  constructor(private readonly deps: QuoteServiceDeps) {
    this.historySlots = deps.historySlots ?? new HistorySlots(4, 1000);
    this.cache = new ByteLru<CachedQuote>(deps.cacheBytes ?? 16 * 1024 * 1024, (e) => e.chars);
    this.maxPoints = deps.historyMaxPoints ?? 50_000;
    this.chunkPoints = Math.max(1, deps.historyChunkPoints ?? 2000);
    this.historyAnswers = new ByteLru<CachedAnswer>(deps.historyAnswerCacheBytes ?? 32 * 1024 * 1024, (a) => a.chars);
    this.answerMaxBytes = Math.floor(this.historyAnswers.maxBytes / 16);
  }

  /**
   * The answer to a request with history, streamed (see StreamedCryptoResult). Refused before
   * any work when the coins' windows may hold more than the budget of candles.
   */
  historyQuote(req: CryptoRequest): MaybePromise<StreamedCryptoResult> {
    const snap = this.deps.snapshots.current();
    return isPromise(snap) ? snap.then((s) => this.historyFor(s, req)) : this.historyFor(snap, req);
  }

  /** `historyQuote` on `snap`: at once when the whole answer is cached, else once produced. */
  private historyFor(snap: MarketSnapshot, req: CryptoRequest): MaybePromise<StreamedCryptoResult> {
    const params = req.history;
    if (params === undefined) throw new Error('historyQuote needs a request with history');
    const { now, rate, maxAgeSeconds } = this.answerable(snap, req);
    // Every coin's window first, so an oversized request costs nothing but this arithmetic.
    const windows = req.coins.map((c) => historyWindow(params, Math.floor((snap.tickers.get(c) as Ticker).closeTime / 1000), req.plan));
    let points = 0;
    for (const w of windows) points += windowPoints(w);
    if (points > this.maxPoints) throw new QuotesError('HISTORY_TOO_LARGE', { limit: this.maxPoints, points });
    const key = req.key;
    const hit = this.historyAnswers.get(key);
    if (hit !== undefined && hit.version === snap.version) {
      const whole = hit.body.render(req.baseUrl).json;
      return {
        etag: hit.etag,
        maxAgeSeconds,
        coinsJson: whole,
        async *coinsChunks(): AsyncGenerator<string> {
          yield await Promise.resolve(whole);
        },
        release: () => undefined,
      };
    }
    return this.produceInSlot(req, snap, now, rate, maxAgeSeconds, windows, points, key);
  }

  private async produceInSlot(req: CryptoRequest, snap: MarketSnapshot, now: number, rate: number, maxAgeSeconds: number, windows: HistoryWindow[], points: number, key: string): Promise<StreamedCryptoResult> {
    // Large answers take a production slot (waiting for one if need be) before any work.
    const release = points * 10 > this.maxPoints ? await this.historySlots.acquire() : (): void => undefined;
    try {
      return await this.produceHistory(req, snap, now, rate, maxAgeSeconds, windows, points, key, release);
    } catch (err) {
      release();
      throw err;
    }
  }

  private async produceHistory(
    req: CryptoRequest,
    snap: MarketSnapshot,
    now: number,
    rate: number,
    maxAgeSeconds: number,
    windows: HistoryWindow[],
    points: number,
    key: string,
    release: () => void,
  ): Promise<StreamedCryptoResult> {
    const { rateOn, stamp } = await this.historyRates(req.currency, Math.min(...windows.map((w) => w.from)), Math.floor(now / 1000));
    const coins = await Promise.all(req.coins.map((c, i) => this.historyCoin(c, snap.tickers.get(c) as Ticker, req, rate, windows[i]!, rateOn, stamp)));
    const hash = createHash('sha1');
    // The origin-free head: equal data, equal ETag, whatever the Host.
    for (const c of coins) hash.update(c.head).update(c.priced.view.digest).update(c.priced.fxStamp).update(c.tail);
    const etag = `W/"${hash.digest('base64url')}"`;
    const chunkPoints = this.chunkPoints;
    const turns = this.deps.history.turns;
    const answers = this.historyAnswers;
    // A point is at least ~100 bytes of JSON: an answer that cannot fit is not collected at all.
    const answerMaxBytes = points * 100 > this.answerMaxBytes ? 0 : this.answerMaxBytes;
    const version = snap.version;
    return {
      etag,
      maxAgeSeconds,
      release,
      async *coinsChunks(): AsyncGenerator<string> {
        // The text is kept as it is written (built for every origin: the heads with ORIGIN_MARK),
        // up to the size a whole answer may have in the cache.
        let kept: string[] | undefined = answerMaxBytes > 0 ? [] : undefined;
        let keptBytes = 0;
        const keep = (piece: string): string => {
          if (kept !== undefined) {
            keptBytes += piece.length;
            if (keptBytes > answerMaxBytes) kept = undefined;
            else kept.push(piece);
          }
          return piece;
        };
        try {
          if (coins.length === 0) yield keep('[]');
          for (let c = 0; c < coins.length; c++) {
            const coin = coins[c]!;
            const n = coin.priced.view.length;
            let i = 0;
            let text = `${c === 0 ? '[' : ','}${coin.head}`;
            // What is sent: the same with the request's origin in the head.
            let sent = `${c === 0 ? '[' : ','}${coin.headFor}`;
            do {
              // One chunk of points per event-loop turn, in turn with every other history request.
              await turns.next();
              const end = Math.min(n, i + chunkPoints);
              const first = i;
              const points: HistoricalPoint[] = [];
              for (; i < end; i++) {
                const p = pricedPoint(coin.priced, i);
                points.push({ date: p.timeMs / 1000, open: p.open, high: p.high, low: p.low, close: p.close, volume: p.volume, adjustedClose: p.close });
              }
              // JSON.stringify writes numbers as the route always did; the chunk's own brackets are cut off.
              const json = points.length === 0 ? '' : JSON.stringify(points);
              let more = `${first === 0 || json === '' ? '' : ','}${json.slice(1, -1)}`;
              if (i === n) more += coin.tail;
              if (i === n && c === coins.length - 1) more += ']';
              keep(text + more);
              yield sent + more;
              text = '';
              sent = '';
            } while (i < n);
          }
          if (kept !== undefined) {
            const body = new OriginJson(kept.join(''));
            answers.set(key, { body, etag, version, chars: key.length + etag.length + body.maxChars + ENTRY_OVERHEAD });
          }
        } finally {
          release(); // done writing (or abandoned): the slot goes to the next large answer
        }
      },
    };
  }

  /**
   * The answer to `req`: at once when the snapshot needs no refresh (a cached quote, or one built
   * now from the snapshot in memory), else after the refresh. Requests with history get the whole
   * text (callers other than the route, which streams `historyQuote`), bounded by the budget.
   */
  quote(req: CryptoRequest): MaybePromise<CryptoResult> {
    if (req.history !== undefined) return this.wholeHistory(req);
    const snap = this.deps.snapshots.current();
    return isPromise(snap) ? snap.then((s) => this.quoteFrom(s, req)) : this.quoteFrom(snap, req);
  }

  private quoteFrom(snap: MarketSnapshot, req: CryptoRequest): CryptoResult {
    const { entry, maxAgeSeconds } = this.entryFor(snap, req, req.key);
    const out = entry.body.render(req.baseUrl);
    return { coinsJson: out.json, etag: entry.etag, maxAgeSeconds, coinsBytes: out.bytes };
  }

  private async wholeHistory(req: CryptoRequest): Promise<CryptoResult> {
    const streamed = await this.historyQuote(req);
    try {
      let coinsJson = streamed.coinsJson ?? '';
      if (streamed.coinsJson === undefined) for await (const piece of streamed.coinsChunks()) coinsJson += piece;
      return { coinsJson, etag: streamed.etag, maxAgeSeconds: streamed.maxAgeSeconds };
    } finally {
      streamed.release();
    }
  }

  /**
   * The `coins` text of a quote without history, for every origin (see origin.ts): what `quote`
   * sends with the request's origin put in, and what the live streams share between clients.
   */
  async quoteJson(req: QuoteKey): Promise<OriginJson> {
    return this.entryFor(await this.deps.snapshots.current(), req, cacheKey(req)).entry.body;
  }

  /**
   * The cache entry of a quote without history for `snap`, built when missing; refused with what
   * `answerability` finds. An entry of this snapshot is served without a check until its
   * `answerableUntil`: with one snapshot only the ages `answerability` checks change.
   */
  private entryFor(snap: MarketSnapshot, req: QuoteKey, key: string): { entry: CachedQuote; maxAgeSeconds: number } {
    const now = this.deps.clock.now();
    let entry = this.cache.peek(key);
    if (entry !== undefined && entry.version === snap.version && now <= entry.answerableUntil) this.cache.hits++;
    else {
      const until = this.answerability(snap, req, now);
      if (typeof until !== 'number') throw until;
      // Counted here (peek counts nothing): the metrics' hit ratio of the quote cache.
      this.cache.misses++;
      const rate = usdRate(snap, req.currency) as number;
      const coins = req.coins.map((c) => this.coin(c, snap.tickers.get(c) as Ticker, req, rate));
      const body = new OriginJson(JSON.stringify(coins));
      // Over the origin-free text: equal data, equal ETag on every replica and for every Host.
      const etag = `W/"${createHash('sha1').update(body.text).digest('base64url')}"`;
      entry = { body, etag, version: snap.version, answerableUntil: until, chars: key.length + etag.length + body.maxChars + ENTRY_OVERHEAD };
      this.cache.set(key, entry);
    }
    return { entry, maxAgeSeconds: this.maxAge(snap, now) };
  }

  /** The time now, refused with what `answerability` finds for `req` in `snap`; the USD rate of its currency and the answer's max-age. */
  private answerable(snap: MarketSnapshot, req: QuoteKey): { now: number; rate: number; maxAgeSeconds: number } {
    const now = this.deps.clock.now();
    const until = this.answerability(snap, req, now);
    if (typeof until !== 'number') throw until;
    return { now, rate: usdRate(snap, req.currency) as number, maxAgeSeconds: this.maxAge(snap, now) };
  }

  private maxAge(snap: MarketSnapshot, now: number): number {
    return Math.max(0, Math.ceil((snap.fetchedAt + this.deps.refreshMs - now) / 1000));
  }

  /**
   * Until when (ms) `problem` keeps finding nothing for `req` in `snap`, given that it finds
   * nothing now: with one snapshot only the ages `problem` checks change (the coins' tickers, a
   * crypto quote currency's ticker, the FX fixing for fiat). Keep the two in step.
   */
  private answerableUntil(snap: MarketSnapshot, req: QuoteKey): number {
    let oldest = Infinity;
    for (const c of req.coins) oldest = Math.min(oldest, (snap.tickers.get(c) as Ticker).closeTime);
    if (isCryptoQuote(req.currency) && !USD_PEGGED.has(req.currency)) oldest = Math.min(oldest, snap.tickers.get(req.currency)?.closeTime ?? Infinity);
    if (isFiat(req.currency) && req.currency !== 'USD') oldest = Math.min(oldest, snap.fx.time);
    return oldest + this.deps.staleMs;
  }

  /**
   * Why `req` cannot be answered from `snap` now (missing or stale data, no rate), or else until
   * when (ms) it stays answerable: with one snapshot only the ages checked here change (the coins'
   * tickers, a crypto quote currency's ticker, the FX fixing for fiat), so the answer holds while
   * `now` is at most the oldest of them plus QUOTES_STALE_SECONDS. One function decides both, so
   * a cached answer is served exactly as long as this check would pass.
   */
  private answerability(snap: MarketSnapshot, req: QuoteKey, now: number): QuotesError | number {
    const staleMs = this.deps.staleMs;
    let missing: string[] | undefined;
    let stale: string[] | undefined;
    let oldest = Infinity;
    let oldestFresh = Infinity;
    for (const c of req.coins) {
      const t = snap.tickers.get(c);
      if (t === undefined || !(t.lastPrice > 0)) (missing ??= []).push(c);
      // Old data is never served as current: the answer says how old it is.
      else if (now - t.closeTime > staleMs) {
        (stale ??= []).push(c);
        oldest = Math.min(oldest, t.closeTime);
      } else oldestFresh = Math.min(oldestFresh, t.closeTime);
    }
    if (missing !== undefined) return new QuotesError('QUOTE_UNAVAILABLE', { coins: missing });
    const limitSeconds = Math.round(staleMs / 1000);
    if (stale !== undefined) return new QuotesError('QUOTE_UNAVAILABLE', { coins: stale, ageSeconds: Math.floor((now - oldest) / 1000), limitSeconds });
    const rate = usdRate(snap, req.currency);
    // Extension currencies (more fiat, crypto quotes) are offered only where a rate exists.
    if (rate === undefined && req.currency !== 'USD' && !isCurrency(req.currency)) {
      return new QuotesError('CURRENCY_INVALID', { valid: QUOTE_CURRENCIES.filter((c) => usdRate(snap, c) !== undefined) });
    }
    if (rate === undefined || !(rate > 0)) return new QuotesError('QUOTE_UNAVAILABLE', { coins: [`USD/${req.currency}`] });
    if (isCryptoQuote(req.currency) && !USD_PEGGED.has(req.currency)) {
      const q = snap.tickers.get(req.currency);
      if (q !== undefined) {
        if (now - q.closeTime > staleMs) return new QuotesError('QUOTE_UNAVAILABLE', { coins: [req.currency], ageSeconds: Math.floor((now - q.closeTime) / 1000), limitSeconds });
        oldestFresh = Math.min(oldestFresh, q.closeTime);
      }
    }
    if (isFiat(req.currency) && req.currency !== 'USD') {
      if (now - snap.fx.time > staleMs) return new QuotesError('QUOTE_UNAVAILABLE', { coins: [`USD/${req.currency}`], ageSeconds: Math.floor((now - snap.fx.time) / 1000), limitSeconds });
      oldestFresh = Math.min(oldestFresh, snap.fx.time);
    }
    return oldestFresh + staleMs;
  }

  /**
   * Daily rates for history: fiat at its fixings, USD-pegged coins 1:1 like USD, BTC/ETH at
   * 1 / the coin's own daily close of each UTC day (from `from`, Unix seconds).
   */
  private async historyRates(currency: string, from: number, asOf: number): Promise<{ rateOn: RateOn; stamp: string }> {
    if (USD_PEGGED.has(currency)) return this.deps.fxHistory.rates('USD');
    if (!isCryptoQuote(currency)) return this.deps.fxHistory.rates(currency);
    const days = await this.deps.history.series(currency, '1d', bucketStart('1d', Math.max(0, from)), asOf);
    const close = new Map(days.map((p) => [p.time / 86_400, p.close]));
    const rateOn: RateOn = (day) => {
      const c = close.get(day);
      return c !== undefined && c > 0 ? 1 / c : null;
    };
    return { rateOn, stamp: `${currency}:${days.length}:${days[days.length - 1]?.close ?? ''}` };
  }

  private async historyCoin(symbol: string, t: Ticker, req: CryptoRequest, rate: number, w: HistoryWindow, rateOn: PricedView['rateOn'], fxStamp: string): Promise<HistoryCoin> {
    const out = this.coin(symbol, t, req, rate);
    const view = await this.deps.history.view(symbol, w.usedInterval, w.from, w.to, Math.floor(t.closeTime / 1000));
    out.usedInterval = w.usedInterval;
    out.usedRange = w.usedRange;
    const record = JSON.stringify(out);
    const head = `${record.slice(0, -1)},"historicalDataPrice":[`;
    return {
      head,
      headFor: new OriginJson(head).render(req.baseUrl).json,
      tail: `],"validRanges":${JSON.stringify(req.plan.ranges)},"validIntervals":${JSON.stringify(req.plan.intervals)}}`,
      priced: { view, rateOn, fxStamp, currency: req.currency },
    };
  }

  private coin(symbol: string, t: Ticker, req: QuoteKey, rate: number): Record<string, unknown> {
    const info = this.deps.catalog.get(symbol);
    const fmt = valueFormat(req.currency);
    const low = t.lowPrice * rate;
    const high = t.highPrice * rate;
    // Key order follows brapi's documented example, for clients that compare text.
    const out: Record<string, unknown> = {
      currency: req.currency,
      currencyRateFromUSD: fmt.rate(rate),
      coinName: info?.name ?? symbol,
      coin: symbol,
      regularMarketChange: fmt.price(t.priceChange * rate),
      regularMarketPrice: fmt.price(t.lastPrice * rate),
      regularMarketChangePercent: fmt.percent(t.priceChangePercent),
      regularMarketDayLow: fmt.price(low),
      regularMarketDayHigh: fmt.price(high),
      regularMarketDayRange: fmt.dayRange(low, high),
      regularMarketVolume: fmt.amount(t.quoteVolume * rate),
      marketCap: t.circulatingSupply === undefined ? 0 : fmt.amount(t.lastPrice * t.circulatingSupply * rate),
      regularMarketTime: new Date(t.closeTime).toISOString(),
      // Built for every origin; the request's is put in as the answer is sent (OriginJson).
      coinImageUrl: `${ORIGIN_MARK}/icons/${symbol.toLowerCase()}.svg`,
    };
    return out;
  }
}
