import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { QuotesError } from '../errors.js';
import { admitAll, takeAdmission } from './admission.js';
import { queryValue, type RawQuery } from './crypto-query.js';
import './request-context.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of a request: `Authorization: Bearer` first, then the `token` query parameter. */
export function tokenOf(headers: IncomingHttpHeaders, query: RawQuery): string | undefined {
  const h = headers.authorization;
  if (typeof h === 'string') {
    const m = BEARER.exec(h);
    if (m?.[1] !== undefined) return m[1];
  }
  const q = queryValue(query, 'token');
  return q === undefined || q === '' ? undefined : q;
}

export function requestToken(request: FastifyRequest): string | undefined {
  return tokenOf(request.headers, request.query as RawQuery);
}

export type Authenticate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

function addHeaders(reply: FastifyReply, headers: readonly string[]): void {
  for (let i = 0; i < headers.length; i += 2) reply.header(headers[i]!, headers[i + 1]);
}

/**
 * Token -> account (401), plan includes crypto (403), then every limiter in order (429 burst
 * limits, then 402 monthly quota), adding their headers. Called at the start of each crypto handler
 * (a route hook would cost an extra callback hop on the hottest path). A request the fast path
 * already admitted or refused replays that outcome (see Admission).
 */
export function authenticator(accounts: AccountService, limiters: readonly RequestLimiter[]): Authenticate {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const pre = takeAdmission(request.raw);
    if (pre !== undefined) {
      addHeaders(reply, pre.headers);
      if (pre.error !== undefined) throw pre.error;
      request.account = pre.account;
      return;
    }
    const account = await accounts.authenticate(requestToken(request));
    if (account === undefined) throw new QuotesError('TOKEN_INVALID');
    if (!account.plan.crypto) throw new QuotesError('PLAN_NO_CRYPTO');
    const headers: string[] = [];
    try {
      await admitAll(account, limiters, headers);
    } finally {
      addHeaders(reply, headers);
    }
    request.account = account;
  };
}
