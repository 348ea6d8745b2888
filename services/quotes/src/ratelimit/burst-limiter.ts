import type { RequestDescriptorMsg } from '@rls/rls-proto';
import type { Account } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { QuotesError } from '../errors.js';
import type { PreparedDecision } from './decider.js';
import type { RateLimitGate } from './rate-limit-gate.js';

/**
 * The descriptor of one API request: its rule carries the plan's per-second and per-minute limits
 * (`rate_limits`), so one descriptor counts against both and its status is the one that decides.
 */
export function burstDescriptors(planId: string, tokenId: string): RequestDescriptorMsg[] {
  return [
    {
      entries: [
        { key: 'plan', value: planId },
        { key: 'token', value: tokenId },
      ],
    },
  ];
}

/** Prepared decisions kept (one per plan and token in use). */
const PREPARED_MAX = 10_000;

/** Per-plan, per-token burst limits from the `quotes` rule file: 429 with RateLimit-* and Retry-After. */
export class BurstLimiter implements RequestLimiter {
  readonly name = 'burst';
  /**
   * Each (plan, token)'s descriptors, prepared once (the embedded engine keeps their rule matches and
   * counter keys), keyed by what the descriptors are made of: a plan change is another key. Bounded:
   * PREPARED_MAX entries, all dropped when full (they are rebuilt on the next request).
   */
  private readonly prepared = new Map<string, PreparedDecision>();
  constructor(private readonly gate: RateLimitGate) {}
  async admit(account: Account): Promise<Readonly<Record<string, string>>> {
    const out = await this.gate.check(burstDescriptors(account.plan.id, account.tokenId));
    if (!out.admitted) throw new QuotesError('RATE_LIMITED', { retryAfterSeconds: out.retryAfterSeconds, headers: out.headers });
    return out.headers;
  }
  /** Decided at once when the gate can (embedded engine), else undefined for `admit`. */
  admitNow(account: Account): Readonly<Record<string, string>> | undefined {
    const key = `${account.plan.id}\n${account.tokenId}`;
    let prepared = this.prepared.get(key);
    if (prepared === undefined) {
      prepared = this.gate.prepare(burstDescriptors(account.plan.id, account.tokenId));
      if (prepared !== undefined) {
        if (this.prepared.size >= PREPARED_MAX) this.prepared.clear();
        this.prepared.set(key, prepared);
      }
    }
    const out = prepared === undefined ? this.gate.checkNow(burstDescriptors(account.plan.id, account.tokenId)) : this.gate.checkPreparedNow(prepared);
    if (out === undefined) return undefined;
    if (!out.admitted) throw new QuotesError('RATE_LIMITED', { retryAfterSeconds: out.retryAfterSeconds, headers: out.headers });
    return out.headers;
  }
}
