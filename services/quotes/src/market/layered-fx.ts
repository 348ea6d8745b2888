import type { Logger } from 'pino';
import type { UpstreamCounters } from './retry.js';
import type { DailyRate, FxQuote, FxSnapshot, FxSource } from '../domain/market.js';

/**
 * Several FX sources in order of preference: per currency, the first source with a rate wins
 * (live and daily alike). Where two official sources both quote a currency and disagree by more
 * than `crossCheckPercent`, a warning is logged and counted (the preferred rate is still used).
 */
export class LayeredFx implements FxSource {
  readonly kind: string;
  readonly currencies: readonly string[];
  constructor(
    private readonly sources: readonly FxSource[],
    private readonly log: Logger,
    private readonly counters: UpstreamCounters,
    private readonly crossCheckPercent = 2,
  ) {
    this.kind = sources.map((s) => s.kind).join('+');
    this.currencies = [...new Set(sources.flatMap((s) => s.currencies))];
  }

  async latest(): Promise<FxSnapshot> {
    const got = await Promise.allSettled(this.sources.map((s) => s.latest()));
    const rates = new Map<string, number>([['USD', 1]]);
    const from = new Map<string, { kind: string; rate: number }>();
    // Official bid/ask quotes: the first source that publishes one for a currency.
    const quotes = new Map<string, FxQuote>();
    let time = Infinity;
    for (const [i, r] of got.entries()) {
      const src = this.sources[i]!;
      if (r.status === 'rejected') {
        this.log.warn({ source: src.kind, err: (r.reason as Error).message }, 'FX source failed; using the next one');
        continue;
      }
      let used = false;
      for (const [cur, q] of r.value.quotes ?? []) if (!quotes.has(cur)) quotes.set(cur, q);
      for (const [cur, rate] of r.value.rates) {
        if (cur === 'USD' || !(rate > 0)) continue;
        const prev = from.get(cur);
        if (prev === undefined) {
          rates.set(cur, rate);
          from.set(cur, { kind: src.kind, rate });
          used = true;
        } else if (src.kind !== 'exchange' && prev.kind !== 'exchange') {
          const dev = (Math.abs(rate - prev.rate) / prev.rate) * 100;
          if (dev > this.crossCheckPercent) {
            this.counters.add(`fx.crosscheck.${cur}`);
            this.log.warn({ currency: cur, [prev.kind]: prev.rate, [src.kind]: rate, deviationPercent: Math.round(dev * 100) / 100 }, 'official FX sources disagree');
          }
        }
      }
      if (used) time = Math.min(time, r.value.time);
    }
    if (from.size === 0) throw new Error('no FX source answered');
    const sources = new Map([...from].map(([cur, f]) => [cur, f.kind]));
    return quotes.size === 0 ? { time, rates, sources } : { time, rates, quotes, sources };
  }

  async daily(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]> {
    let lastErr: unknown;
    for (const s of this.sources) {
      if (!s.currencies.includes(currency)) continue;
      try {
        const rows = await s.daily(currency, fromDate, toDate);
        if (rows.length > 0) return rows;
      } catch (err) {
        lastErr = err;
        this.log.warn({ source: s.kind, currency, err: (err as Error).message }, 'daily FX fetch failed; trying the next source');
      }
    }
    if (lastErr !== undefined) throw lastErr instanceof Error ? lastErr : new Error('daily FX fetch failed', { cause: lastErr });
    return [];
  }
}
