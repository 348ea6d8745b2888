import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticate } from './authenticator.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import type { QuoteService } from '../service/quote-service.js';
import { cacheableAnswer, quoteAnswer, sendAnswer } from './answers.js';
import { cryptoRequest, queryValue, type RawQuery } from './crypto-query.js';
import './request-context.js';

export interface CryptoRoutesDeps {
  quotes: QuoteService;
  catalog: CoinCatalog;
  clock: Clock;
  auth: Authenticate;
  publicBaseUrl: string | undefined;
}

const ALLOW = 'GET, HEAD, OPTIONS';
const AVAILABLE_MAX_AGE = 3600;

function refuseMethod(): never {
  throw new QuotesError('METHOD_NOT_ALLOWED', { allow: ALLOW });
}

/** GET /api/v2/crypto and /api/v2/crypto/available, brapi-compatible. */
export function registerCryptoRoutes(app: FastifyInstance, deps: CryptoRoutesDeps): void {
  const baseUrl = (request: FastifyRequest): string => deps.publicBaseUrl ?? `${request.protocol}://${request.host}`;

  app.get('/api/v2/crypto', async (request, reply) => {
    await deps.auth(request, reply);
    const account = request.account;
    if (account === null) throw new QuotesError('TOKEN_INVALID');
    const result = await deps.quotes.quote(cryptoRequest(request.query as RawQuery, account.plan, deps.catalog, baseUrl(request)));
    const took = Math.max(0, Math.round(performance.now() - request.startedAt));
    return sendAnswer(reply, quoteAnswer(result, request.headers['if-none-match'], deps.clock.now(), took));
  });

  app.get('/api/v2/crypto/available', async (request, reply) => {
    await deps.auth(request, reply);
    const coins = deps.catalog.search(queryValue(request.query as RawQuery, 'search')?.trim());
    if (coins.length === 0) throw new QuotesError('SEARCH_NO_MATCH');
    const body = JSON.stringify({ coins });
    const etag = `W/"${createHash('sha1').update(body).digest('base64url')}"`;
    return sendAnswer(reply, cacheableAnswer(body, etag, AVAILABLE_MAX_AGE, request.headers['if-none-match']));
  });

  // Refused before any body parsing, so odd content types still get a clean 405.
  for (const url of ['/api/v2/crypto', '/api/v2/crypto/available']) {
    app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url, onRequest: refuseMethod, handler: refuseMethod });
  }
}
