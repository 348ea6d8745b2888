import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Account, AccountService } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { admitAll } from '../api/admission.js';
import { authorize, requestToken } from '../api/authenticator.js';
import { parseCryptoQuery, type RawQuery } from '../api/crypto-query.js';
import { errorResponse, pickLanguage, type Language } from '../api/messages.js';
import { isQuotesError, QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { requestOrigin, type Origin } from '../origin.js';
import type { QuoteStreamHub } from './quote-stream-hub.js';

export const STREAM_PATH = '/api/v2/crypto/stream';

export interface StreamRoutesDeps {
  hub: QuoteStreamHub;
  accounts: AccountService;
  limiters: readonly RequestLimiter[];
  catalog: CoinCatalog;
  publicBaseUrl: Origin | undefined;
}

/** The `data` of the error event that ends a stream: brapi's error body plus its HTTP status. */
export function streamErrorData(err: unknown, lang: Language): string {
  const failure = isQuotesError(err) ? err : new QuotesError('INTERNAL');
  const res = errorResponse(failure.code, failure.details, lang);
  return JSON.stringify({ ...res.body, status: res.status });
}

function lastEventId(request: FastifyRequest): string | undefined {
  const h = request.headers['last-event-id'];
  if (typeof h === 'string' && h !== '') return h;
  // EventSource cannot set headers on the first connection; a page may pass the id it kept.
  const q = (request.query as RawQuery).lastEventId;
  return typeof q === 'string' && q !== '' ? q : undefined;
}

/**
 * Opens a live-price stream for an account already authenticated (token or dashboard session):
 * takes a stream slot (429/503 before anything is counted), counts the opening request through
 * the limiters (429 burst, 402 quota), validates `coin`/`currency` as `/api/v2/crypto` does,
 * then hands the raw response to the hub. Every later charge goes through the same limiters.
 */
export async function openStream(request: FastifyRequest, reply: FastifyReply, account: Account, deps: Omit<StreamRoutesDeps, 'accounts'>, baseUrl: Origin): Promise<void> {
  const lease = deps.hub.reserve(account.tokenId);
  try {
    const headers: string[] = [];
    try {
      await admitAll(account, deps.limiters, headers);
    } finally {
      for (let i = 0; i < headers.length; i += 2) reply.header(headers[i]!, headers[i + 1]);
    }
    const q = parseCryptoQuery(request.query as RawQuery, account.plan, deps.catalog);
    // The language, not the header: an open stream keeps no more of its request than it needs.
    const lang = pickLanguage(request.headers['accept-language']);
    // From here the response is written by the hub, not by fastify.
    const raw: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) raw[k] = v;
    reply.hijack();
    await deps.hub.open(lease, {
      res: reply.raw,
      headers: raw,
      plan: account.plan,
      coins: q.coins,
      currency: q.currency,
      baseUrl,
      lastEventId: lastEventId(request),
      charge: async () => {
        await admitAll(account, deps.limiters, []);
      },
      errorData: (err) => streamErrorData(err, lang),
    });
  } catch (err) {
    lease.release();
    if (reply.sent) {
      // Hijacked already: answer the failure on the raw response ourselves.
      const res = reply.raw;
      if (!res.headersSent && !res.destroyed) {
        const failure = isQuotesError(err) ? err : new QuotesError('INTERNAL');
        const out = errorResponse(failure.code, failure.details, pickLanguage(request.headers['accept-language']));
        res.writeHead(out.status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...out.headers });
        res.end(JSON.stringify(out.body));
      } else if (!res.destroyed) res.destroy();
      if (!isQuotesError(err)) request.log.error({ err }, 'opening a stream failed');
      return;
    }
    throw err;
  }
}

/** GET /api/v2/crypto/stream: live quotes as Server-Sent Events, authenticated like /api/v2/crypto. */
export function registerStreamRoutes(app: FastifyInstance, deps: StreamRoutesDeps): void {
  app.get(STREAM_PATH, async (request, reply) => {
    // A Host that cannot be an origin is refused before anything is counted.
    const origin = requestOrigin(deps.publicBaseUrl, request.protocol, request.host);
    const account = authorize(await deps.accounts.authenticate(requestToken(request)));
    await openStream(request, reply, account, deps, origin);
  });
  const refuse = (): never => {
    throw new QuotesError('METHOD_NOT_ALLOWED', { allow: 'GET, OPTIONS' });
  };
  app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url: STREAM_PATH, onRequest: refuse, handler: refuse });
}
