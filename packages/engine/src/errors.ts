// The service's error catalogue (stable codes, one place): callers branch on `code`; transports map codes
// to gRPC statuses and HTTP responses at the boundary only.

export type ErrorCode =
  /** Bad request content: empty domain, empty descriptors, bad override unit... (stat service_error). */
  | 'invalid_request'
  /** No rule set loaded yet (stat service_error). */
  | 'no_config'
  /** The counter store failed or timed out (stat redis_error). */
  | 'store_unavailable'
  /** Invalid rule files or resources. */
  | 'config_invalid'
  /** Invalid settings at start-up. */
  | 'settings_invalid'
  /** A bound of the service was reached (RLQS streams, buckets per stream or domain): RESOURCE_EXHAUSTED. */
  | 'resource_exhausted';

export class RateLimitError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'RateLimitError';
  }
}

export function isRateLimitError(err: unknown): err is RateLimitError {
  return err instanceof RateLimitError;
}

/** A rule-file or xDS resource problem; the message is `<source name>: <problem>` as upstream prints it. */
export class ConfigError extends RateLimitError {
  constructor(message: string) {
    super('config_invalid', message);
    this.name = 'ConfigError';
  }
}

/** The counter store could not answer (connect refused, timeout, server error). */
export class StoreError extends RateLimitError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('store_unavailable', message, options);
    this.name = 'StoreError';
  }
}
