/**
 * The catalogue of failures the quotes service reports. Callers branch on `code`; the HTTP
 * status and the user-facing text are chosen only at the transport boundary (api/messages.ts).
 */
export type ErrorCode =
  | 'TOKEN_INVALID'
  | 'PLAN_NO_CRYPTO'
  | 'QUOTA_EXHAUSTED'
  | 'RATE_LIMITED'
  | 'STREAM_LIMIT'
  | 'STREAMS_FULL'
  | 'RATE_LIMIT_UNAVAILABLE'
  | 'LOGIN_FAILED'
  | 'LOGIN_THROTTLED'
  | 'CSRF_REJECTED'
  | 'SIGNED_OUT'
  | 'EMAIL_TAKEN'
  | 'SIGNUP_INVALID'
  | 'COIN_MISSING'
  | 'COIN_UNKNOWN'
  | 'COINS_TOO_MANY'
  | 'CURRENCY_INVALID'
  | 'RANGE_INVALID'
  | 'INTERVAL_INVALID'
  | 'DATES_INVALID'
  | 'HISTORY_TOO_LARGE'
  | 'HISTORY_BUSY'
  | 'SEARCH_NO_MATCH'
  | 'CURRENCY_MISSING'
  | 'CURRENCY_PAIR_UNKNOWN'
  | 'CURRENCY_PAIRS_TOO_MANY'
  | 'CURRENCY_NO_MATCH'
  | 'EXCHANGE_UNKNOWN'
  | 'HISTORY_BEYOND_PLAN'
  | 'QUOTE_UNAVAILABLE'
  | 'METHOD_NOT_ALLOWED'
  | 'ROUTE_NOT_FOUND'
  | 'BAD_REQUEST'
  | 'HOST_INVALID'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'HEADERS_TOO_LARGE'
  | 'REQUEST_TIMEOUT'
  | 'SHUTTING_DOWN'
  | 'INTERNAL';

export interface ErrorDetails {
  /** Coins the error is about (unknown, unavailable). */
  coins?: readonly string[];
  /** Values that would have been accepted (currencies, ranges, intervals). */
  valid?: readonly string[];
  /** A numeric limit (coins per request, monthly requests). */
  limit?: number;
  /** For 429/402: seconds until the caller may retry. */
  retryAfterSeconds?: number;
  /** For 503 on stale data: how old the data is and the limit, in seconds. */
  ageSeconds?: number;
  limitSeconds?: number;
  /** For 405: the methods the path accepts. */
  allow?: string;
  /** Extra response headers (rate limit and quota headers on 429/402/503). */
  headers?: Readonly<Record<string, string>>;
  /** For HISTORY_TOO_LARGE: the candles the request asked for (coins x points per coin). */
  points?: number;
  /** For SIGNUP_INVALID: what is wrong with the submitted form; for DATES_INVALID: what is wrong with the dates. */
  reason?: string;
}

export class QuotesError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  constructor(code: ErrorCode, details: ErrorDetails = {}, message?: string) {
    super(message ?? code);
    this.name = 'QuotesError';
    this.code = code;
    this.details = details;
  }
}

export function isQuotesError(err: unknown): err is QuotesError {
  return err instanceof QuotesError;
}
