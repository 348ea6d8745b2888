import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Account, AccountService } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import type { Clock } from '../clock.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import type { CryptoResult, QuoteService } from '../service/quote-service.js';
import { admitAll, attachAdmission } from './admission.js';
import { tokenOf } from './authenticator.js';
import { parseCryptoQuery } from './crypto-query.js';
import { JSON_TYPE, QUOTE_VARY, quoteBody } from './crypto-routes.js';
import { parseQueryString } from './query-string.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface FastQuoteDeps {
  accounts: AccountService;
  limiters: readonly RequestLimiter[];
  quotes: QuoteService;
  catalog: CoinCatalog;
  clock: Clock;
  /** Origin for icon URLs as the route computes it, or undefined when only the framework can (proxy headers). */
  baseUrl: (req: IncomingMessage) => string | undefined;
  /** Headers every response carries (name, value pairs), as the onRequest hook sets them. */
  commonHeaders: readonly string[];
  log: Logger;
}

const PREFIX = '/api/v2/crypto?';

/**
 * The hot request of the API, a cached quote for a known token, served straight on node's
 * response object: measured at about a third of the CPU of the same request through fastify's
 * per-request pipeline (Request/Reply objects, hooks, async handler, header bookkeeping).
 *
 * It only takes a request it can answer exactly as the route would, and decides that before
 * anything counts the request: a GET of /api/v2/crypto without a body or If-None-Match, by a
 * token the account cache already holds, with valid parameters, whose answer is in the quote
 * cache and needs no refresh. Everything else (errors, 304s, history not yet cached, HEAD,
 * unknown tokens, proxy-derived URLs) is handed to fastify untouched. Once taken, the limiters
 * run as in the route; a refusal is handed to fastify with the outcome attached (see
 * Admission), so error bodies, languages and headers come from the one error handler.
 */
export class FastQuotePath {
  /** Turned off when the server starts closing, so fastify answers the 503s. */
  enabled = true;
  /** Requests answered here, and requests taken here but handed to fastify (refusals, failures). */
  readonly counts = { served: 0, handedOver: 0 };
  constructor(private readonly deps: FastQuoteDeps) {}

  /** True when this request is served (or handed over) here; false leaves it to `fallback`'s caller. */
  handle(req: IncomingMessage, res: ServerResponse, fallback: RequestHandler): boolean {
    if (!this.enabled || req.method !== 'GET') return false;
    const url = req.url;
    if (url === undefined || !url.startsWith(PREFIX) || url.includes('#')) return false;
    const h = req.headers;
    if (h['if-none-match'] !== undefined || h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false;
    const startedAt = performance.now();
    const query = parseQueryString(url.slice(PREFIX.length));
    const d = this.deps;
    const account = d.accounts.cachedAccount(tokenOf(h, query));
    if (account === undefined || !account.plan.crypto) return false;
    const baseUrl = d.baseUrl(req);
    if (baseUrl === undefined) return false;
    let result: CryptoResult | undefined;
    try {
      const parsed = parseCryptoQuery(query, account.plan, d.catalog);
      // Built field by field: an object spread here cost more than the rest of the check.
      result = d.quotes.cachedQuote({ coins: parsed.coins, currency: parsed.currency, history: parsed.history, plan: account.plan, baseUrl });
    } catch {
      return false; // invalid parameters: the route reports them
    }
    if (result === undefined) return false;
    const headers = d.commonHeaders.slice();
    const pending = admitAll(account, d.limiters, headers);
    // Limiters that decide at once (the monthly quota with its count in memory) keep the whole
    // request synchronous; otherwise the answer waits for them.
    if (pending === undefined) this.respond(req, res, account, result, startedAt, fallback, headers, headers.length);
    else {
      pending.then(
        () => this.respond(req, res, account, result, startedAt, fallback, headers, headers.length),
        (error: unknown) => this.handOver(req, res, account, fallback, headers, headers.length, error),
      );
    }
    return true;
  }

  private respond(req: IncomingMessage, res: ServerResponse, account: Account, result: CryptoResult, startedAt: number, fallback: RequestHandler, headers: string[], admittedEnd: number): void {
    const d = this.deps;
    try {
      headers.push('cache-control', `private, max-age=${result.maxAgeSeconds}`, 'etag', result.etag, 'vary', QUOTE_VARY, 'content-type', JSON_TYPE);
      const took = Math.max(0, Math.round(performance.now() - startedAt));
      const body = quoteBody(result.coinsJson, d.clock.now(), took);
      headers.push('content-length', String(Buffer.byteLength(body)));
      res.writeHead(200, headers);
      res.end(body);
      this.counts.served++;
    } catch (error) {
      if (res.headersSent) {
        d.log.error({ err: error }, 'fast path failed after the response started');
        res.destroy();
        return;
      }
      this.handOver(req, res, account, fallback, headers, admittedEnd, error);
    }
  }

  /** Refused (429/402) or failed: the full pipeline reports it, without counting again. */
  private handOver(req: IncomingMessage, res: ServerResponse, account: Account, fallback: RequestHandler, headers: string[], limiterEnd: number, error: unknown): void {
    const limiterHeaders = headers.slice(this.deps.commonHeaders.length, limiterEnd);
    attachAdmission(req, { account, headers: limiterHeaders, error: error instanceof Error ? error : new Error(String(error)) });
    this.counts.handedOver++;
    fallback(req, res);
  }
}

/**
 * Puts `fast` in front of the fastify request handler of `server` (fastify registers exactly
 * one 'request' listener); requests it does not take reach fastify as before.
 */
export function installFastPath(server: { listeners(event: 'request'): unknown[]; removeListener(event: 'request', l: RequestHandler): unknown; on(event: 'request', l: RequestHandler): unknown }, fast: FastQuotePath): boolean {
  const listeners = server.listeners('request');
  if (listeners.length !== 1) return false;
  const full = listeners[0] as RequestHandler;
  server.removeListener('request', full);
  server.on('request', (req, res) => {
    if (!fast.handle(req, res, full)) full(req, res);
  });
  return true;
}
