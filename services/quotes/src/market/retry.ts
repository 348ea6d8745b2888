import { backoffDelayMs } from '@rls/backoff';
import type { RandomSource } from '@rls/engine';

/** How an upstream failure should be handled. */
export interface FailureClass {
  retryable: boolean;
  /** Wait at least this long before the next try (Retry-After, bans). */
  retryAfterMs?: number;
  /** Short label for logs and counters: timeout, rate-limited, banned, malformed, network, http-5xx, ... */
  reason: string;
}

export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
  sleep: (ms: number) => Promise<void>;
  /** Draws the jitter that keeps many clients from retrying in lockstep. */
  random: RandomSource;
}

/** Per-upstream counters: what was asked, what failed and why; read by tests and /health-style reports. */
export class UpstreamCounters {
  private readonly counts = new Map<string, number>();
  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
  }
}

/** Thrown after the last try; carries the last failure's class. */
export class UpstreamFailure extends Error {
  constructor(
    readonly upstream: string,
    readonly failure: FailureClass,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(`${upstream}: ${failure.reason} after ${attempts} ${attempts === 1 ? 'try' : 'tries'}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'UpstreamFailure';
  }
}

/**
 * The wait after try `attempt` (from 1): base × 2^(attempt−1), capped, equal jitter (between half
 * and all of it); never shorter than a Retry-After.
 */
export function backoffMs(policy: Pick<RetryPolicy, 'baseMs' | 'maxMs' | 'random'>, attempt: number, retryAfterMs = 0): number {
  const wait = backoffDelayMs({ initialMs: policy.baseMs, maxMs: policy.maxMs, jitter: 'equal' }, attempt - 1, policy.random);
  return Math.max(wait, retryAfterMs);
}

export interface RetryHooks {
  onFailure?: (failure: FailureClass, attempt: number, waitMs: number | undefined, err: unknown) => void;
}

/**
 * Runs `fn` up to `policy.attempts` times. Failures that are not retryable (bad symbol, bad
 * request) end at once; others wait with backoff (and any Retry-After) before trying again.
 */
export async function withRetry<T>(upstream: string, fn: () => Promise<T>, classify: (err: unknown) => FailureClass, policy: RetryPolicy, hooks: RetryHooks = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const failure = classify(err);
      const last = !failure.retryable || attempt >= policy.attempts;
      const wait = last ? undefined : backoffMs(policy, attempt, failure.retryAfterMs);
      hooks.onFailure?.(failure, attempt, wait, err);
      if (wait === undefined) throw new UpstreamFailure(upstream, failure, attempt, err);
      await policy.sleep(wait);
    }
  }
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date), or undefined. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
