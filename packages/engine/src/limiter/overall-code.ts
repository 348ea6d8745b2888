// The response-level code (upstream's shouldRateLimitWorker, with quota mode): a request fails when a rate descriptor is
// over, or when it has quota descriptors and every one of them is over.
import { Code, type CodeNumber, type DescriptorStatus } from '../domain.js';
import type { LimitMatch } from '../config/rule-tree.js';

export function isQuotaDescriptor(match: LimitMatch | undefined, globalQuota: boolean): boolean {
  return globalQuota || (match?.limit.quotaMode ?? false);
}

export function overallCode(
  statuses: readonly DescriptorStatus[],
  matches: readonly (LimitMatch | undefined)[],
  unlimited: readonly boolean[],
  globalQuota: boolean,
): CodeNumber {
  let failedRate = 0;
  let totalQuota = 0;
  let failedQuota = 0;
  for (let i = 0; i < statuses.length; i++) {
    if (unlimited[i] === true) continue;
    const quota = isQuotaDescriptor(matches[i], globalQuota);
    const over = statuses[i]!.code === Code.OVER_LIMIT;
    if (quota) {
      totalQuota += 1;
      if (over) failedQuota += 1;
    } else if (over) {
      failedRate += 1;
    }
  }
  return failedRate > 0 || (totalQuota > 0 && totalQuota === failedQuota) ? Code.OVER_LIMIT : Code.OK;
}
