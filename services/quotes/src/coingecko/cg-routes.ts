import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cacheableAnswer, sendAnswer } from '../api/answers.js';
import { tokenOf, type Authenticate } from '../api/authenticator.js';
import { CG_KEY_HEADERS, CG_KEY_PARAMS } from '../http/credentials.js';
import { queryValue, type RawQuery } from '../api/crypto-query.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import { DAY } from '../domain/intervals.js';
import type { Plan } from '../accounts/plans.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { ORIGIN_MARK, OriginJson, requestOrigin, type Origin } from '../origin.js';
import { badParam, cgErrorAnswer } from './cg-errors.js';
import { bool, instant, int, list, precision, required, text } from './cg-params.js';
import type { Board, BoardCoin, MarketData } from './market-data.js';
import {
  CHANGE_WINDOWS,
  chartGranularity,
  chartView,
  coinsListView,
  coinView,
  GECKO_SAYS,
  globalView,
  MARKET_ORDERS,
  marketsView,
  OHLC_DAYS,
  ohlcGranularity,
  ohlcView,
  planFloor,
  searchView,
  simplePriceView,
  type ChangeWindow,
  type MarketOrder,
} from './views.js';

/** Most bodies kept (per market snapshot; a new snapshot replaces them as they are asked again). */
const BODY_CACHE_ENTRIES = 512;
/** Characters an entry costs beyond its key and texts (objects, the map slot), as the byte bound counts it. */
const ENTRY_OVERHEAD = 200;
/** Longest `days` of market_chart (100 years). */
const MAX_DAYS = 36_500;
/** Most pages of /coins/markets (CoinGecko pages through at most a few thousand). */
const MAX_PAGE = 10_000;
const PER_PAGE_MAX = 250;

/**
 * The key of a CoinGecko client, as it sends it: the `x-cg-pro-api-key` / `x-cg-demo-api-key`
 * header, the `x_cg_pro_api_key` / `x_cg_demo_api_key` query parameter, then ours
 * (`Authorization: Bearer`, `?token=`). Either key kind names the same token.
 */
export function coingeckoToken(headers: IncomingHttpHeaders, query: RawQuery): string | undefined {
  for (const h of CG_KEY_HEADERS) {
    const v = headers[h];
    if (typeof v === 'string' && v.trim() !== '') return v.trim();
  }
  for (const q of CG_KEY_PARAMS) {
    const v = queryValue(query, q)?.trim();
    if (v !== undefined && v !== '') return v;
  }
  return tokenOf(headers, query);
}

export function requestCoingeckoToken(request: FastifyRequest): string | undefined {
  return coingeckoToken(request.headers, request.query as RawQuery);
}

export interface CoinGeckoRoutesDeps {
  data: MarketData;
  catalog: CoinCatalog;
  clock: Clock;
  /** The authenticator built with `requestCoingeckoToken` (counts the request against the plan). */
  auth: Authenticate;
  publicBaseUrl: Origin | undefined;
  /** Milliseconds between market refreshes (Cache-Control max-age). */
  refreshMs: number;
  /** Most bytes of built bodies and their keys kept (QUOTES_COINGECKO_CACHE_BYTES; oldest dropped first; 0 keeps none). */
  cacheBytes: number;
}

/** A built body for every origin (image URLs are built with ORIGIN_MARK; see origin.ts), and its ETag. */
interface Body {
  json: OriginJson;
  etag: string;
}

const ALLOW = 'GET, HEAD, OPTIONS';

/** The CoinGecko-compatible API under /api/v3 (docs/quotes.md, "CoinGecko-compatible API"). */
export function registerCoinGeckoRoutes(app: FastifyInstance, deps: CoinGeckoRoutesDeps): void {
  const { data, catalog } = deps;
  // Keys hold what selects the data (parameters, never a header); a key's characters count
  // against the bound from the moment it is inserted, the body's once built.
  const cache = new Map<string, { snap: object; body: Promise<Body>; chars: number }>();
  let cachedChars = 0;
  const drop = (key: string): void => {
    const e = cache.get(key);
    if (e === undefined) return;
    cachedChars -= e.chars;
    cache.delete(key);
  };
  const trim = (): void => {
    while (cachedChars > deps.cacheBytes && cache.size > 0) drop(cache.keys().next().value as string);
  };
  let listed: { board: Board; coins: { id: string; symbol: string; name: string; rank: number | null }[] } | undefined;
  const listedCoins = (board: Board): { id: string; symbol: string; name: string; rank: number | null }[] => {
    if (listed?.board !== board) {
      const coins = catalog.symbols.map((s) => ({ id: catalog.ids.id(s) ?? s.toLowerCase(), symbol: s, name: catalog.get(s)?.name ?? s, rank: board.bySymbol.get(s)?.rank ?? null }));
      listed = { board, coins };
    }
    return listed.coins;
  };

  const bodyOf = (value: unknown): Body => {
    const json = new OriginJson(JSON.stringify(value));
    // Over the origin-free text: equal data, equal ETag, whatever the Host.
    return { json, etag: `W/"${createHash('sha1').update(json.text).digest('base64url')}"` };
  };

  /**
   * The body for `key` on this board, computed once per snapshot: requests arriving while it is
   * being built wait for that build (a market refresh under load costs one build, not one per
   * request). A failed build is forgotten, so the next request tries again.
   */
  const cached = (board: Board, key: string, build: () => unknown): Promise<Body> => {
    const hit = cache.get(key);
    if (hit?.snap === board.snap) return hit.body;
    const body = (async (): Promise<Body> => bodyOf(await build()))();
    drop(key);
    while (cache.size >= BODY_CACHE_ENTRIES) drop(cache.keys().next().value as string);
    const entry = { snap: board.snap, body, chars: key.length + ENTRY_OVERHEAD };
    cache.set(key, entry);
    cachedChars += entry.chars;
    body.then(
      (b) => {
        if (cache.get(key) !== entry) return;
        const more = b.json.maxChars + b.etag.length;
        entry.chars += more;
        cachedChars += more;
        trim();
      },
      () => {
        if (cache.get(key) === entry) drop(key);
      },
    );
    return body;
  };

  const maxAge = (board: Board): number => Math.max(0, Math.ceil((board.snap.fetchedAt + deps.refreshMs - deps.clock.now()) / 1000));

  type Handler = (request: FastifyRequest, q: RawQuery, board: Board, plan: Plan) => Promise<Body>;

  /**
   * An authenticated route: origin (a Host that cannot be one is refused before anything is
   * counted), key -> account and limiters, then the board, then the cached body with the origin
   * put in.
   */
  const route = (url: string, handler: Handler): void => {
    app.get(url, async (request: FastifyRequest, reply: FastifyReply) => {
      try {
        const origin = requestOrigin(deps.publicBaseUrl, request.protocol, request.host);
        if (requestCoingeckoToken(request) === undefined) throw new QuotesError('TOKEN_INVALID', { reason: 'missing' });
        const account = await deps.auth(request, reply);
        const board = await data.board();
        const body = await handler(request, request.query as RawQuery, board, account.plan);
        return sendAnswer(reply, cacheableAnswer(body.json.render(origin).json, body.etag, maxAge(board), request.headers['if-none-match']));
      } catch (err) {
        return sendAnswer(reply, cgErrorAnswer(err, request.log));
      }
    });
  };

  const vsOf = (q: RawQuery, board: Board, name = 'vs_currency'): string => {
    const vs = required(q, name).toLowerCase();
    data.rate(board, vs); // 400 invalid vs_currency
    return vs;
  };
  const coinOf = (request: FastifyRequest, board: Board): BoardCoin => {
    const id = (request.params as { id?: string }).id ?? '';
    const symbol = id.length <= 200 ? catalog.ids.symbol(id) : undefined;
    if (symbol === undefined) throw new QuotesError('COIN_UNKNOWN', { coins: [id.slice(0, 200)] });
    const c = board.bySymbol.get(symbol);
    if (c === undefined) throw new QuotesError('QUOTE_UNAVAILABLE', { coins: [symbol] });
    return c;
  };

  app.get('/api/v3/ping', (_request, reply) => {
    void reply.header('cache-control', 'no-store').type('application/json; charset=utf-8').send(JSON.stringify({ gecko_says: GECKO_SAYS }));
  });

  route('/api/v3/simple/supported_vs_currencies', (_r, _q, board) => cached(board, 'vs', () => board.vsCurrencies));

  route('/api/v3/simple/price', (_r, q, board) => {
    const vs = list(q, 'vs_currencies');
    if (vs === undefined) throw badParam("missing 'vs_currencies' parameter");
    const ids = list(q, 'ids');
    const names = list(q, 'names');
    const symbols = list(q, 'symbols');
    if (ids === undefined && names === undefined && symbols === undefined) throw badParam("missing 'ids' parameter");
    const p = {
      ids,
      names,
      symbols,
      vs,
      marketCap: bool(q, 'include_market_cap', false),
      vol: bool(q, 'include_24hr_vol', false),
      change: bool(q, 'include_24hr_change', false),
      lastUpdated: bool(q, 'include_last_updated_at', false),
      precision: precision(q),
    };
    return cached(board, `price|${JSON.stringify(p)}`, () => simplePriceView(data, board, p));
  });

  route('/api/v3/coins/list', (_r, q, board) => {
    const includePlatform = bool(q, 'include_platform', false);
    const status = text(q, 'status') ?? 'active';
    if (status !== 'active' && status !== 'inactive') throw badParam("invalid 'status' parameter: expected active or inactive");
    return cached(board, `list|${includePlatform}|${status}`, () => (status === 'inactive' ? [] : coinsListView(board, includePlatform, listedCoins(board))));
  });

  route('/api/v3/coins/markets', (_r, q, board) => {
    const vs = vsOf(q, board);
    if (text(q, 'category') !== undefined) throw badParam("'category' is not supported by this server");
    const order = (text(q, 'order') ?? 'market_cap_desc').toLowerCase();
    if (!(MARKET_ORDERS as readonly string[]).includes(order)) throw badParam(`invalid 'order' parameter: expected one of ${MARKET_ORDERS.join(', ')}`);
    const changes: ChangeWindow[] = [];
    for (const w of list(q, 'price_change_percentage') ?? []) {
      if (!(CHANGE_WINDOWS as readonly string[]).includes(w)) throw badParam(`invalid 'price_change_percentage' parameter: expected ${CHANGE_WINDOWS.join(', ')}`);
      changes.push(w as ChangeWindow);
    }
    const p = {
      vs,
      ids: list(q, 'ids'),
      names: list(q, 'names'),
      symbols: list(q, 'symbols'),
      order: order as MarketOrder,
      perPage: int(q, 'per_page', 100, 1, PER_PAGE_MAX),
      page: int(q, 'page', 1, 1, MAX_PAGE),
      sparkline: bool(q, 'sparkline', false),
      changes,
      precision: precision(q),
      baseUrl: ORIGIN_MARK,
    };
    return cached(board, `markets|${JSON.stringify(p)}`, () => marketsView(data, board, p));
  });

  route('/api/v3/coins/:id', (request, q, board) => {
    const c = coinOf(request, board);
    const p = {
      marketData: bool(q, 'market_data', true),
      localization: bool(q, 'localization', true),
      tickers: bool(q, 'tickers', true),
      sparkline: bool(q, 'sparkline', false),
      baseUrl: ORIGIN_MARK,
    };
    // Accepted for compatibility, no effect: community_data, developer_data, include_categories_details, dex_pair_format.
    for (const b of ['community_data', 'developer_data', 'include_categories_details']) bool(q, b, false);
    return cached(board, `coin|${c.id}|${JSON.stringify(p)}`, () => coinView(data, board, c, p));
  });

  route('/api/v3/coins/:id/market_chart', (request, q, board, plan) => {
    const c = coinOf(request, board);
    const vs = vsOf(q, board);
    const daysRaw = required(q, 'days').toLowerCase();
    let from: number;
    let span: number;
    if (daysRaw === 'max') {
      from = 0;
      span = Infinity;
    } else {
      if (!/^\d{1,6}(\.\d{1,6})?$/.test(daysRaw) || !(Number(daysRaw) > 0) || Number(daysRaw) > MAX_DAYS) throw badParam(`invalid 'days' parameter: expected max or a number of days from 0 to ${MAX_DAYS}`);
      span = Number(daysRaw);
      from = board.asOf - Math.round(span * DAY);
    }
    const granularity = chartGranularity(span, text(q, 'interval')?.toLowerCase());
    from = Math.max(from, planFloor(plan, board.asOf));
    const prec = precision(q);
    return cached(board, `chart|${c.id}|${vs}|${daysRaw}|${granularity.interval}|${String(prec)}|${from}`, () =>
      chartView(data, board, { coin: c, vs, from, to: board.asOf, granularity, precision: prec }),
    );
  });

  route('/api/v3/coins/:id/market_chart/range', (request, q, board, plan) => {
    const c = coinOf(request, board);
    const vs = vsOf(q, board);
    let from = instant(q, 'from');
    const to = Math.min(instant(q, 'to'), board.asOf);
    if (!(from < to)) throw badParam("'from' must be earlier than 'to' (and than now)");
    const granularity = chartGranularity((to - from) / DAY, text(q, 'interval')?.toLowerCase());
    from = Math.max(from, planFloor(plan, board.asOf));
    const prec = precision(q);
    return cached(board, `range|${c.id}|${vs}|${from}|${to}|${granularity.interval}|${String(prec)}`, () =>
      chartView(data, board, { coin: c, vs, from, to: Math.max(from, to), granularity, precision: prec }),
    );
  });

  route('/api/v3/coins/:id/ohlc', (request, q, board, plan) => {
    const c = coinOf(request, board);
    const vs = vsOf(q, board);
    const daysRaw = required(q, 'days').toLowerCase();
    if (!(OHLC_DAYS as readonly string[]).includes(daysRaw)) throw badParam(`invalid 'days' parameter: expected one of ${OHLC_DAYS.join(', ')}`);
    const days = daysRaw === 'max' ? Infinity : Number(daysRaw);
    const granularity = ohlcGranularity(days, text(q, 'interval')?.toLowerCase());
    const from = Math.max(days === Infinity ? 0 : board.asOf - days * DAY, planFloor(plan, board.asOf));
    const prec = precision(q);
    return cached(board, `ohlc|${c.id}|${vs}|${daysRaw}|${granularity.interval}|${granularity.mergeSeconds ?? 0}|${String(prec)}|${from}`, () =>
      ohlcView(data, { coin: c, vs, from, to: board.asOf, granularity, precision: prec }),
    );
  });

  route('/api/v3/search', (_r, q, board) => {
    const query = required(q, 'query');
    if (query.length > 100) throw badParam("'query' is too long (at most 100 characters)");
    return cached(board, `search|${query.toLowerCase()}`, () => searchView(board, query, listedCoins(board), ORIGIN_MARK));
  });

  route('/api/v3/global', (_r, _q, board) => cached(board, 'global', () => globalView(data, board)));

  // Unknown paths and methods under /api/v3 answer in CoinGecko's shape (not brapi's).
  app.get('/api/v3/*', (request, reply) => sendAnswer(reply, cgErrorAnswer(new QuotesError('ROUTE_NOT_FOUND'), request.log)));
  const refuse = (request: FastifyRequest, reply: FastifyReply): FastifyReply => sendAnswer(reply, cgErrorAnswer(new QuotesError('METHOD_NOT_ALLOWED', { allow: ALLOW }), request.log));
  // Refused before any body parsing, so odd content types still get a clean 405.
  app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url: '/api/v3/*', onRequest: (request, reply) => void refuse(request, reply), handler: refuse });
}
