import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Plan } from '../accounts/plans.js';
import type { MarketData } from '../coingecko/market-data.js';
import { QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { CURRENCIES, isCurrency } from '../market/currencies.js';
import type { PublicThrottle } from '../ratelimit/public-throttle.js';
import type { QuoteService } from '../service/quote-service.js';
import { cryptoRequest, queryValue, type RawQuery } from '../api/crypto-query.js';
import { marketBoardJson } from './market-board.js';
import { ORIGIN_MARK, OriginJson, requestOrigin, type Origin } from '../origin.js';

export interface PublicMarketDeps {
  marketData: MarketData;
  quotes: QuoteService;
  catalog: CoinCatalog;
  /** Whose ranges, intervals and history reach a visitor's coin charts follow (DASHBOARD_SIGNUP_PLAN). */
  plan: Plan;
  throttle: PublicThrottle;
  publicBaseUrl: Origin | undefined;
}

/**
 * The market and coin pages for visitors without an account, when the operator opens them
 * (QUOTES_PUBLIC_MARKET=true): read-only, no token and no quota, each request counted per client
 * address by the `public_ip` rule (429 past it).
 *   GET /dashboard/api/public/market?currency=            the board and global header, built once per snapshot and currency
 *   GET /dashboard/api/public/market/history?coin=&...    one coin's record with candles, within `plan`'s ranges
 * The page refreshes the board once per market refresh while it is visible (no stream: streams
 * are held and charged per account).
 */
export function registerPublicMarketRoutes(app: FastifyInstance, deps: PublicMarketDeps): void {
  const baseUrl = (request: FastifyRequest): Origin => requestOrigin(deps.publicBaseUrl, request.protocol, request.host);
  // One board per currency (brapi's 11) for the snapshot it was built on, with ORIGIN_MARK where
  // the request's origin goes: no client-chosen Host makes the server build or keep another.
  const boards = new Map<string, { snap: object; body: Promise<OriginJson> }>();

  void app.register((scope, _opts, done) => {
    scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      reply.removeHeader('access-control-allow-origin');
      reply.removeHeader('access-control-expose-headers');
      void reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
      await deps.throttle.visit(request.ip);
    });

    scope.get('/dashboard/api/public/market', async (request, reply) => {
      const currency = (queryValue(request.query as RawQuery, 'currency') ?? 'USD').trim().toUpperCase();
      if (!isCurrency(currency)) throw new QuotesError('CURRENCY_INVALID', { valid: CURRENCIES });
      const board = await deps.marketData.board();
      const origin = baseUrl(request);
      let hit = boards.get(currency);
      if (hit?.snap !== board.snap) {
        hit = { snap: board.snap, body: marketBoardJson(deps.marketData, board, currency, ORIGIN_MARK).then((json) => new OriginJson(JSON.stringify(json))) };
        boards.set(currency, hit);
        hit.body.catch(() => boards.delete(currency));
      }
      const body = await hit.body;
      return reply.type('application/json; charset=utf-8').send(body.textFor(origin));
    });

    scope.get('/dashboard/api/public/market/history', async (request) => {
      const q = request.query as RawQuery;
      const req = cryptoRequest({ coin: queryValue(q, 'coin'), currency: queryValue(q, 'currency'), range: queryValue(q, 'range') ?? '1mo', interval: queryValue(q, 'interval') }, deps.plan, deps.catalog, baseUrl(request));
      if (req.coins.length !== 1) throw new QuotesError('COINS_TOO_MANY', { limit: 1 });
      const result = await deps.quotes.quote(req);
      const coin = (JSON.parse(result.coinsJson) as Array<Record<string, unknown>>)[0]!;
      return { coin, plan: { ranges: deps.plan.ranges, intervals: deps.plan.intervals } };
    });
    done();
  });
}
