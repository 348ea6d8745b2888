import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import type { UsageCounter } from '../accounts/buffered-usage.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { monthKey } from '../accounts/usage-month.js';
import { admitAll } from '../api/admission.js';
import { sendAnswer } from '../api/answers.js';
import { authorize } from '../api/authenticator.js';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import { cgErrorAnswer } from './cg-errors.js';
import { requestCoingeckoToken } from './cg-routes.js';

export interface KeyRouteDeps {
  accounts: AccountService;
  /** The burst limits only: /key is never counted against the monthly quota. */
  burst: readonly RequestLimiter[];
  /** The counter the monthly quota enforces (the same object, so the figures are what it sees). */
  usage: UsageCounter;
  /** Requests per minute each plan's burst rules admit (ratelimit/plan-minute-limits.ts); absent with burst limits off. */
  minuteLimits: ReadonlyMap<string, number> | undefined;
  clock: Clock;
}

/** CoinGecko's `/key` answer for one key. */
export interface KeyView {
  plan: string;
  rate_limit_request_per_minute: number;
  monthly_call_credit: number;
  current_total_monthly_calls: number;
  current_remaining_monthly_calls: number;
  api_key_rate_limit_request_per_minute: number;
  api_key_monthly_call_credit: number;
  api_key_current_total_monthly_calls: number;
}

/**
 * GET /api/v3/key: the calling key's plan, its per-minute burst limit (from the rule files the
 * limiter enforces; 0 when burst limits are off) and this UTC month's calls and remaining credit,
 * read from the counter the monthly quota increments. The call passes the burst limits (a
 * refusal is 429 as for any call) but is never counted in the monthly quota, as on CoinGecko.
 */
export function registerKeyRoute(app: FastifyInstance, deps: KeyRouteDeps): void {
  app.get('/api/v3/key', async (request: FastifyRequest, reply: FastifyReply) => {
    const headers: string[] = ['cache-control', 'no-store'];
    try {
      const token = requestCoingeckoToken(request);
      if (token === undefined) throw new QuotesError('TOKEN_INVALID', { reason: 'missing' });
      const account = authorize(await deps.accounts.authenticate(token));
      await admitAll(account, deps.burst, headers);
      const plan = account.plan;
      const used = await deps.usage.get(account.tokenId, monthKey(deps.clock.now()));
      const perMinute = deps.minuteLimits?.get(plan.id) ?? 0;
      const view: KeyView = {
        plan: plan.name,
        rate_limit_request_per_minute: perMinute,
        monthly_call_credit: plan.monthlyRequests,
        current_total_monthly_calls: used,
        current_remaining_monthly_calls: Math.max(0, plan.monthlyRequests - used),
        api_key_rate_limit_request_per_minute: perMinute,
        api_key_monthly_call_credit: plan.monthlyRequests,
        api_key_current_total_monthly_calls: used,
      };
      headers.push('content-type', 'application/json; charset=utf-8');
      return sendAnswer(reply, { status: 200, headers, body: JSON.stringify(view) });
    } catch (err) {
      return sendAnswer(reply, cgErrorAnswer(err, request.log, headers.slice(2)));
    }
  });
}
