import { isQuotesError, QuotesError } from '../errors.js';
import type { Answer, ErrorLog } from '../api/answers.js';
import { errorResponse } from '../api/messages.js';

/**
 * CoinGecko's error bodies, chosen at the transport edge from our typed errors (errors.ts):
 * parameter and lookup failures are `{"error": "<text>"}` (400 / 404), key, plan and limit
 * failures `{"status": {"error_code": N, "error_message": "<text>"}}` (401 / 403 / 429 / 503), as
 * CoinGecko's v3 documentation shows them. Limiter headers (Retry-After, X-Quota-*, RateLimit-*)
 * are kept.
 */

const RATE_LIMIT_TEXT = "You've exceeded the Rate Limit. Please upgrade your plan for higher rate limits.";
const QUOTA_TEXT = "You've exceeded the monthly request quota of your plan. Please upgrade your plan or wait for the next month.";
const MISSING_KEY_TEXT =
  'API Key Missing. Send your token as the x-cg-demo-api-key or x-cg-pro-api-key header, the x_cg_demo_api_key or x_cg_pro_api_key query parameter, Authorization: Bearer, or ?token=.';
const INVALID_KEY_TEXT = 'Invalid API Key. Please check your token.';

interface CgBody {
  status: number;
  body: unknown;
}

const errorBody = (status: number, error: string): CgBody => ({ status, body: { error } });
const statusBody = (status: number, code: number, message: string): CgBody => ({ status, body: { status: { error_code: code, error_message: message } } });

function cgBody(err: QuotesError, englishText: string): CgBody {
  const d = err.details;
  switch (err.code) {
    case 'TOKEN_INVALID':
      return d.reason === 'missing' ? statusBody(401, 10002, MISSING_KEY_TEXT) : statusBody(401, 10002, INVALID_KEY_TEXT);
    case 'PLAN_NO_CRYPTO':
      return statusBody(403, 10005, 'Your plan does not include the cryptocurrency API. Please upgrade your plan.');
    case 'RATE_LIMITED':
      return statusBody(429, 429, RATE_LIMIT_TEXT);
    case 'QUOTA_EXHAUSTED':
      return statusBody(429, 429, QUOTA_TEXT);
    case 'RATE_LIMIT_UNAVAILABLE':
      return statusBody(503, 503, englishText);
    case 'COIN_UNKNOWN':
      return errorBody(404, 'coin not found');
    case 'CURRENCY_INVALID':
      return errorBody(400, 'invalid vs_currency');
    case 'QUOTE_UNAVAILABLE':
      return statusBody(503, 503, englishText);
    case 'EXCHANGE_UNKNOWN':
      return errorBody(404, 'exchange not found');
    case 'HISTORY_BEYOND_PLAN':
      // CoinGecko's answer to a date beyond the key's history access (401, error code 10012).
      return { status: 401, body: { error: { status: { error_code: 10012, error_message: `Your request exceeds the allowed time range. Your plan reaches ${d.limit ?? 0} days of history.` } } } };
    case 'ROUTE_NOT_FOUND':
      return errorBody(404, 'Incorrect path. See /docs for the CoinGecko-compatible endpoints.');
    case 'METHOD_NOT_ALLOWED':
      return errorBody(405, 'Method not allowed');
    case 'BAD_REQUEST':
      return errorBody(400, d.reason ?? 'Bad request');
    case 'INTERNAL':
      return statusBody(500, 500, englishText);
    default:
      return errorBody(400, englishText);
  }
}

/** The one way a /api/v3 failure becomes an answer; `headers` are those already decided (limiters'). */
export function cgErrorAnswer(err: unknown, log: ErrorLog, headers: string[] = []): Answer {
  let failure: QuotesError;
  if (isQuotesError(err)) failure = err;
  else {
    const code = (err as { statusCode?: unknown } | undefined)?.statusCode;
    if (typeof code === 'number' && code >= 400 && code < 500) failure = new QuotesError('BAD_REQUEST');
    else {
      log.error({ err }, 'request failed');
      failure = new QuotesError('INTERNAL');
    }
  }
  const res = errorResponse(failure.code, failure.details, 'en');
  const cg = cgBody(failure, String(res.body.message));
  const out = headers;
  for (const k in res.headers) {
    const i = out.indexOf(k);
    if (i >= 0 && i % 2 === 0) out[i + 1] = res.headers[k]!;
    else out.push(k, res.headers[k]!);
  }
  out.push('cache-control', 'no-store', 'content-type', 'application/json; charset=utf-8');
  return { status: cg.status, headers: out, body: JSON.stringify(cg.body) };
}

/** A 400 with CoinGecko's `{"error": text}` body. */
export function badParam(text: string): QuotesError {
  return new QuotesError('BAD_REQUEST', { reason: text });
}
