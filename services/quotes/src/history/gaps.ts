import { bucketEnd, type BaseInterval } from '../domain/intervals.js';

/** A span of missing base candles: open times [from, to). */
export interface Gap {
  from: number;
  to: number;
}

/**
 * Missing buckets between stored candles (ascending open times) inside [from, to). Leading
 * buckets before the first stored candle are not gaps (a coin's history starts somewhere), but
 * the tail after the last one is, up to `to`.
 */
export function findGaps(base: BaseInterval, times: readonly number[], from: number, to: number): Gap[] {
  const out: Gap[] = [];
  let expected: number | undefined;
  for (const t of times) {
    if (t < from || t >= to) continue;
    if (expected !== undefined && t > expected) out.push({ from: expected, to: t });
    expected = bucketEnd(base, t);
  }
  if (expected !== undefined && expected < to) out.push({ from: expected, to });
  return out;
}
