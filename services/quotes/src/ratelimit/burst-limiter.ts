import type { RequestDescriptorMsg } from '@rls/rls-proto';
import type { Account } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { QuotesError } from '../errors.js';
import { isPromise, type MaybePromise } from '../maybe-promise.js';
import type { PreparedDecision } from './decider.js';
import type { GateOutcome, RateLimitGate } from './rate-limit-gate.js';

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

/** Most accounts whose prepared descriptors are kept (all dropped when full, then rebuilt as used). */
const PREPARED_MAX = 10_000;

/** Per-plan, per-token burst limits from the `quotes` rule file: 429 with RateLimit-* and Retry-After. */
export class BurstLimiter implements RequestLimiter {
  readonly name = 'burst';
  /**
   * Descriptors prepared once per plan and token (the embedded engine keeps their rule matches
   * and counter keys), keyed by the two fields that decide them: plan id, then token id (two
   * lookups of strings the account already holds, no key built per request). At most
   * PREPARED_MAX in all.
   */
  private readonly prepared = new Map<string, Map<string, RequestDescriptorMsg[] | PreparedDecision>>();
  private preparedCount = 0;
  constructor(private readonly gate: RateLimitGate) {}

  /** At once when the gate decides at once (embedded engine), else a promise (remote service). */
  admit(account: Account): MaybePromise<Readonly<Record<string, string>>> {
    const out = this.gate.check(this.descriptorsOf(account.plan.id, account.tokenId));
    return isPromise(out) ? out.then(headersOf) : headersOf(out);
  }

  private descriptorsOf(planId: string, tokenId: string): RequestDescriptorMsg[] | PreparedDecision {
    let byToken = this.prepared.get(planId);
    let prepared = byToken?.get(tokenId);
    if (prepared === undefined) {
      if (this.preparedCount >= PREPARED_MAX) {
        this.prepared.clear();
        this.preparedCount = 0;
        byToken = undefined;
      }
      if (byToken === undefined) this.prepared.set(planId, (byToken = new Map<string, RequestDescriptorMsg[] | PreparedDecision>()));
      prepared = this.gate.prepare(burstDescriptors(planId, tokenId));
      byToken.set(tokenId, prepared);
      this.preparedCount++;
    }
    return prepared;
  }
}

function headersOf(out: GateOutcome): Readonly<Record<string, string>> {
  if (!out.admitted) throw new QuotesError('RATE_LIMITED', { retryAfterSeconds: out.retryAfterSeconds, headers: out.headers });
  return out.headers;
}
