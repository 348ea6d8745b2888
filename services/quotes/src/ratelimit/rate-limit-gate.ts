import { RlsCode, type RateLimitResponseMsg, type RequestDescriptorMsg } from '@rls/rls-proto';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import { isPromise, type MaybePromise } from '../maybe-promise.js';
import type { PreparedDecision, RateLimitDecider } from './decider.js';
import { limitHeaders, summarizeStatuses } from './limit-headers.js';

/** What to do when no decision can be had: Envoy's failure_mode_deny=false (allow) or true (deny). */
export type FailureMode = 'allow' | 'deny';

export type GateOutcome =
  /** Admitted; headers describe the most constraining window (empty when no rule matched). */
  | { admitted: true; headers: Record<string, string>; failedOpen: boolean }
  /** Refused by a limit: 429 with these headers and Retry-After. */
  | { admitted: false; headers: Record<string, string>; retryAfterSeconds: number };

/** Totals since start, for /health and tests. */
export interface GateCounters {
  calls: number;
  overLimit: number;
  /** Calls that got no decision (service down, timeout, error). */
  failures: number;
  failedOpen: number;
  failedClosed: number;
}

/** Seconds a client is told to wait when the limiter is down and the mode is deny. */
const DENY_RETRY_AFTER = 1;
/** At most one failure log line per this many milliseconds (the rest are counted in it). */
const LOG_EVERY_MS = 10_000;

/**
 * Asks the decider about one request's descriptors and turns the answer into an outcome,
 * applying the failure mode when there is no answer. Failures are counted and logged, at most
 * one line per ten seconds so an outage does not flood the log.
 */
export class RateLimitGate {
  readonly counters: GateCounters = { calls: 0, overLimit: 0, failures: 0, failedOpen: 0, failedClosed: 0 };
  private lastLogAt = -Infinity;
  private suppressed = 0;
  constructor(
    readonly decider: RateLimitDecider,
    readonly domain: string,
    readonly failureMode: FailureMode,
    private readonly log: Logger,
    private readonly clock: Clock,
  ) {}

  /**
   * The outcome for one request's descriptors, or for descriptors prepared with `prepare`: at once
   * when the decider answered at once (the embedded engine), else a promise. Refuses with
   * RATE_LIMIT_UNAVAILABLE (503; thrown or rejected as the answer came) only when the service
   * failed and the mode is deny.
   */
  check(descriptors: RequestDescriptorMsg[] | PreparedDecision): MaybePromise<GateOutcome> {
    this.counters.calls++;
    let res: MaybePromise<RateLimitResponseMsg>;
    try {
      res = this.decider.shouldRateLimit(Array.isArray(descriptors) ? { domain: this.domain, descriptors, hitsAddend: 0 } : descriptors);
    } catch (err) {
      return this.failed(err);
    }
    if (isPromise(res)) return res.then((r) => this.outcome(r), (err: unknown) => this.failed(err));
    return this.outcome(res);
  }

  /**
   * Descriptors this gate will check again and again, prepared by a decider that can keep work
   * between calls (pass the result to `check`); the descriptors themselves when it cannot.
   */
  prepare(descriptors: RequestDescriptorMsg[]): RequestDescriptorMsg[] | PreparedDecision {
    return this.decider.prepare?.({ domain: this.domain, descriptors, hitsAddend: 0 }) ?? descriptors;
  }

  private outcome(res: RateLimitResponseMsg): GateOutcome {
    const summary = summarizeStatuses(res.statuses);
    const headers = summary === undefined ? {} : limitHeaders(summary);
    if (res.overallCode === RlsCode.OVER_LIMIT) {
      this.counters.overLimit++;
      return { admitted: false, headers, retryAfterSeconds: Math.max(1, summary?.retryAfterSeconds ?? 1) };
    }
    return { admitted: true, headers, failedOpen: false };
  }

  private failed(err: unknown): GateOutcome {
    this.counters.failures++;
    const deny = this.failureMode === 'deny';
    if (deny) this.counters.failedClosed++;
    else this.counters.failedOpen++;
    const now = this.clock.now();
    if (now - this.lastLogAt >= LOG_EVERY_MS) {
      this.log.warn(
        { err: (err as Error).message, mode: this.decider.kind, failureMode: this.failureMode, suppressed: this.suppressed, failures: this.counters.failures },
        deny ? 'rate limit service unavailable: refusing requests (RATELIMIT_FAILURE_MODE=deny)' : 'rate limit service unavailable: admitting requests unchecked (RATELIMIT_FAILURE_MODE=allow)',
      );
      this.lastLogAt = now;
      this.suppressed = 0;
    } else {
      this.suppressed++;
    }
    if (deny) throw new QuotesError('RATE_LIMIT_UNAVAILABLE', { retryAfterSeconds: DENY_RETRY_AFTER });
    return { admitted: true, headers: {}, failedOpen: true };
  }

  async close(): Promise<void> {
    await this.decider.close();
  }
}
