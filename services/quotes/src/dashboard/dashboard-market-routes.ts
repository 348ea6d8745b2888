import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Account, AccountService } from '../accounts/account-service.js';
import type { PlanCatalog } from '../accounts/plans.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import type { UserService } from '../accounts/user-service.js';
import type { MarketData } from '../coingecko/market-data.js';
import { QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { CURRENCIES, isCurrency } from '../market/currencies.js';
import { requestKey, type QuoteService } from '../service/quote-service.js';
import type { QuoteStreamHub } from '../stream/quote-stream-hub.js';
import { openStream } from '../stream/stream-routes.js';
import { admitAll } from '../api/admission.js';
import { readCookies } from '../api/cookies.js';
import { cryptoRequest, queryValue, type RawQuery } from '../api/crypto-query.js';
import { SESSION_COOKIE } from './dashboard-routes.js';
import { requestOrigin, type Origin } from '../origin.js';
import { marketBoardJson } from './market-board.js';

export interface DashboardMarketDeps {
  users: UserService;
  accounts: AccountService;
  plans: PlanCatalog;
  limiters: readonly RequestLimiter[];
  marketData: MarketData;
  quotes: QuoteService;
  catalog: CoinCatalog;
  hub: QuoteStreamHub;
  publicBaseUrl: Origin | undefined;
}

/** Rows of a market page; its stream follows the rows on screen, so it may follow this many coins. */
export const MARKET_PAGE_ROWS = 100;

/**
 * The dashboard's market data, authenticated by the session cookie instead of the API token, so
 * a browser that never saw the token (a new sign-in) shows the market without rotating it. Each
 * call still counts against the signed-in user's plan as one API request of their token (burst
 * limits and monthly quota), so the dashboard is no way around the plan:
 *   GET /dashboard/api/market?currency=USD          the ranked board (sparklines, 1h/24h/7d) and the
 *                                                   global header (/api/v3/global's figures): 1 request
 *   GET /dashboard/api/market/history?coin=&currency=&range=&interval=   one coin's candles: 1 request
 *   GET /dashboard/api/market/stream?coin=&currency=   live prices (SSE): 1 request at open + 1 per
 *                                                      QUOTES_STREAM_CHARGE_INTERVAL while open
 */
export function registerDashboardMarketRoutes(app: FastifyInstance, deps: DashboardMarketDeps): void {
  const baseUrl = (request: FastifyRequest): Origin => requestOrigin(deps.publicBaseUrl, request.protocol, request.host);

  /** The session's user as an API account: their live token and its plan. */
  async function sessionAccount(request: FastifyRequest): Promise<Account> {
    const user = await deps.users.resolveSession(readCookies(request.headers.cookie).get(SESSION_COOKIE));
    if (user === undefined) throw new QuotesError('SIGNED_OUT');
    const record = user.tokenId === null ? undefined : await deps.accounts.findToken(user.tokenId);
    if (record === undefined || record.revokedAt !== null) throw new QuotesError('TOKEN_INVALID');
    const plan = deps.plans.get(record.planId);
    if (plan === undefined) throw new QuotesError('TOKEN_INVALID');
    if (!plan.crypto) throw new QuotesError('PLAN_NO_CRYPTO');
    return { tokenId: record.id, name: record.name, plan };
  }

  async function admitted(request: FastifyRequest, reply: FastifyReply): Promise<Account> {
    const account = await sessionAccount(request);
    const headers: string[] = [];
    try {
      await admitAll(account, deps.limiters, headers);
    } finally {
      for (let i = 0; i < headers.length; i += 2) reply.header(headers[i]!, headers[i + 1]);
    }
    return account;
  }

  const currencyOf = (q: RawQuery): string => {
    const c = (queryValue(q, 'currency') ?? 'USD').trim().toUpperCase();
    if (!isCurrency(c)) throw new QuotesError('CURRENCY_INVALID', { valid: CURRENCIES });
    return c;
  };

  void app.register((scope, _opts, done) => {
    scope.addHook('onRequest', (_request, reply, next) => {
      // Same-origin only, never cached (as the rest of the dashboard API).
      reply.removeHeader('access-control-allow-origin');
      reply.removeHeader('access-control-expose-headers');
      void reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
      next();
    });

    scope.get('/dashboard/api/market', async (request, reply) => {
      const currency = currencyOf(request.query as RawQuery);
      const origin = baseUrl(request);
      await admitted(request, reply);
      const board = await deps.marketData.board();
      return await marketBoardJson(deps.marketData, board, currency, origin);
    });

    scope.get('/dashboard/api/market/history', async (request, reply) => {
      const origin = baseUrl(request);
      const account = await admitted(request, reply);
      const q = request.query as RawQuery;
      const req = cryptoRequest({ coin: queryValue(q, 'coin'), currency: queryValue(q, 'currency'), range: queryValue(q, 'range'), interval: queryValue(q, 'interval') }, account.plan, deps.catalog, origin);
      if (req.coins.length !== 1) throw new QuotesError('COINS_TOO_MANY', { limit: 1 });
      // Without a range the chart shows a month; the key is rebuilt for that history.
      const history = req.history ?? cryptoRequest({ coin: req.coins[0], range: '1mo' }, account.plan, deps.catalog, origin).history;
      const result = await deps.quotes.quote(history === req.history ? req : { ...req, history, key: requestKey({ coins: req.coins, currency: req.currency, history }, account.plan) });
      const coin = (JSON.parse(result.coinsJson) as Array<Record<string, unknown>>)[0]!;
      return { coin, plan: { ranges: account.plan.ranges, intervals: account.plan.intervals } };
    });

    scope.get('/dashboard/api/market/stream', async (request, reply) => {
      const origin = baseUrl(request);
      const account = await sessionAccount(request);
      // The market page's stream follows the page's rows (up to MARKET_PAGE_ROWS), as the board it
      // came with is one request for every coin; it is still one stream, charged as any.
      const page = { ...account, plan: { ...account.plan, maxCoinsPerRequest: Math.max(account.plan.maxCoinsPerRequest, MARKET_PAGE_ROWS) } };
      await openStream(request, reply, page, { hub: deps.hub, limiters: deps.limiters, catalog: deps.catalog, publicBaseUrl: deps.publicBaseUrl }, origin);
    });
    done();
  });
}
