import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Authenticate } from './authenticator.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import type { CryptoResult, QuoteService, StreamedCryptoResult } from '../service/quote-service.js';
import { cacheableAnswer, quoteAnswer, sendAnswer } from './answers.js';
import { cryptoRequest, queryValue, type RawQuery } from './crypto-query.js';
import { requestOrigin, type Origin } from '../origin.js';

export interface CryptoRoutesDeps {
  quotes: QuoteService;
  catalog: CoinCatalog;
  clock: Clock;
  auth: Authenticate;
  publicBaseUrl: Origin | undefined;
}

const ALLOW = 'GET, HEAD, OPTIONS';
const AVAILABLE_MAX_AGE = 3600;

function refuseMethod(): never {
  throw new QuotesError('METHOD_NOT_ALLOWED', { allow: ALLOW });
}

/**
 * A history answer: 304 when If-None-Match names its ETag, else the headers, then the body as
 * it is produced (chunked transfer, back-pressured by the socket). `took` is the whole time,
 * written last.
 */
function sendStreamed(reply: FastifyReply, result: StreamedCryptoResult, ifNoneMatch: string | undefined, now: number, elapsedMs: () => number, isHead: boolean): FastifyReply {
  const head = cacheableAnswer('', result.etag, result.maxAgeSeconds, ifNoneMatch);
  if (head.status === 304) {
    result.release();
    return sendAnswer(reply, head);
  }
  const h = head.headers;
  for (let i = 0; i < h.length; i += 2) reply.header(h[i]!, h[i + 1]);
  // HEAD: the same headers (chunked, no length) without producing a body nobody reads.
  if (isHead) {
    result.release();
    return reply.code(200).send(Readable.from([], { objectMode: false }));
  }
  const requestedAt = new Date(now).toISOString();
  async function* body(): AsyncGenerator<string> {
    yield '{"coins":';
    yield* result.coinsChunks();
    yield `,"requestedAt":"${requestedAt}","took":${Math.max(0, Math.round(elapsedMs()))}}`;
  }
  return reply.code(200).send(Readable.from(body(), { objectMode: false, highWaterMark: STREAM_HIGH_WATER }));
}

/** Bytes buffered ahead of the socket per streamed answer. */
const STREAM_HIGH_WATER = 64 * 1024;

/** GET /api/v2/crypto and /api/v2/crypto/available, brapi-compatible. */
export function registerCryptoRoutes(app: FastifyInstance, deps: CryptoRoutesDeps): void {
  app.get('/api/v2/crypto', async (request, reply) => {
    // A Host that cannot be an origin is refused before the request is counted.
    const origin = requestOrigin(deps.publicBaseUrl, request.protocol, request.host);
    const account = await deps.auth(request, reply);
    const req = cryptoRequest(request.query as RawQuery, account.plan, deps.catalog, origin);
    let result: CryptoResult;
    if (req.history !== undefined) {
      const streamed = await deps.quotes.historyQuote(req);
      // Its production slot is freed when the response is over: written, 304, or the client gone.
      reply.raw.once('close', () => streamed.release());
      // Small answers already made for this snapshot are sent whole, as the fast path sends them.
      if (streamed.coinsJson === undefined) return sendStreamed(reply, streamed, request.headers['if-none-match'], deps.clock.now(), () => reply.elapsedTime, request.method === 'HEAD');
      result = { coinsJson: streamed.coinsJson, etag: streamed.etag, maxAgeSeconds: streamed.maxAgeSeconds };
    } else result = await deps.quotes.quote(req);
    const took = Math.max(0, Math.round(reply.elapsedTime));
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
