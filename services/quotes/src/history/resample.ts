import type { Candle } from '../domain/market.js';
import { bucketEnd, bucketStart, type BaseInterval, type Interval } from '../domain/intervals.js';

/** A served candle: `time` is the bucket start, `closeTime` the end of its last base candle (the FX date comes from it). */
export interface SeriesPoint extends Candle {
  closeTime: number;
}

/**
 * Aggregates ascending base candles into `interval` buckets aligned in UTC: open of the first,
 * close of the last, max high, min low, summed volume
 * (null when any of the bucket's candles has no volume: a partial sum would understate it). A bucket holds only the base candles
 * given, so the last bucket may be partial (it grows as base candles close).
 */
export function resample(base: BaseInterval, candles: readonly Candle[], interval: Interval): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  let cur: SeriesPoint | undefined;
  for (const k of candles) {
    const b = bucketStart(interval, k.time);
    const end = bucketEnd(base, k.time);
    if (cur === undefined || cur.time !== b) {
      cur = { time: b, open: k.open, high: k.high, low: k.low, close: k.close, volume: k.volume, closeTime: end };
      out.push(cur);
    } else {
      if (k.high > cur.high) cur.high = k.high;
      if (k.low < cur.low) cur.low = k.low;
      cur.close = k.close;
      cur.volume = cur.volume === null || k.volume === null ? null : cur.volume + k.volume;
      cur.closeTime = end;
    }
  }
  return out;
}
