import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { FxSource } from '../market/types.js';
import type { FxRateRepository } from '../store/types.js';
import { utcDate } from './intervals.js';

/** Rate on a UTC day (days since the epoch): the last fixing on or before it, or null before the first fixing. */
export type RateOn = (day: number) => number | null;

interface Series {
  dates: string[];
  /** The same dates as day numbers, for lookups without string work. */
  days: number[];
  rates: number[];
  loadedTo: string;
}

const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / 86_400_000;

/** Days re-read before the newest stored fixing: sources publish late or revise. */
const REREAD_DAYS = 7;
/** After a failed fetch, wait this long (ms) before asking the source again. */
const RETRY_MS = 300_000;

const minusDays = (date: string, n: number): string => new Date(Date.parse(`${date}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);

export interface FxHistoryOptions {
  /** Where fixings are kept for historical conversion (the store's fx_daily table). */
  repo: FxRateRepository;
  log?: Logger;
  earliest?: string;
}

/**
 * Daily USD->currency fixings for historical conversion. Fixings are stored (so history survives
 * restarts and upstream outages); the source is asked only for days after the newest stored one
 * (re-reading a week for late revisions), once per UTC day. Served from memory (a few thousand
 * numbers per currency).
 */
export class FxHistory {
  private readonly series = new Map<string, Series>();
  private readonly loading = new Map<string, Promise<Series>>();
  private readonly retryAt = new Map<string, number>();
  private readonly repo: FxRateRepository;
  private readonly earliest: string;
  constructor(
    private readonly source: FxSource,
    private readonly clock: Clock,
    private readonly opts: FxHistoryOptions,
  ) {
    this.repo = opts.repo;
    this.earliest = opts.earliest ?? '1990-01-01';
  }

  async lookup(currency: string): Promise<RateOn> {
    if (currency === 'USD') return () => 1;
    const today = utcDate(Math.floor(this.clock.now() / 1000));
    let s = this.series.get(currency);
    if (s === undefined || (s.loadedTo < today && this.clock.now() >= (this.retryAt.get(currency) ?? 0))) {
      let p = this.loading.get(currency);
      if (p === undefined) {
        p = this.load(currency, s, today).finally(() => this.loading.delete(currency));
        this.loading.set(currency, p);
      }
      s = await p;
    }
    const { days, rates } = s;
    return (day: number) => {
      let lo = 0;
      let hi = days.length - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if ((days[mid] ?? Infinity) <= day) {
          found = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      return found < 0 ? null : (rates[found] ?? null);
    };
  }

  private async load(currency: string, prev: Series | undefined, today: string): Promise<Series> {
    const last = await this.repo.lastDate(currency);
    const from = last === undefined ? this.earliest : minusDays(last, REREAD_DAYS);
    let loadedTo = today;
    try {
      const rows = await this.source.daily(currency, from, today);
      await this.repo.upsert(currency, this.source.kind, rows);
    } catch (err) {
      // Serve what is stored; ask again in a while rather than on every request.
      loadedTo = prev?.loadedTo ?? '';
      this.retryAt.set(currency, this.clock.now() + RETRY_MS);
      this.opts.log?.warn({ currency, err: (err as Error).message }, 'daily FX fetch failed; converting history with the stored fixings');
    }
    const rows = await this.repo.range(currency, this.earliest, today);
    const dates = rows.map((r) => r.date);
    const s = { dates, days: dates.map(dayNumber), rates: rows.map((r) => r.rate), loadedTo };
    this.series.set(currency, s);
    return s;
  }
}
