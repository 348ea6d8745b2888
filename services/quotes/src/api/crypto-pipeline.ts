import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Account, AccountService } from '../accounts/account-service.js';
import type { Plan } from '../accounts/plans.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import type { Clock } from '../clock.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { isPromise, type MaybePromise } from '../maybe-promise.js';
import { requestOrigin, type Origin } from '../origin.js';
import type { CryptoRequest, CryptoResult, QuoteService, StreamedCryptoResult } from '../service/quote-service.js';
import { parseQueryString } from '../http/query-string.js';
import { admitAll } from './admission.js';
import { cacheableAnswer, errorAnswer, quoteAnswer, type Answer, type AnswerWriter, type ErrorLog } from './answers.js';
import { authorize, tokenOf } from './authenticator.js';
import { cryptoRequest, type RawQuery } from './crypto-query.js';

/** What the pipeline needs of a request, whichever server object received it. */
export interface CryptoCall {
  /**
   * The query: as received after the `?` (parsed here, and remembered by its text), or as the
   * server's router already parsed it (fastify splits at the first `?`, `;` or `#`).
   */
  query: string | RawQuery;
  headers: IncomingHttpHeaders;
  /** The request's scheme and Host as the server derives them (behind a trusted proxy, fastify from X-Forwarded-*). */
  scheme: string;
  host: string | undefined;
  /** HEAD: the same headers, no body. */
  head: boolean;
  /** When the request arrived, on `performance.now()`'s clock (`took`). */
  startedAt: number;
}

export interface CryptoPipelineDeps {
  accounts: Pick<AccountService, 'authenticate'>;
  limiters: readonly RequestLimiter[];
  quotes: Pick<QuoteService, 'quote' | 'historyQuote'>;
  catalog: CoinCatalog;
  clock: Clock;
  publicBaseUrl: Origin | undefined;
  /** Headers every response carries (name, value pairs): the data source and CORS. */
  commonHeaders: readonly string[];
  writer: AnswerWriter;
  log: ErrorLog;
}

/** `took`: whole milliseconds since the request arrived. */
function tookMs(call: CryptoCall): number {
  return Math.max(0, Math.round(performance.now() - call.startedAt));
}

/** One remembered query: the quote request it gave for a plan and origin (never modified). */
interface ParsedQuery {
  /** The query's text, when it came as text (the memo's key). */
  search: string | undefined;
  query: RawQuery;
  plan: Plan | undefined;
  origin: Origin | undefined;
  request: CryptoRequest | undefined;
}
const MEMO_QUERY_MAX = 512;
const MEMO_ENTRIES = 256;

/**
 * `GET /api/v2/crypto`, once: every server object that receives the request (fastify's route, or
 * the pre-router in front of it, api/fast-quote.ts) hands it here, and the answer is written by
 * the one writer (AnswerWriter). The steps, in order:
 *
 *   1. origin       PUBLIC_BASE_URL or the request's scheme and Host (400 HOST_INVALID, not counted)
 *   2. account      the token (Authorization: Bearer, else `token`) -> account (401), plan with crypto (403)
 *   3. limiters     every RequestLimiter in order (429 burst, 402 monthly quota), their headers kept
 *   4. parameters   the query for the plan (417/400; counted, as brapi counts them)
 *   5. quote        the cached quote, or one built from the snapshot, or the streamed history
 *   6. answer       200 with the body, 304 on If-None-Match, or the error answer with the headers so far
 *
 * Each step may answer at once or with a promise (MaybePromise): a token in the account cache, a
 * count in memory and a cached quote keep the whole request synchronous; any step that must wait
 * (the token store, a remote limiter, a market refresh, history) makes the rest wait for it. A
 * cached answer is this pipeline finding every step already satisfied, not a second implementation.
 */
export class CryptoPipeline {
  /**
   * The parsed query and quote request of recent queries (see `requestFor`): a client polling one
   * URL sends the same query every time, and parsing it again cost about a tenth of a cached quote.
   */
  private readonly parsed = new Map<string, ParsedQuery>();
  constructor(private readonly deps: CryptoPipelineDeps) {}

  /** Query texts remembered now (at most MEMO_ENTRIES). */
  get rememberedQueries(): number {
    return this.parsed.size;
  }

  /** Answers `call` on `res`; settles when the answer is written (never rejects: failures are answers too). */
  serve(call: CryptoCall, res: ServerResponse): MaybePromise<void> {
    const headers = this.deps.commonHeaders.slice();
    let answer: MaybePromise<Answer>;
    try {
      answer = this.answer(call, headers);
    } catch (err) {
      answer = this.failure(err, call, headers);
    }
    if (isPromise(answer)) return answer.then((a) => this.write(res, a, call), (err: unknown) => this.write(res, this.failure(err, call, headers), call));
    return this.write(res, answer, call);
  }

  /** Writes through the one writer; a writer failure before the head left is answered 500, after it the connection is closed. */
  private write(res: ServerResponse, answer: Answer, call: CryptoCall): MaybePromise<void> {
    try {
      return this.deps.writer.write(res, answer, call.headers, call.head);
    } catch (err) {
      if (res.headersSent) {
        this.deps.log.error({ err }, 'writing an answer failed after it started');
        res.destroy();
        return;
      }
      return this.deps.writer.write(res, errorAnswer(err, call.headers['accept-language'], this.deps.log, this.deps.commonHeaders.slice()), call.headers, call.head);
    }
  }

  /** The error answer, over the headers decided so far (the limiters', refused or not). */
  private failure(err: unknown, call: CryptoCall, headers: string[]): Answer {
    return errorAnswer(err, call.headers['accept-language'], this.deps.log, headers);
  }

  // The steps, each a method taking what the earlier ones decided: called at once when the step
  // before answered at once, from the promise's callback otherwise (no closure on the direct path).

  /** Steps 1 and 2: origin, then the account. */
  private answer(call: CryptoCall, headers: string[]): MaybePromise<Answer> {
    const origin = requestOrigin(this.deps.publicBaseUrl, call.scheme, call.host);
    const parsed = this.parse(call.query);
    const found = this.deps.accounts.authenticate(tokenOf(call.headers, parsed.query));
    if (isPromise(found)) return found.then((a) => this.admit(call, headers, parsed, origin, a));
    return this.admit(call, headers, parsed, origin, found);
  }

  /** Step 3, the limiters, for an authorized account; then the parameters. */
  private admit(call: CryptoCall, headers: string[], parsed: ParsedQuery, origin: Origin, found: Account | undefined): MaybePromise<Answer> {
    const account = authorize(found);
    const admitted = admitAll(account, this.deps.limiters, headers);
    if (admitted !== undefined) return admitted.then(() => this.quote(call, headers, this.requestFor(parsed, account, origin)));
    return this.quote(call, headers, this.requestFor(parsed, account, origin));
  }

  /** Steps 5 and 6: the quote (or streamed history), then the answer. */
  private quote(call: CryptoCall, headers: string[], request: CryptoRequest): MaybePromise<Answer> {
    if (request.history === undefined) {
      const result = this.deps.quotes.quote(request);
      if (isPromise(result)) return result.then((r) => this.quoteAnswer(call, headers, r));
      return this.quoteAnswer(call, headers, result);
    }
    const streamed = this.deps.quotes.historyQuote(request);
    if (isPromise(streamed)) return streamed.then((r) => this.historyAnswer(r, call, headers));
    return this.historyAnswer(streamed, call, headers);
  }

  private quoteAnswer(call: CryptoCall, headers: string[], result: CryptoResult): Answer {
    return quoteAnswer(result, call.headers['if-none-match'], this.deps.clock.now(), tookMs(call), headers);
  }

  /** The query, remembered with what it gave when it came as text (bounded: up to MEMO_QUERY_MAX characters, MEMO_ENTRIES of them, all dropped when full). */
  private parse(search: string | RawQuery): ParsedQuery {
    if (typeof search !== 'string') return { search: undefined, query: search, plan: undefined, origin: undefined, request: undefined };
    let memo = this.parsed.get(search);
    if (memo === undefined) {
      memo = { search, query: parseQueryString(search), plan: undefined, origin: undefined, request: undefined };
      if (search.length <= MEMO_QUERY_MAX) {
        if (this.parsed.size >= MEMO_ENTRIES) this.parsed.clear();
        this.parsed.set(search, memo);
      }
    }
    return memo;
  }

  /** The quote request of a parsed query for the account's plan and the origin (its key says which cache entry answers it). */
  private requestFor(parsed: ParsedQuery, account: Account, origin: Origin): CryptoRequest {
    if (parsed.request !== undefined && parsed.plan === account.plan && parsed.origin === origin) return parsed.request;
    const request = cryptoRequest(parsed.query, account.plan, this.deps.catalog, origin);
    // A new entry rather than a change to one a concurrent request may be reading.
    const search = parsed.search;
    if (search !== undefined && this.parsed.get(search) === parsed) this.parsed.set(search, { search, query: parsed.query, plan: account.plan, origin, request });
    return request;
  }

  /**
   * A history answer: a small one already made for this snapshot whole (as a quote), else the
   * headers and then the body as it is produced (back-pressured by the socket), `took` last. Its
   * production slot is released when the response is over (written, 304, HEAD or the client gone).
   */
  private historyAnswer(streamed: StreamedCryptoResult, call: CryptoCall, headers: string[]): Answer {
    const d = this.deps;
    const ifNoneMatch = call.headers['if-none-match'];
    if (streamed.coinsJson !== undefined) {
      streamed.release();
      return quoteAnswer({ coinsJson: streamed.coinsJson, etag: streamed.etag, maxAgeSeconds: streamed.maxAgeSeconds }, ifNoneMatch, d.clock.now(), tookMs(call), headers);
    }
    const answer = cacheableAnswer('', streamed.etag, streamed.maxAgeSeconds, ifNoneMatch, headers);
    if (answer.status === 304) {
      streamed.release();
      return answer;
    }
    const requestedAt = new Date(d.clock.now()).toISOString();
    async function* body(): AsyncGenerator<string> {
      yield '{"coins":';
      yield* streamed.coinsChunks();
      yield `,"requestedAt":"${requestedAt}","took":${tookMs(call)}}`;
    }
    return { status: 200, headers: answer.headers, body: undefined, stream: { chunks: body, release: () => streamed.release() } };
  }
}
