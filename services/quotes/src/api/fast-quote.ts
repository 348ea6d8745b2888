import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Account, AccountService } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import type { Clock } from '../clock.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import type { Plan } from '../accounts/plans.js';
import type { Origin } from '../origin.js';
import type { CryptoRequest, CryptoResult, QuoteService } from '../service/quote-service.js';
import type { AccessLog } from './access-log.js';
import { admitAll } from './admission.js';
import { mayCompress } from './compression.js';
import { errorAnswer, quoteAnswer, writeAnswer, type ErrorLog } from './answers.js';
import { authorize, tokenOf } from './authenticator.js';
import { cryptoRequest, type RawQuery } from './crypto-query.js';
import { parseQueryString } from '../http/query-string.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface FastQuoteDeps {
  /** Only the caches are asked: a miss leaves the request to the route. */
  accounts: Pick<AccountService, 'cachedAccount'>;
  quotes: Pick<QuoteService, 'cachedQuote'>;
  limiters: readonly RequestLimiter[];
  catalog: CoinCatalog;
  clock: Clock;
  /**
   * Origin for icon URLs as the route computes it (origin.ts), or undefined when only the
   * framework can (proxy headers) or the Host is not acceptable (the route answers 400).
   */
  baseUrl: (req: IncomingMessage) => Origin | undefined;
  /** Headers every response carries (name, value pairs), as the onRequest hook sets them. */
  commonHeaders: readonly string[];
  log: ErrorLog;
  /**
   * fastify's access lines and request ids, when access logging is on (QUOTES_LOG_LEVEL info or
   * below); `clientIp` is fastify's `request.ip`, or undefined when only fastify can derive it
   * (X-Forwarded-For behind a trusted proxy): such requests are left to fastify.
   */
  access?: { log: AccessLog; requestId: () => string; clientIp: (req: IncomingMessage) => string | undefined } | undefined;
  /** QUOTES_COMPRESSION_MIN_BYTES when compression is on: answers fastify would compress are left to it. */
  compressMinBytes?: number | undefined;
}

/** Bytes of the quote body around the coins (`{"coins":`, `requestedAt`, `took` up to 10 digits). */
const ENVELOPE_MAX = 70;

/** Requests answered here: with the quote, or with an error (a limiter's refusal, a failure). */
export interface FastQuoteCounts {
  served: number;
  refused: number;
}

const PREFIX = '/api/v2/crypto?';

/** One remembered URL: its query, and the quote request it gave for a plan and origin (never modified). */
interface ParsedUrl {
  query: RawQuery;
  plan: Plan;
  baseUrl: Origin;
  request: CryptoRequest;
}
const MEMO_URL_MAX = 512;
const MEMO_ENTRIES = 256;

/**
 * The hot request of the API, a cached quote for a known token, answered straight on node's
 * response object: measured at about a third of the CPU of the same request through fastify's
 * per-request pipeline (Request/Reply objects, hooks, async handler, header bookkeeping).
 *
 * A wrapper of the route's own steps (tokenOf/authorize, cryptoRequest, admitAll, quoteAnswer
 * or errorAnswer) that only puts two cache lookups in front: the account cache instead of the
 * token store, the quote cache instead of the quote service. It takes a request only when both
 * hit, and decides that before anything counts the request: a GET of /api/v2/crypto without a
 * body or If-None-Match, by a token the account cache holds with a crypto plan, with valid
 * parameters, whose answer is cached and needs no refresh. Everything else (other errors, 304s,
 * history not yet cached, HEAD, unknown tokens, proxy-derived URLs) goes to fastify untouched.
 * Once taken, the request is answered here, refusals included, so it is counted once.
 */
export class FastQuotePath {
  /** Turned off when the server starts closing, so fastify answers the 503s. */
  enabled = true;
  readonly counts: FastQuoteCounts = { served: 0, refused: 0 };
  /**
   * The parsed query and quote request of recent URLs (see `remember`): `cryptoRequest` depends
   * only on the query, the plan, the catalog (fixed) and the origin, and cost about a tenth of the
   * cached quote's CPU when parsed again for every request of a client polling the same URL.
   */
  private readonly parsed = new Map<string, ParsedUrl>();
  constructor(private readonly deps: FastQuoteDeps) {}

  /** Bounded: URLs up to MEMO_URL_MAX characters, MEMO_ENTRIES of them (all dropped when full). */
  private remember(url: string, entry: ParsedUrl): void {
    if (url.length > MEMO_URL_MAX) return;
    if (this.parsed.size >= MEMO_ENTRIES && !this.parsed.has(url)) this.parsed.clear();
    this.parsed.set(url, entry);
  }

  /** True when this request is answered here; false leaves it to the caller (fastify). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.enabled || req.method !== 'GET') return false;
    const url = req.url;
    if (url === undefined || !url.startsWith(PREFIX) || url.includes('#')) return false;
    const h = req.headers;
    if (h['if-none-match'] !== undefined || h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false;
    const startedAt = performance.now();
    const memo = this.parsed.get(url);
    const query = memo?.query ?? parseQueryString(url.slice(PREFIX.length));
    const d = this.deps;
    const cached = d.accounts.cachedAccount(tokenOf(h, query));
    if (cached === undefined) return false;
    const baseUrl = d.baseUrl(req);
    if (baseUrl === undefined) return false;
    let account: Account;
    let result: CryptoResult | undefined;
    try {
      account = authorize(cached);
      let request: CryptoRequest;
      if (memo !== undefined && memo.plan === account.plan && memo.baseUrl === baseUrl) request = memo.request;
      else {
        request = cryptoRequest(query, account.plan, d.catalog, baseUrl);
        this.remember(url, { query, plan: account.plan, baseUrl, request });
      }
      result = d.quotes.cachedQuote(request);
    } catch {
      return false; // 403, invalid parameters: the route reports them, after counting the request
    }
    if (result === undefined) return false;
    // Compressed answers are fastify's (the plugin): measured, the compression costs far more
    // than the pipeline the fast path saves (docs/quotes.md, "Compression").
    const ae = h['accept-encoding'];
    if (ae !== undefined && mayCompress(ae, (result.coinsBytes ?? Buffer.byteLength(result.coinsJson)) + ENVELOPE_MAX, d.compressMinBytes)) return false;
    let reqId: string | undefined;
    const access = d.access;
    if (access !== undefined) {
      const ip = access.clientIp(req);
      if (ip === undefined) return false;
      reqId = access.requestId();
      access.log.incoming(reqId, req, ip);
    }
    const headers = d.commonHeaders.slice();
    const pending = admitAll(account, d.limiters, headers);
    // Limiters that decide at once (the monthly quota with its count in memory) keep the whole
    // request synchronous; otherwise the answer waits for them.
    if (pending === undefined) this.respond(res, result, startedAt, headers, reqId);
    else {
      pending.then(
        () => this.respond(res, result, startedAt, headers, reqId),
        (error: unknown) => this.refuse(res, headers, error, startedAt, reqId),
      );
    }
    return true;
  }

  private respond(res: ServerResponse, result: CryptoResult, startedAt: number, headers: string[], reqId: string | undefined): void {
    const admitted = headers.length;
    try {
      const took = Math.max(0, Math.round(performance.now() - startedAt));
      writeAnswer(res, quoteAnswer(result, undefined, this.deps.clock.now(), took, headers));
      this.counts.served++;
    } catch (error) {
      if (res.headersSent) {
        this.deps.log.error({ err: error }, 'fast path failed after the response started');
        res.destroy();
        return;
      }
      headers.length = admitted;
      this.refuse(res, headers, error, startedAt, reqId);
      return;
    }
    if (reqId !== undefined) this.deps.access?.log.completed(reqId, res.statusCode, performance.now() - startedAt);
  }

  /** Refused (429/402/503) or failed: the error answer with the limiters' headers, as the route gives it. */
  private refuse(res: ServerResponse, headers: string[], error: unknown, startedAt: number, reqId: string | undefined): void {
    this.counts.refused++;
    writeAnswer(res, errorAnswer(error, res.req.headers['accept-language'], this.deps.log, headers));
    if (reqId !== undefined) this.deps.access?.log.completed(reqId, res.statusCode, performance.now() - startedAt);
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
    if (!fast.handle(req, res)) full(req, res);
  });
  return true;
}
