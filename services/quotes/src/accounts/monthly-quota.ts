import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import { isPromise, type MaybePromise } from '../maybe-promise.js';
import type { Account } from './account-service.js';
import type { UsageCounter } from './buffered-usage.js';
import type { DailyUsage } from './daily-usage.js';
import type { RequestLimiter } from './request-limiter.js';
import { monthKey, nextMonthStart } from './usage-month.js';

/** Counts every admitted request per token per UTC calendar month and refuses past the plan's quota. */
export class MonthlyQuota implements RequestLimiter {
  readonly name = 'monthly-quota';
  /** Requests refused since start (the metrics read it). */
  refused = 0;
  constructor(
    private readonly usage: UsageCounter,
    private readonly clock: Clock,
    /** Also counts admitted requests per day (the dashboard chart), when given. */
    private readonly daily?: Pick<DailyUsage, 'record'>,
  ) {}

  /** Month key and reset time change rarely; they are recomputed only when the minute changes. */
  private period = { minute: NaN, month: '', reset: 0, resetIso: '' };

  private current(now: number): { month: string; reset: number; resetIso: string } {
    const minute = Math.floor(now / 60_000);
    if (minute !== this.period.minute) {
      const reset = nextMonthStart(now);
      this.period = { minute, month: monthKey(now), reset, resetIso: new Date(reset).toISOString() };
    }
    return this.period;
  }

  /** At once when the usage counter answers at once (the count in memory), else after the store answers. */
  admit(account: Account): MaybePromise<Readonly<Record<string, string>>> {
    const now = this.clock.now();
    const period = this.current(now);
    const limit = account.plan.monthlyRequests;
    const count = this.usage.incrementIfBelow(account.tokenId, period.month, limit);
    if (isPromise(count)) return count.then((n) => this.outcome(account, now, period, limit, n));
    return this.outcome(account, now, period, limit, count);
  }

  /** Headers for an admitted request (`count` after it), or the refusal when `count` is undefined. */
  private outcome(account: Account, now: number, period: { reset: number; resetIso: string }, limit: number, count: number | undefined): Readonly<Record<string, string>> {
    if (count === undefined) {
      this.refused++;
      const headers = { 'x-quota-limit': String(limit), 'x-quota-remaining': '0', 'x-quota-reset': period.resetIso };
      throw new QuotesError('QUOTA_EXHAUSTED', { limit, retryAfterSeconds: Math.ceil((period.reset - now) / 1000), headers });
    }
    this.daily?.record(account.tokenId, now);
    return {
      'x-quota-limit': String(limit),
      'x-quota-remaining': String(Math.max(0, limit - count)),
      'x-quota-reset': period.resetIso,
    };
  }

  async peek(account: Account): Promise<Readonly<Record<string, string>>> {
    const { month, resetIso } = this.current(this.clock.now());
    const limit = account.plan.monthlyRequests;
    const count = await this.usage.get(account.tokenId, month);
    return { 'x-quota-limit': String(limit), 'x-quota-remaining': String(Math.max(0, limit - count)), 'x-quota-reset': resetIso };
  }
}
