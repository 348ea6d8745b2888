import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { QuotesError } from '../errors.js';
import { queryValue, type RawQuery } from './crypto-query.js';
import './request-context.js';

/** The token of a request: `Authorization: Bearer` first, then the `token` query parameter. */
export function requestToken(request: FastifyRequest): string | undefined {
  const h = request.headers.authorization;
  if (typeof h === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    if (m?.[1] !== undefined) return m[1];
  }
  const q = queryValue(request.query as RawQuery, 'token');
  return q === undefined || q === '' ? undefined : q;
}

export type Authenticate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * Token -> account (401), plan includes crypto (403), then every limiter in order (429 burst
 * limits, then 402 monthly quota), adding their headers. Called at the start of each crypto handler
 * (a route hook would cost an extra callback hop on the hottest path).
 */
export function authenticator(accounts: AccountService, limiters: readonly RequestLimiter[]): Authenticate {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const account = await accounts.authenticate(requestToken(request));
    if (account === undefined) throw new QuotesError('TOKEN_INVALID');
    if (!account.plan.crypto) throw new QuotesError('PLAN_NO_CRYPTO');
    for (let i = 0; i < limiters.length; i++) {
      let headers: Readonly<Record<string, string>>;
      try {
        headers = await limiters[i]!.admit(account);
      } catch (err) {
        // A refused request still shows where the caller stands with the limiters not reached
        // (a 429 carries the monthly quota headers); a failing peek never hides the refusal.
        for (const later of limiters.slice(i + 1)) {
          const peeked = await later.peek?.(account).catch(() => undefined);
          for (const [k, v] of Object.entries(peeked ?? {})) reply.header(k, v);
        }
        throw err;
      }
      for (const [k, v] of Object.entries(headers)) reply.header(k, v);
    }
    request.account = account;
  };
}
