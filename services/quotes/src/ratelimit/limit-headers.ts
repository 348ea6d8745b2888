import { RlsCode, type DescriptorStatusMsg } from '@rls/rls-proto';

export interface LimitSummary {
  /** Requests per window of the descriptor the headers describe. */
  limit: number;
  remaining: number;
  /** Whole seconds until that window resets. */
  resetSeconds: number;
  /** Seconds until every over-limit window has reset (Retry-After); 0 when none is over. */
  retryAfterSeconds: number;
}

/**
 * Picks the most constraining status (any OVER_LIMIT one, else the one with the fewest requests
 * left; first wins ties) to describe in the RateLimit-* headers, as the rate limit service does
 * with LIMIT_RESPONSE_HEADERS_ENABLED. Retry-After waits for the last over-limit window to end,
 * so a retry after it is not refused again by another window. Undefined when no status carries
 * a limit (nothing matched).
 */
export function summarizeStatuses(statuses: readonly DescriptorStatusMsg[]): LimitSummary | undefined {
  let chosen: DescriptorStatusMsg | undefined;
  let chosenOver = false;
  let retryAfter = 0;
  for (const s of statuses) {
    if (s.currentLimit === undefined) continue;
    const over = s.code === RlsCode.OVER_LIMIT;
    if (over) retryAfter = Math.max(retryAfter, Math.ceil(s.durationUntilReset ?? 1));
    if (chosen === undefined || (over && !chosenOver) || (over === chosenOver && !over && s.limitRemaining < chosen.limitRemaining)) {
      chosen = s;
      chosenOver = over;
    }
  }
  if (chosen?.currentLimit === undefined) return undefined;
  return {
    limit: chosen.currentLimit.requestsPerUnit,
    remaining: chosenOver ? 0 : chosen.limitRemaining,
    resetSeconds: Math.ceil(chosen.durationUntilReset ?? 0),
    retryAfterSeconds: retryAfter,
  };
}

/** `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (lower-case, as Node sends them). */
export function limitHeaders(s: LimitSummary): Record<string, string> {
  return { 'ratelimit-limit': String(s.limit), 'ratelimit-remaining': String(s.remaining), 'ratelimit-reset': String(s.resetSeconds) };
}
