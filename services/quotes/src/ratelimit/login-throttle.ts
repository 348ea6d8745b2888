import { createHash } from 'node:crypto';
import type { RequestDescriptorMsg } from '@rls/rls-proto';
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
    const descriptors: RequestDescriptorMsg[] = [{ entries: [{ key: 'login_ip', value: ip }] }];
    if (email !== undefined) descriptors.push({ entries: [{ key: 'login_email', value: createHash('sha256').update(email).digest('hex') }] });
    await this.check(descriptors);
  }

  /**
   * A sign-up attempt: the `signup_ip` rule (per client address) and the `signup` rule (one
   * counter for the whole service, so a botnet of addresses is bounded too). Shared by every
   * replica when the gate is the remote ratelimit service.
   */
  async signup(ip: string): Promise<void> {
    if (this.gate === undefined) return;
    await this.check([{ entries: [{ key: 'signup_ip', value: ip }] }, { entries: [{ key: 'signup', value: 'all' }] }]);
  }

  private async check(descriptors: RequestDescriptorMsg[]): Promise<void> {
    const out = await this.gate!.check(descriptors);
    if (!out.admitted) throw new QuotesError('LOGIN_THROTTLED', { retryAfterSeconds: out.retryAfterSeconds, headers: out.headers });
  }
}
