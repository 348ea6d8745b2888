import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cacheableAnswer, sendAnswer } from '../api/answers.js';
import type { Authenticate } from '../api/authenticator.js';
import type { RawQuery } from '../api/crypto-query.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import { ByteLru } from '../history/byte-lru.js';
import type { Plan } from '../accounts/plans.js';
import { ORIGIN_MARK, OriginJson, requestOrigin, type Origin } from '../origin.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { cgErrorAnswer } from './cg-errors.js';
import { required } from './cg-params.js';
import { requestCoingeckoToken } from './cg-routes.js';
import type { Board, BoardCoin, MarketData } from './market-data.js';

/**
 * What the /api/v3 routes added beside cg-routes.ts share: the request steps (key -> account and
 * limiters -> board -> body -> answer, every failure in CoinGecko's shape) and a cache of built
 * bodies. Each route names its cache key as a value of `CgBodyKey`, so what a body depends on is
 * written in one type; the cache holds a body for the market snapshot it was built on only.
 */

/**
 * A built JSON body for every origin (absolute URLs are built with ORIGIN_MARK; the request's
 * origin is put in as it is sent, see origin.ts) and its weak ETag over the origin-free text.
 */
export interface CgBody {
  json: OriginJson;
  etag: string;
}

/** Everything a cached /api/v3 body depends on besides the market snapshot (which every key implies). */
export type CgBodyKey =
  | { kind: 'history'; coin: string; date: string; localization: boolean }
  | { kind: 'ohlc-range'; coin: string; vs: string; from: number; to: number; interval: 'daily' | 'hourly'; precision: string }
  | { kind: 'exchange-rates' }
  | { kind: 'movers'; vs: string; duration: string; topCoins: string; changes: string }
  | { kind: 'coin-tickers'; coin: string; exchanges: string; logo: boolean; page: number; order: string; depth: boolean }
  | { kind: 'exchanges'; page: number; perPage: number }
  | { kind: 'exchanges-list'; status: string }
  | { kind: 'exchange'; id: string }
  | { kind: 'exchange-tickers'; id: string; coins: string; logo: boolean; page: number; order: string; depth: boolean };

/** Built bodies in flight (shared by concurrent requests) and built, per snapshot, bounded in bytes. */
export class CgBodyCache {
  private readonly built: ByteLru<{ snap: object; body: CgBody }>;
  private readonly building = new Map<string, { snap: object; body: Promise<CgBody> }>();
  constructor(maxBytes: number) {
    // A body's JSON text, the origin texts it keeps, and its ETag (UTF-16 code units: two bytes
    // each). Keys hold parameters only, never a header: the Host cannot multiply entries.
    this.built = new ByteLru(maxBytes, (e) => 2 * (e.body.json.maxChars + e.body.etag.length));
  }

  /** Bytes of bodies kept now. */
  get bytes(): number {
    return this.built.bytes;
  }

  /**
   * The body for `key` on `board`'s snapshot, built at most once per snapshot: a request arriving
   * while it is built waits for that build. A failed build is not kept.
   */
  get(board: Board, key: CgBodyKey, build: () => unknown): Promise<CgBody> {
    const text = JSON.stringify(key);
    const hit = this.built.get(text);
    if (hit?.snap === board.snap) return Promise.resolve(hit.body);
    const pending = this.building.get(text);
    if (pending?.snap === board.snap) return pending.body;
    const body = (async (): Promise<CgBody> => bodyOf(await build()))();
    const entry = { snap: board.snap, body };
    this.building.set(text, entry);
    body.then(
      (b) => {
        if (this.building.get(text) === entry) this.building.delete(text);
        this.built.set(text, { snap: board.snap, body: b });
      },
      () => {
        if (this.building.get(text) === entry) this.building.delete(text);
      },
    );
    return body;
  }
}

export function bodyOf(value: unknown): CgBody {
  const json = new OriginJson(JSON.stringify(value));
  // Over the origin-free text: equal data, equal ETag, whatever the Host.
  return { json, etag: `W/"${createHash('sha1').update(json.text).digest('base64url')}"` };
}

export interface CgRouteDeps {
  data: MarketData;
  catalog: CoinCatalog;
  clock: Clock;
  /** The authenticator built with `requestCoingeckoToken` (counts the request against the plan). */
  auth: Authenticate;
  publicBaseUrl: Origin | undefined;
  /** Milliseconds between market refreshes (Cache-Control max-age). */
  refreshMs: number;
}

/** `plan` is the authenticated account's (from the route's auth step). */
export type CgHandler = (request: FastifyRequest, q: RawQuery, board: Board, plan: Plan) => Promise<CgBody>;

/**
 * The origin of absolute URLs (icons, logos) in bodies as they are built and cached: the mark that
 * cgRoute replaces with the request's origin when it sends them, so no body or cache key depends
 * on the Host header.
 */
export function cgBaseUrl(): Origin {
  return ORIGIN_MARK;
}

/** Seconds until the board's snapshot is replaced (Cache-Control max-age). */
export function cgMaxAge(deps: Pick<CgRouteDeps, 'refreshMs' | 'clock'>, board: Board): number {
  return Math.max(0, Math.ceil((board.snap.fetchedAt + deps.refreshMs - deps.clock.now()) / 1000));
}

/**
 * An authenticated GET route of /api/v3: origin (a Host that cannot be one is refused before
 * anything is counted), key -> account and limiters, then the board, then the cached body with
 * the origin put in.
 */
export function cgRoute(app: FastifyInstance, deps: CgRouteDeps, url: string, handler: CgHandler): void {
  app.get(url, async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      const origin = requestOrigin(deps.publicBaseUrl, request.protocol, request.host);
      if (requestCoingeckoToken(request) === undefined) throw new QuotesError('TOKEN_INVALID', { reason: 'missing' });
      const account = await deps.auth(request, reply);
      const board = await deps.data.board();
      const body = await handler(request, request.query as RawQuery, board, account.plan);
      return sendAnswer(reply, cacheableAnswer(body.json.render(origin).json, body.etag, cgMaxAge(deps, board), request.headers['if-none-match']));
    } catch (err) {
      return sendAnswer(reply, cgErrorAnswer(err, request.log));
    }
  });
}

/** The board coin of the `:id` path parameter: 404 for an unknown id, 503 when it has no fresh ticker. */
export function cgCoin(catalog: CoinCatalog, request: FastifyRequest, board: Board): BoardCoin {
  const id = (request.params as { id?: string }).id ?? '';
  const symbol = id.length <= 200 ? catalog.ids.symbol(id) : undefined;
  if (symbol === undefined) throw new QuotesError('COIN_UNKNOWN', { coins: [id.slice(0, 200)] });
  const c = board.bySymbol.get(symbol);
  if (c === undefined) throw new QuotesError('QUOTE_UNAVAILABLE', { coins: [symbol] });
  return c;
}

/** A vs_currency this board converts into (lower case); 400 `invalid vs_currency` otherwise. */
export function cgVs(data: MarketData, q: RawQuery, board: Board, name = 'vs_currency'): string {
  const vs = required(q, name).toLowerCase();
  data.rate(board, vs);
  return vs;
}


/**
 * GET /api/v3 (the base URL the quick start prints, opened in a browser): the answer of /ping and
 * where the endpoints are described, instead of a 404 (no key needed, not counted).
 */
export function registerCoinGeckoRoot(app: FastifyInstance): void {
  const body = JSON.stringify({ gecko_says: '(V3) To the Moon!', docs: '/docs', openapi: '/openapi.json' });
  for (const url of ['/api/v3', '/api/v3/']) {
    app.get(url, (_request, reply) => {
      void reply.header('cache-control', 'no-store').type('application/json; charset=utf-8').send(body);
    });
  }
}
