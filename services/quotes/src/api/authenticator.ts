import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Account, AccountService } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { QuotesError } from '../errors.js';
import { admitAll } from './admission.js';
import { TOKEN_PARAM } from '../http/credentials.js';
import { queryValue, type RawQuery } from './crypto-query.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The token of a request: `Authorization: Bearer` first, then the `token` query parameter (as
 * the query parser decodes names; the access log masks by the same names, http/credentials.ts).
 */
export function tokenOf(headers: IncomingHttpHeaders, query: RawQuery): string | undefined {
  const h = headers.authorization;
  if (typeof h === 'string') {
    const m = BEARER.exec(h);
    if (m?.[1] !== undefined) return m[1];
  }
  const q = queryValue(query, TOKEN_PARAM);
  return q === undefined || q === '' ? undefined : q;
}

export function requestToken(request: FastifyRequest): string | undefined {
  return tokenOf(request.headers, request.query as RawQuery);
}

/**
 * The account a token resolved to, checked for the crypto API: 401 without one (unknown or
 * revoked token), 403 when its plan does not include crypto.
 */
export function authorize(account: Account | undefined): Account {
  if (account === undefined) throw new QuotesError('TOKEN_INVALID');
  if (!account.plan.crypto) throw new QuotesError('PLAN_NO_CRYPTO');
  return account;
}

/**
 * Authenticates and admits a request; resolves with the account, handed on explicitly to the
 * rest of the handler (no decorated request property).
 */
export type Authenticate = (request: FastifyRequest, reply: FastifyReply) => Promise<Account>;

/**
 * Token -> account (`authorize`), then every limiter in order (429 burst limits, then 402
 * monthly quota), adding their headers, refused or not. Called at the start of each crypto
 * handler (a route hook would cost an extra callback hop on the hottest path).
 */
export function authenticator(accounts: AccountService, limiters: readonly RequestLimiter[], tokenFrom: (request: FastifyRequest) => string | undefined = requestToken): Authenticate {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<Account> => {
    const account = authorize(await accounts.authenticate(tokenFrom(request)));
    const headers: string[] = [];
    try {
      await admitAll(account, limiters, headers);
    } finally {
      for (let i = 0; i < headers.length; i += 2) reply.header(headers[i]!, headers[i + 1]);
    }
    return account;
  };
}
