// RateLimit-Limit / -Remaining / -Reset (LIMIT_RESPONSE_HEADERS_ENABLED): describe the most constraining descriptor.
import { Code, MAX_UINT32, type DescriptorStatus, type HeaderValue } from '../domain.js';
import type { ResponseHeaderOptions } from './options.js';

/**
 * Index of the status the headers describe, or -1: the smallest remaining among statuses with a
 * limit (first wins ties), except that a non-quota OVER_LIMIT status always takes over (last wins).
 */
export function headerStatusIndex(statuses: readonly DescriptorStatus[], isQuota: (i: number) => boolean): number {
  let chosen = -1;
  let minRemaining = MAX_UINT32;
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i]!;
    if (s.currentLimit === undefined) continue;
    if (s.code === Code.OVER_LIMIT && !isQuota(i)) {
      chosen = i;
      minRemaining = 0;
    } else if (s.limitRemaining < minRemaining) {
      chosen = i;
      minRemaining = s.limitRemaining;
    }
  }
  return chosen;
}

export function rateLimitHeaders(opts: ResponseHeaderOptions, status: DescriptorStatus): HeaderValue[] {
  return [
    { key: opts.limitHeader, value: String(status.currentLimit?.requestsPerUnit ?? 0) },
    { key: opts.remainingHeader, value: String(status.limitRemaining) },
    { key: opts.resetHeader, value: String(status.durationUntilReset ?? 0) },
  ];
}
