/**
 * brapi's range and interval vocabularies, the base series each interval is resampled from,
 * and UTC bucket arithmetic. All times are Unix seconds.
 */
export const RANGES = ['1d', '5d', '1mo', '3mo', '6mo', '1y', '2y', '5y', '10y', 'ytd', 'max'] as const;
export const INTERVALS = ['1m', '2m', '5m', '15m', '30m', '60m', '90m', '1h', '1d', '5d', '1wk', '1mo', '3mo'] as const;
/** Series kept in the store; every interval above is an exact aggregation of one of them. */
export const BASE_INTERVALS = ['1m', '30m', '1h', '1d', '1mo'] as const;

export type Range = (typeof RANGES)[number];
export type Interval = (typeof INTERVALS)[number];
export type BaseInterval = (typeof BASE_INTERVALS)[number];

export const DAY = 86_400;

export const BASE_OF: Readonly<Record<Interval, BaseInterval>> = Object.freeze({
  '1m': '1m',
  '2m': '1m',
  '5m': '1m',
  '15m': '1m',
  '30m': '30m',
  '60m': '1h',
  '90m': '30m',
  '1h': '1h',
  '1d': '1d',
  '5d': '1d',
  '1wk': '1d',
  '1mo': '1mo',
  '3mo': '1mo',
});

/** Fixed-length intervals in seconds; buckets are multiples of the length since the epoch. */
const FIXED: Readonly<Partial<Record<Interval, number>>> = Object.freeze({
  '1m': 60,
  '2m': 120,
  '5m': 300,
  '15m': 900,
  '30m': 1800,
  '60m': 3600,
  '90m': 5400,
  '1h': 3600,
  '1d': DAY,
  '5d': 5 * DAY,
});

/** 1970-01-05 was a Monday: weeks start on Monday 00:00 UTC, as on Yahoo and most exchanges. */
const MONDAY_OFFSET = 4 * DAY;
const WEEK = 7 * DAY;

export function isRange(v: string): v is Range {
  return (RANGES as readonly string[]).includes(v);
}
export function isInterval(v: string): v is Interval {
  return (INTERVALS as readonly string[]).includes(v);
}
export function isBaseInterval(v: string): v is BaseInterval {
  return (BASE_INTERVALS as readonly string[]).includes(v);
}

function monthsPerBucket(interval: Interval): number | undefined {
  if (interval === '1mo') return 1;
  if (interval === '3mo') return 3;
  return undefined;
}

/**
 * Fixed bucket length of `interval` in seconds and the start of one bucket (buckets start at
 * offset + k * length), or undefined for calendar months.
 */
export function fixedGrid(interval: Interval): { length: number; offset: number } | undefined {
  if (interval === '1wk') return { length: WEEK, offset: MONDAY_OFFSET };
  const fixed = FIXED[interval];
  return fixed === undefined ? undefined : { length: fixed, offset: 0 };
}

/** How many buckets of `interval` start in [from, to). */
export function bucketCount(interval: Interval, from: number, to: number): number {
  const first = alignUp(interval, from);
  if (first >= to) return 0;
  const grid = fixedGrid(interval);
  if (grid !== undefined) return Math.floor((to - 1 - first) / grid.length) + 1;
  let n = 0;
  for (let t = first; t < to; t = bucketEnd(interval, t)) n++;
  return n;
}

/** Start of the UTC bucket of `interval` holding instant `t`. */
export function bucketStart(interval: Interval, t: number): number {
  const fixed = FIXED[interval];
  if (fixed !== undefined) return Math.floor(t / fixed) * fixed;
  if (interval === '1wk') return Math.floor((t - MONDAY_OFFSET) / WEEK) * WEEK + MONDAY_OFFSET;
  const months = monthsPerBucket(interval) ?? 1;
  const d = new Date(t * 1000);
  const m = Math.floor(d.getUTCMonth() / months) * months;
  return Date.UTC(d.getUTCFullYear(), m, 1) / 1000;
}

/** Start of the bucket after the one starting at `start` (i.e. the bucket's exclusive end). */
export function bucketEnd(interval: Interval, start: number): number {
  const fixed = FIXED[interval];
  if (fixed !== undefined) return start + fixed;
  if (interval === '1wk') return start + WEEK;
  const months = monthsPerBucket(interval) ?? 1;
  const d = new Date(start * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1) / 1000;
}

/** The first bucket start at or after `t`. */
export function alignUp(interval: Interval, t: number): number {
  const s = bucketStart(interval, t);
  return s === t ? s : bucketEnd(interval, s);
}

/** `YYYY-MM-DD` of the UTC day holding instant `t` (seconds). */
export function utcDate(t: number): string {
  return new Date(t * 1000).toISOString().slice(0, 10);
}
