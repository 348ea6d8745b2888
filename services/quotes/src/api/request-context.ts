import type { Account } from '../accounts/account-service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on protected routes. */
    account: Account | null;
    /** performance.now() when the request arrived, for `took`. */
    startedAt: number;
  }
}

export {};
