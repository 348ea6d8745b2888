import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { FxHistory, RateOn } from '../history/fx-history.js';
import type { MarketSnapshots } from '../market/market-snapshots.js';
import { cacheableAnswer, sendAnswer } from './answers.js';
import type { Authenticate } from './authenticator.js';
import { queryValue, type RawQuery } from './crypto-query.js';
import { availablePairs, pairQuote, parsePairs } from './currency-quotes.js';

export interface CurrencyRoutesDeps {
  snapshots: MarketSnapshots;
  fxHistory: FxHistory;
  /** Kind of the FX source (`ptax+ecb`, `simulated`, ...), named in each record's `source`. */
  fxKind: string;
  clock: Clock;
  auth: Authenticate;
  /** FX rates older than this (ms) are not served (503). */
  staleMs: number;
  refreshMs: number;
}

const ALLOW = 'GET, HEAD, OPTIONS';
const etagOf = (json: string): string => `W/"${createHash('sha1').update(json).digest('base64url')}"`;

function refuseMethod(): never {
  throw new QuotesError('METHOD_NOT_ALLOWED', { allow: ALLOW });
}

/**
 * brapi's fiat currency endpoints, with the same tokens, plans, limits and error shapes as
 * /api/v2/crypto (docs/quotes.md, "GET /api/v2/currency"):
 *   GET /api/v2/currency?currency=USD-BRL,EUR-BRL   quotes of up to the plan's items per request
 *   GET /api/v2/currency/available?search=          the pairs that can be asked for
 */
export function registerCurrencyRoutes(app: FastifyInstance, deps: CurrencyRoutesDeps): void {
  const freshFx = async (): Promise<{ fx: Awaited<ReturnType<MarketSnapshots['current']>>['fx']; maxAge: number }> => {
    const snap = await deps.snapshots.current();
    const now = deps.clock.now();
    if (snap.fx.rates.size === 0 || now - snap.fx.time > deps.staleMs) {
      throw new QuotesError('QUOTE_UNAVAILABLE', { coins: ['FX rates'], ...(snap.fx.time > 0 ? { ageSeconds: Math.floor((now - snap.fx.time) / 1000), limitSeconds: Math.floor(deps.staleMs / 1000) } : {}) });
    }
    return { fx: snap.fx, maxAge: Math.max(0, Math.ceil((snap.fetchedAt + deps.refreshMs - now) / 1000)) };
  };

  app.get('/api/v2/currency', async (request, reply) => {
    const account = await deps.auth(request, reply);
    const { fx, maxAge } = await freshFx();
    const pairs = parsePairs(queryValue(request.query as RawQuery, 'currency'), fx, account.plan.maxCoinsPerRequest);
    // The daily fixings behind each change (loaded once per currency and kept by FxHistory).
    const lookups = new Map<string, RateOn>();
    for (const c of new Set(pairs.flatMap((p) => [p.from, p.to]))) if (c !== 'USD') lookups.set(c, await deps.fxHistory.lookup(c));
    const fixingOn = (c: string, day: number): number | null => lookups.get(c)?.(day) ?? null;
    const json = JSON.stringify(pairs.map((p) => pairQuote(fx, p, deps.fxKind, fixingOn)));
    const took = Math.max(0, Math.round(reply.elapsedTime));
    const body = `{"currency":${json},"requestedAt":"${new Date(deps.clock.now()).toISOString()}","took":${took}}`;
    return sendAnswer(reply, cacheableAnswer(body, etagOf(json), maxAge, request.headers['if-none-match']));
  });

  // The unfiltered list (every pair, ~90 KB with all currencies) is built once per FX snapshot.
  let whole: { fx: object; body: string; etag: string } | undefined;
  app.get('/api/v2/currency/available', async (request, reply) => {
    await deps.auth(request, reply);
    const { fx, maxAge } = await freshFx();
    const search = queryValue(request.query as RawQuery, 'search')?.trim();
    let body: string;
    let etag: string;
    if (search === undefined || search === '') {
      if (whole?.fx !== fx) {
        const text = JSON.stringify({ currencies: availablePairs(fx, undefined) });
        whole = { fx, body: text, etag: etagOf(text) };
      }
      ({ body, etag } = whole);
    } else {
      const currencies = availablePairs(fx, search);
      if (currencies.length === 0) throw new QuotesError('CURRENCY_NO_MATCH');
      body = JSON.stringify({ currencies });
      etag = etagOf(body);
    }
    return sendAnswer(reply, cacheableAnswer(body, etag, maxAge, request.headers['if-none-match']));
  });

  // Refused before any body parsing, so odd content types still get a clean 405.
  for (const url of ['/api/v2/currency', '/api/v2/currency/available']) {
    app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url, onRequest: refuseMethod, handler: refuseMethod });
  }
}
