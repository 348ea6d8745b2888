import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { FxSource } from '../domain/market.js';
import type { FxRateRepository } from '../domain/repositories.js';
import { utcDate } from '../domain/intervals.js';

/** Rate on a UTC day (days since the epoch): the last fixing on or before it, or null before the first fixing. */
export type RateOn = (day: number) => number | null;

interface Series {
  dates: string[];
  /** The same dates as day numbers, for lookups without string work. */
  days: number[];
  rates: number[];
  loadedTo: string;
  /** A replica that may not fetch re-reads the stored fixings from this instant (ms) on. */
  reloadAt: number;
  /** A digest of the fixings (ETags of converted history change when a fixing does). */
  stamp: string;
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
  /**
   * Several replicas (cluster/replication.ts): whether this replica may ask the source now (it
   * holds the ingest lease). One that may not serves the stored fixings only, re-read every
   * `reloadMs`. Absent: always.
   */
  mayFetch?: () => boolean;
  /** How often a replica that may not fetch re-reads the stored fixings (ms; default 15,000). */
  reloadMs?: number;
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
    return (await this.rates(currency)).rateOn;
  }

  /** The rate lookup of `currency` and a digest of the fixings behind it. */
  async rates(currency: string): Promise<{ rateOn: RateOn; stamp: string }> {
    if (currency === 'USD') return { rateOn: () => 1, stamp: 'usd' };
    const today = utcDate(Math.floor(this.clock.now() / 1000));
    let s = this.series.get(currency);
    const fetch = this.opts.mayFetch?.() ?? true;
    const due = fetch ? s !== undefined && s.loadedTo < today && this.clock.now() >= (this.retryAt.get(currency) ?? 0) : s !== undefined && this.clock.now() >= s.reloadAt;
    if (s === undefined || due) {
      let p = this.loading.get(currency);
      if (p === undefined) {
        p = this.load(currency, s, today, fetch).finally(() => this.loading.delete(currency));
        this.loading.set(currency, p);
      }
      s = await p;
    }
    const { days, rates, stamp } = s;
    const rateOn = (day: number): number | null => {
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
    return { rateOn, stamp };
  }

  private async load(currency: string, prev: Series | undefined, today: string, fetch: boolean): Promise<Series> {
    // Stored fixings only: the ingesting replica fetches them (and keeps them current).
    const loadedTo = !fetch ? '' : (await this.fetchInto(currency, prev, today)) ? today : (prev?.loadedTo ?? '');
    const rows = await this.repo.range(currency, this.earliest, today);
    const dates = rows.map((r) => r.date);
    const rates = rows.map((r) => r.rate);
    const stamp = createHash('sha1').update(dates.join(',')).update(rates.join(',')).digest('base64url');
    const s = { dates, days: dates.map(dayNumber), rates, loadedTo, reloadAt: this.clock.now() + (this.opts.reloadMs ?? 15_000), stamp };
    this.series.set(currency, s);
    return s;
  }

  /** Asks the source for the days after the newest stored fixing and stores them; false (logged, retried later) when that failed. */
  private async fetchInto(currency: string, prev: Series | undefined, today: string): Promise<boolean> {
    const last = await this.repo.lastDate(currency);
    const from = last === undefined ? this.earliest : minusDays(last, REREAD_DAYS);
    try {
      const rows = await this.source.daily(currency, from, today);
      await this.repo.upsert(currency, this.source.kind, rows);
    } catch (err) {
      // Serve what is stored; ask again in a while rather than on every request.
      this.retryAt.set(currency, this.clock.now() + RETRY_MS);
      this.opts.log?.warn({ currency, err: (err as Error).message, hadFixings: prev !== undefined }, 'daily FX fetch failed; converting history with the stored fixings');
      return false;
    }
    return true;
  }
}
