import type { Account } from './account-service.js';

/**
 * A check every authenticated request passes before it is served: the monthly quota here,
 * burst limits through the rate limit service later. `admit` resolves with headers to add to
 * the response, or rejects with a QuotesError (QUOTA_EXHAUSTED, RATE_LIMITED).
 */
export interface RequestLimiter {
  readonly name: string;
  admit(account: Account): Promise<Readonly<Record<string, string>>>;
  /**
   * `admit` without waiting, when the limiter can decide at once: the headers (the request is
   * counted), a synchronous throw for a refusal (nothing counted), or undefined when only
   * `admit` can decide (nothing counted either).
   */
  admitNow?(account: Account): Readonly<Record<string, string>> | undefined;
  /**
   * Headers describing the caller's standing without counting a request, added to responses
   * refused by another limiter (so a 429 still shows the monthly quota).
   */
  peek?(account: Account): Promise<Readonly<Record<string, string>>>;
}
