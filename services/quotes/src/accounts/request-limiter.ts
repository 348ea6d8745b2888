import type { MaybePromise } from '../maybe-promise.js';
import type { Account } from './account-service.js';

/**
 * A check every authenticated request passes before it is served: the monthly quota here,
 * burst limits through the rate limit service later. `admit` resolves with headers to add to
 * the response, or refuses with a QuotesError (QUOTA_EXHAUSTED, RATE_LIMITED).
 */
export interface RequestLimiter {
  readonly name: string;
  /**
   * The headers to add (the request is counted), at once when the limiter can decide without
   * waiting (a count in memory, the embedded engine), else a promise. A refusal is a throw or a
   * rejection (nothing counted).
   */
  admit(account: Account): MaybePromise<Readonly<Record<string, string>>>;
  /**
   * Headers describing the caller's standing without counting a request, added to responses
   * refused by another limiter (so a 429 still shows the monthly quota).
   */
  peek?(account: Account): Promise<Readonly<Record<string, string>>>;
}
