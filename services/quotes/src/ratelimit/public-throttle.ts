import { QuotesError } from '../errors.js';
import type { RateLimitGate } from './rate-limit-gate.js';

/**
 * Requests of visitors without an account (the public market page, QUOTES_PUBLIC_MARKET) through
 * the rate limiter: the `public_ip` rule of the quotes rule file, per client address, shared by
 * every replica with the remote ratelimit service. Every request counts.
 */
export class PublicThrottle {
  constructor(private readonly gate: RateLimitGate | undefined) {}

  async visit(ip: string): Promise<void> {
    if (this.gate === undefined) return;
    const out = await this.gate.check([{ entries: [{ key: 'public_ip', value: ip }] }]);
    if (!out.admitted) throw new QuotesError('RATE_LIMITED', { retryAfterSeconds: out.retryAfterSeconds, headers: out.headers });
  }
}
