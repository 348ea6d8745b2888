import { QuotesError } from '../errors.js';
import { alignUp, bucketStart, DAY, isInterval, isRange, type Interval, type Range } from './intervals.js';

/** What a plan allows for history; see accounts/plans.ts. */
export interface HistoryPolicy {
  ranges: readonly Range[];
  intervals: readonly Interval[];
  /** How far back history reaches, in days; null means no limit. */
  historyDays: number | null;
}

export const DEFAULT_RANGE: Range = '1mo';
export const DEFAULT_INTERVAL: Interval = '1d';

/**
 * Short intervals limit how far back one request may reach (Yahoo's rules, which brapi mirrors):
 * 1m up to 7 days, other intraday up to 60 days, hourly up to 2 years (731 days covers a leap year).
 */
const INTRADAY_CAP_DAYS: Readonly<Partial<Record<Interval, number>>> = Object.freeze({
  '1m': 7,
  '2m': 60,
  '5m': 60,
  '15m': 60,
  '30m': 60,
  '90m': 60,
  '60m': 731,
  '1h': 731,
});

/** Ranges tried, longest first, when an interval caps the requested one. */
const CAP_CANDIDATES: readonly Range[] = ['10y', '5y', '2y', '1y', '6mo', '3mo', '1mo', '5d', '1d'];

export interface HistoryParams {
  range: Range;
  interval: Interval;
}

/**
 * Validates `range` / `interval` against the plan. Either one alone asks for history, the other
 * taking its default; neither means no history.
 */
export function resolveHistoryParams(rangeRaw: string | undefined, intervalRaw: string | undefined, policy: HistoryPolicy): HistoryParams | undefined {
  if (rangeRaw === undefined && intervalRaw === undefined) return undefined;
  const range = rangeRaw ?? DEFAULT_RANGE;
  const interval = intervalRaw ?? DEFAULT_INTERVAL;
  if (!isRange(range) || !policy.ranges.includes(range)) throw new QuotesError('RANGE_INVALID', { valid: policy.ranges });
  if (!isInterval(interval) || !policy.intervals.includes(interval)) throw new QuotesError('INTERVAL_INVALID', { valid: policy.intervals });
  return { range, interval };
}

function minusMonths(t: number, months: number): number {
  const d = new Date(t * 1000);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() - months;
  // Clamp the day so that e.g. 31 March minus one month is 28/29 February, not 3 March.
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const day = Math.min(d.getUTCDate(), lastDay);
  return Date.UTC(y, m, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()) / 1000;
}

/** The instant `range` reaches back to from `asOf`; `max` reaches to the epoch (sources start at the coin's first trade). */
export function rangeStart(range: Range, asOf: number): number {
  switch (range) {
    case '1d':
      return asOf - DAY;
    case '5d':
      return asOf - 5 * DAY;
    case '1mo':
      return minusMonths(asOf, 1);
    case '3mo':
      return minusMonths(asOf, 3);
    case '6mo':
      return minusMonths(asOf, 6);
    case '1y':
      return minusMonths(asOf, 12);
    case '2y':
      return minusMonths(asOf, 24);
    case '5y':
      return minusMonths(asOf, 60);
    case '10y':
      return minusMonths(asOf, 120);
    case 'ytd':
      return Date.UTC(new Date(asOf * 1000).getUTCFullYear(), 0, 1) / 1000;
    case 'max':
      return 0;
  }
}

/** The range actually served for `interval`: the requested one, or the longest one the interval's cap allows. */
export function cappedRange(range: Range, interval: Interval, asOf: number): Range {
  const capDays = INTRADAY_CAP_DAYS[interval];
  if (capDays === undefined) return range;
  const cap = capDays * DAY;
  if (asOf - rangeStart(range, asOf) <= cap) return range;
  for (const r of CAP_CANDIDATES) if (asOf - rangeStart(r, asOf) <= cap) return r;
  return '1d';
}

export interface HistoryWindow {
  usedRange: Range;
  usedInterval: Interval;
  /** First bucket start (inclusive), aligned to the interval. */
  from: number;
  /** The as-of instant: only candles closed by then are served. */
  to: number;
}

/**
 * The candles to serve: buckets of `interval` from the aligned range start up to `asOf`.
 * The start is aligned down so the first bucket is whole, but never before the plan's history
 * limit (there it is aligned up instead).
 */
export function historyWindow(params: HistoryParams, asOf: number, policy: HistoryPolicy): HistoryWindow {
  const usedRange = cappedRange(params.range, params.interval, asOf);
  let from = bucketStart(params.interval, Math.max(0, rangeStart(usedRange, asOf)));
  if (policy.historyDays !== null) {
    const limit = asOf - policy.historyDays * DAY;
    if (from < limit) from = alignUp(params.interval, limit);
  }
  return { usedRange, usedInterval: params.interval, from, to: asOf };
}
