import type { Clock } from '../clock.js';
import { DAY, utcDate } from '../domain/intervals.js';
import { CURRENCIES, FIAT_CURRENCIES } from './currencies.js';
import { hashString, octaveNoise, walkOctaves, type Octave } from './price-noise.js';
import type { DailyRate, FxQuote, FxSnapshot, FxSource } from '../domain/market.js';

/** Roughly where USD traded against each currency around the start of 2026. */
const REFERENCE_RATES: Readonly<Record<string, number>> = Object.freeze({
  BRL: 5.4,
  EUR: 0.92,
  GBP: 0.79,
  JPY: 150,
  CHF: 0.88,
  CAD: 1.37,
  AUD: 1.52,
  DKK: 6.87,
  NOK: 10.8,
  SEK: 10.6,
  ARS: 1050,
  CLP: 950,
  COP: 4300,
  MXN: 18.5,
  PEN: 3.75,
  UYU: 42,
  CNY: 7.25,
  HKD: 7.8,
  INR: 85,
  KRW: 1400,
  SGD: 1.35,
  TWD: 32.5,
  NZD: 1.7,
  ZAR: 18.2,
  TRY: 35,
  PLN: 4,
  CZK: 23.5,
  HUF: 385,
  ILS: 3.65,
  THB: 34.5,
  IDR: 16000,
  MYR: 4.5,
  PHP: 58,
  SAR: 3.75,
  AED: 3.6725,
  ISK: 138,
  RON: 4.6,
  BGN: 1.8,
});

export interface SimulatedFxOptions {
  seed: number;
  clock: Clock;
  /** First day with a fixing; earlier history has no rate (prices come out null). Default 2012-01-02. */
  firstDate?: string;
}

/** Half the simulated dealer spread around the mid rate (PTAX's dollar spread is about this). */
const HALF_SPREAD = 0.0001;

function sig6(x: number): number {
  const d = Math.min(12, Math.max(0, 5 - Math.floor(Math.log10(x))));
  const f = 10 ** d;
  return Math.round(x * f) / f;
}

/**
 * Deterministic USD->X rates: daily fixings on business days only (like PTAX/ECB, so weekends
 * exercise the carry-forward rule), and a latest rate that moves every minute.
 */
export class SimulatedFx implements FxSource {
  readonly kind = 'simulated';
  readonly currencies: readonly string[] = FIAT_CURRENCIES.filter((c) => c !== 'USD');
  private readonly clock: Clock;
  private readonly first: number;
  private readonly series = new Map<string, { key: number; ref: number; octaves: Octave[] }>();

  constructor(opts: SimulatedFxOptions) {
    this.clock = opts.clock;
    this.first = Date.parse(`${opts.firstDate ?? '2012-01-02'}T00:00:00Z`) / 1000;
    for (const cur of this.currencies) {
      this.series.set(cur, { key: hashString(`${opts.seed}:fx:${cur}`), ref: REFERENCE_RATES[cur] ?? 1, octaves: walkOctaves(0.1, 3600, 4, 8) });
    }
  }

  private rate(cur: string, t: number): number | undefined {
    const s = this.series.get(cur);
    if (s === undefined) return undefined;
    return sig6(s.ref * Math.exp(octaveNoise(s.key, s.octaves, t)));
  }

  latest(): Promise<FxSnapshot> {
    const asOf = Math.floor(this.clock.now() / 60_000) * 60;
    const rates = new Map<string, number>([['USD', 1]]);
    for (const cur of this.currencies) {
      const r = this.rate(cur, asOf);
      if (r !== undefined) rates.set(cur, r);
    }
    return Promise.resolve({ time: asOf * 1000, rates, quotes: this.quotes(asOf) });
  }

  /**
   * PTAX-like quotes against BRL for brapi's currencies: the mid rate with a small spread, the
   * day's extremes from the path sampled hourly since 00:00 UTC.
   */
  private quotes(asOf: number): Map<string, FxQuote> {
    const out = new Map<string, FxQuote>();
    const mid = (cur: string, t: number): number | undefined => {
      const brl = this.rate('BRL', t);
      const x = cur === 'USD' ? 1 : this.rate(cur, t);
      return brl === undefined || x === undefined ? undefined : brl / x;
    };
    const dayStart = Math.floor(asOf / DAY) * DAY;
    for (const cur of CURRENCIES) {
      if (cur === 'BRL') continue;
      const now = mid(cur, asOf);
      if (now === undefined) continue;
      let high = now;
      let low = now;
      for (let t = dayStart; t < asOf; t += 3600) {
        const m = mid(cur, t);
        if (m !== undefined) [high, low] = [Math.max(high, m), Math.min(low, m)];
      }
      out.set(cur, { bid: sig6(now * (1 - HALF_SPREAD)), ask: sig6(now * (1 + HALF_SPREAD)), high: sig6(high * (1 + HALF_SPREAD)), low: sig6(low * (1 - HALF_SPREAD)), time: asOf * 1000 });
    }
    return out;
  }

  daily(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]> {
    if (!this.series.has(currency)) return Promise.resolve([]);
    const today = Math.floor(this.clock.now() / 1000 / DAY) * DAY;
    const from = Math.max(this.first, Date.parse(`${fromDate}T00:00:00Z`) / 1000);
    const to = Math.min(today, Date.parse(`${toDate}T00:00:00Z`) / 1000);
    const out: DailyRate[] = [];
    for (let d = from; d <= to; d += DAY) {
      const wd = new Date(d * 1000).getUTCDay();
      if (wd === 0 || wd === 6) continue;
      const r = this.rate(currency, d + DAY / 2);
      if (r !== undefined) out.push({ date: utcDate(d), rate: r });
    }
    return Promise.resolve(out);
  }
}
