import { createHash } from 'node:crypto';
import { QuotesError } from '../errors.js';
import type { RateLimitGate } from './rate-limit-gate.js';

/**
 * Sign-in and sign-up attempts through the rate limiter (the `login_email` and `login_ip` rules
 * of the quotes rule file). Every attempt counts, successful or not, as with any rate limit; the
 * email is sent hashed so no address ends up in the counter store's keys.
 */
export class LoginThrottle {
  constructor(private readonly gate: RateLimitGate | undefined) {}

  async attempt(ip: string, email: string | undefined): Promise<void> {
    if (this.gate === undefined) return;
    const descriptors = [{ entries: [{ key: 'login_ip', value: ip }] }];
    if (email !== undefined) descriptors.push({ entries: [{ key: 'login_email', value: createHash('sha256').update(email).digest('hex') }] });
    const out = await this.gate.check(descriptors);
    if (!out.admitted) throw new QuotesError('LOGIN_THROTTLED', { retryAfterSeconds: out.retryAfterSeconds, headers: out.headers });
  }
}
