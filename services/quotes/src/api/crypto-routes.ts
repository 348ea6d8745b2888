import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Authenticate } from './authenticator.js';
import { QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { cacheableAnswer, sendAnswer } from './answers.js';
import type { CryptoPipeline } from './crypto-pipeline.js';
import { queryValue, type RawQuery } from './crypto-query.js';

export interface CryptoRoutesDeps {
  pipeline: CryptoPipeline;
  catalog: CoinCatalog;
  auth: Authenticate;
}

const ALLOW = 'GET, HEAD, OPTIONS';
const AVAILABLE_MAX_AGE = 3600;

function refuseMethod(): never {
  throw new QuotesError('METHOD_NOT_ALLOWED', { allow: ALLOW });
}

/** GET /api/v2/crypto and /api/v2/crypto/available, brapi-compatible. */
export function registerCryptoRoutes(app: FastifyInstance, deps: CryptoRoutesDeps): void {
  // The pipeline writes the answer itself (its one writer, on node's response): fastify's hooks
  // on the response (access line, metrics, spans) still run when it is written.
  app.get('/api/v2/crypto', (request, reply) => {
    reply.hijack();
    return deps.pipeline.serve({ query: request.query as RawQuery, headers: request.headers, scheme: request.protocol, host: request.host, head: request.method === 'HEAD', startedAt: performance.now() - reply.elapsedTime }, reply.raw);
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
