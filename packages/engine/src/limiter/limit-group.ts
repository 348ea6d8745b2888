// Several limits on one descriptor (`rate_limits`, docs/ratelimit.md, "Several limits on one
// descriptor"): every limit is counted as if it were a descriptor of its own (a "slot"), and the
// descriptor's status is the one of the limit that decides.
import { Code, type DescriptorStatus } from '../domain.js';

/**
 * Index (into `statuses`, among `from` ≤ i < `to`) of the limit that decides a descriptor: of the
 * OVER_LIMIT ones the one whose reset is furthest away (a client that waits that long is not refused
 * again by another of them at once); when none is over, the one with the fewest requests left,
 * then the one whose reset is furthest away, then the first listed.
 */
export function decidingIndex(statuses: readonly DescriptorStatus[], from: number, to: number): number {
  let best = from;
  for (let i = from + 1; i < to; i++) {
    const s = statuses[i]!;
    const b = statuses[best]!;
    const sOver = s.code === Code.OVER_LIMIT;
    const bOver = b.code === Code.OVER_LIMIT;
    if (sOver !== bOver) {
      if (sOver) best = i;
      continue;
    }
    if (!sOver && s.limitRemaining !== b.limitRemaining) {
      if (s.limitRemaining < b.limitRemaining) best = i;
      continue;
    }
    if ((s.durationUntilReset ?? 0) > (b.durationUntilReset ?? 0)) best = i;
  }
  return best;
}
