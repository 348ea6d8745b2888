import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { FxQuote, FxSnapshot } from '../domain/market.js';

/** What one fetch of an official source gives: USD->X rates and, where published, bid/ask quotes. */
export interface OfficialRates {
  rates: Map<string, number>;
  quotes?: ReadonlyMap<string, FxQuote> | undefined;
}

export interface OfficialLatestOptions {
  clock: Clock;
  log: Logger;
  /** Refetch at most this often (ms). */
  refreshMs: number;
  /** Rates fetched longer ago than this (ms) are reported with their fetch time, so quotes go stale. */
  staleMs: number;
  name: string;
}

/**
 * Official rates are published once a day, so "fresh" means "fetched recently": while the last
 * successful fetch is younger than `staleMs` the snapshot is reported as current; older, it
 * carries its fetch time and the quote service answers 503. Failed fetches keep the last rates.
 */
export class OfficialLatest {
  private last: { fetchedAt: number; rates: ReadonlyMap<string, number>; quotes: ReadonlyMap<string, FxQuote> | undefined } | undefined;
  private lastAttempt = -Infinity;
  private inflight: Promise<void> | undefined;
  constructor(
    private readonly opts: OfficialLatestOptions,
    private readonly fetchRates: () => Promise<OfficialRates>,
  ) {}

  async get(): Promise<FxSnapshot> {
    const now = this.opts.clock.now();
    if (now - this.lastAttempt >= this.opts.refreshMs || now < this.lastAttempt) {
      this.inflight ??= this.refresh().finally(() => (this.inflight = undefined));
    }
    // Callers arriving while a fetch runs wait for it too (else the very first ones see nothing).
    if (this.inflight !== undefined) await this.inflight;
    if (this.last === undefined) throw new Error(`${this.opts.name}: no rates yet`);
    const age = this.opts.clock.now() - this.last.fetchedAt;
    const time = age <= this.opts.staleMs ? this.opts.clock.now() : this.last.fetchedAt;
    return this.last.quotes === undefined ? { time, rates: this.last.rates } : { time, rates: this.last.rates, quotes: this.last.quotes };
  }

  private async refresh(): Promise<void> {
    this.lastAttempt = this.opts.clock.now();
    try {
      const { rates, quotes } = await this.fetchRates();
      rates.set('USD', 1);
      this.last = { fetchedAt: this.opts.clock.now(), rates, quotes };
    } catch (err) {
      this.opts.log.error({ source: this.opts.name, err: (err as Error).message }, 'fetching official FX rates failed; keeping the last ones');
    }
  }
}
