import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticate } from './authenticator.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import type { QuoteService } from '../service/quote-service.js';
import { parseCryptoQuery, queryValue, type RawQuery } from './crypto-query.js';
import { etagMatches } from './http-cache.js';
import './request-context.js';

export interface CryptoRoutesDeps {
  quotes: QuoteService;
  catalog: CoinCatalog;
  clock: Clock;
  auth: Authenticate;
  publicBaseUrl: string | undefined;
}

const ALLOW = 'GET, HEAD, OPTIONS';
export const QUOTE_VARY = 'Authorization, Accept-Language';
export const JSON_TYPE = 'application/json; charset=utf-8';

let isoAt = NaN;
let iso = '';

/** The `/api/v2/crypto` body around the cached `coins` JSON; `took` in whole milliseconds. */
export function quoteBody(coinsJson: string, now: number, took: number): string {
  if (now !== isoAt) {
    isoAt = now;
    iso = new Date(now).toISOString();
  }
  return `{"coins":${coinsJson},"requestedAt":"${iso}","took":${took}}`;
}
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
    const parsed = parseCryptoQuery(request.query as RawQuery, account.plan, deps.catalog);
    const result = await deps.quotes.quote({ coins: parsed.coins, currency: parsed.currency, history: parsed.history, plan: account.plan, baseUrl: baseUrl(request) });
    reply.header('cache-control', `private, max-age=${result.maxAgeSeconds}`).header('etag', result.etag).header('vary', QUOTE_VARY);
    if (etagMatches(request.headers['if-none-match'], result.etag)) return reply.code(304).send();
    const took = Math.max(0, Math.round(performance.now() - request.startedAt));
    return reply.type(JSON_TYPE).send(quoteBody(result.coinsJson, deps.clock.now(), took));
  });

  app.get('/api/v2/crypto/available', async (request, reply) => {
    await deps.auth(request, reply);
    const coins = deps.catalog.search(queryValue(request.query as RawQuery, 'search')?.trim());
    if (coins.length === 0) throw new QuotesError('SEARCH_NO_MATCH');
    const body = JSON.stringify({ coins });
    const etag = `W/"${createHash('sha1').update(body).digest('base64url')}"`;
    reply.header('cache-control', `private, max-age=${AVAILABLE_MAX_AGE}`).header('etag', etag).header('vary', QUOTE_VARY);
    if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return reply.type(JSON_TYPE).send(body);
  });

  // Refused before any body parsing, so odd content types still get a clean 405.
  for (const url of ['/api/v2/crypto', '/api/v2/crypto/available']) {
    app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url, onRequest: refuseMethod, handler: refuseMethod });
  }
}
