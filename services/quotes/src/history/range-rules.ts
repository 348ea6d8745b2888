import { QuotesError } from '../errors.js';
import { alignUp, bucketCount, bucketStart, DAY, isInterval, isRange, type Interval, type Range } from '../domain/intervals.js';

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

/** An explicit window (the `startDate` / `endDate` extension): Unix seconds, [from, to). */
export interface DateSpan {
  from: number;
  to: number;
}

/** History asked for: by `range`, or (extension) by `dates`; exactly one of the two is set. */
export interface HistoryParams {
  range?: Range;
  interval: Interval;
  dates?: DateSpan;
}

/** Longest accepted date parameter (an ISO 8601 instant with offset and fraction fits). */
const DATE_MAX_CHARS = 40;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * A `startDate` / `endDate` value in Unix seconds: `YYYY-MM-DD` (a UTC day: its start, or for
 * an end date the start of the next day, so the end day is included) or an ISO 8601 instant with
 * a zone (`2024-01-31T12:00:00Z`, exact).
 */
export function parseDateParam(name: 'startDate' | 'endDate', raw: string): number {
  const bad = (why: string): never => {
    throw new QuotesError('DATES_INVALID', { reason: `'${name}' ${why}` });
  };
  if (raw.length > DATE_MAX_CHARS) bad(`is longer than ${DATE_MAX_CHARS} characters`);
  const day = DATE_ONLY.exec(raw);
  if (day !== null) {
    const [y, m, d] = [Number(day[1]), Number(day[2]), Number(day[3])];
    const t = Date.UTC(y, m - 1, d);
    const back = new Date(t);
    if (m < 1 || m > 12 || back.getUTCFullYear() !== y || back.getUTCMonth() !== m - 1 || back.getUTCDate() !== d) bad(`is not a calendar date: ${raw}`);
    if (y < 1970) bad('is before 1970');
    return t / 1000 + (name === 'endDate' ? DAY : 0);
  }
  if (!DATE_TIME.test(raw)) bad(`must be a date (YYYY-MM-DD) or an ISO 8601 instant with a zone (YYYY-MM-DDTHH:MM:SSZ); got "${raw}"`);
  const ms = Date.parse(raw);
  if (!Number.isFinite(ms)) bad(`is not a valid instant: ${raw}`);
  if (ms < 0) bad('is before 1970');
  return Math.floor(ms / 1000);
}

/**
 * Validates `range` / `interval` (and the `startDate` / `endDate` extension) against the plan.
 * Either of range / interval alone asks for history, the other taking its default; neither means
 * no history. Dates replace `range` (both dates are needed, and `range` must then be absent).
 */
export function resolveHistoryParams(
  rangeRaw: string | undefined,
  intervalRaw: string | undefined,
  policy: HistoryPolicy,
  startRaw?: string,
  endRaw?: string,
): HistoryParams | undefined {
  if (startRaw !== undefined || endRaw !== undefined) {
    if (startRaw === undefined) throw new QuotesError('DATES_INVALID', { reason: "'endDate' needs 'startDate'" });
    if (endRaw === undefined) throw new QuotesError('DATES_INVALID', { reason: "'startDate' needs 'endDate'" });
    if (rangeRaw !== undefined) throw new QuotesError('DATES_INVALID', { reason: "use either 'range' or 'startDate'/'endDate', not both" });
    const interval = intervalRaw ?? DEFAULT_INTERVAL;
    if (!isInterval(interval) || !policy.intervals.includes(interval)) throw new QuotesError('INTERVAL_INVALID', { valid: policy.intervals });
    const from = parseDateParam('startDate', startRaw);
    const to = parseDateParam('endDate', endRaw);
    if (to <= from) throw new QuotesError('DATES_INVALID', { reason: `'endDate' (${endRaw}) must come after 'startDate' (${startRaw})` });
    return { interval, dates: { from, to } };
  }
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
  /** The range served, or `custom` for a `startDate` / `endDate` window. */
  usedRange: Range | 'custom';
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
  if (params.dates !== undefined) return datesWindow(params.dates, params.interval, asOf, policy);
  const usedRange = cappedRange(params.range ?? DEFAULT_RANGE, params.interval, asOf);
  let from = bucketStart(params.interval, Math.max(0, rangeStart(usedRange, asOf)));
  if (policy.historyDays !== null) {
    const limit = asOf - policy.historyDays * DAY;
    if (from < limit) from = alignUp(params.interval, limit);
  }
  return { usedRange, usedInterval: params.interval, from, to: asOf };
}

/**
 * The window of a `startDate` / `endDate` request: buckets from the one holding the start up to
 * the end (or `asOf`, whichever is earlier). Refused (400) rather than shortened when it reaches
 * past what the plan or the interval allow, since the caller named the dates.
 */
function datesWindow(dates: DateSpan, interval: Interval, asOf: number, policy: HistoryPolicy): HistoryWindow {
  if (dates.from >= asOf) throw new QuotesError('DATES_INVALID', { reason: "'startDate' is in the future" });
  const capDays = INTRADAY_CAP_DAYS[interval];
  if (capDays !== undefined && dates.to - dates.from > capDays * DAY) {
    throw new QuotesError('DATES_INVALID', { reason: `interval ${interval} covers at most ${capDays} days per request (as 'range' does); choose a coarser interval or closer dates` });
  }
  if (policy.historyDays !== null && dates.from < asOf - policy.historyDays * DAY) {
    throw new QuotesError('DATES_INVALID', { reason: `your plan reaches back ${policy.historyDays} days` });
  }
  let from = bucketStart(interval, dates.from);
  if (policy.historyDays !== null) {
    const limit = asOf - policy.historyDays * DAY;
    if (from < limit) from = alignUp(interval, limit);
  }
  return { usedRange: 'custom', usedInterval: interval, from, to: Math.min(asOf, dates.to) };
}

/** Earliest instant any coin has candles for (Bitcoin's genesis block, 2009-01-03): windows reaching further back are estimated from here. */
export const EARLIEST_DATA = Date.UTC(2009, 0, 3) / 1000;

/**
 * Refuses (400, naming the limit and its setting) a request whose coins x points per coin would
 * exceed `maxPoints`, before any work is done. Points are counted as the buckets the window
 * holds (from Bitcoin's genesis at the earliest), an upper bound of what is served.
 */
export function checkHistoryBudget(coins: number, w: HistoryWindow, maxPoints: number): void {
  const points = coins * windowPoints(w);
  if (points > maxPoints) throw new QuotesError('HISTORY_TOO_LARGE', { limit: maxPoints, points });
}

/** The budget's count for one coin's window: its buckets, from Bitcoin's genesis at the earliest. */
export function windowPoints(w: HistoryWindow): number {
  return bucketCount(w.usedInterval, Math.max(w.from, bucketStart(w.usedInterval, EARLIEST_DATA)), w.to);
}
