import { XMLParser } from 'fast-xml-parser';
import { FIAT_CURRENCIES } from './currencies.js';
import type { HttpGetter } from './http-json.js';
import type { OfficialLatest } from './official-latest.js';
import type { DailyRate, FxSnapshot, FxSource } from '../domain/market.js';

/** date -> currency -> units per euro. */
type EcbDays = Map<string, Map<string, number>>;

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', removeNSPrefix: true, isArray: (name) => name === 'Cube' });

interface CubeNode {
  time?: unknown;
  currency?: unknown;
  rate?: unknown;
  Cube?: CubeNode[];
}

/** Parses eurofxref-daily.xml / eurofxref-hist.xml: Envelope > Cube > Cube[time] > Cube[currency, rate]. */
export function parseEcbXml(xml: string): EcbDays {
  const doc = parser.parse(xml) as { Envelope?: { Cube?: CubeNode[] } };
  const days = doc.Envelope?.Cube?.[0]?.Cube;
  if (!Array.isArray(days) || days.length === 0) throw new TypeError('no rate cubes in the ECB document');
  const out: EcbDays = new Map();
  for (const d of days) {
    if (typeof d.time !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(d.time)) throw new TypeError('ECB cube without a date');
    const m = new Map<string, number>([['EUR', 1]]);
    for (const c of d.Cube ?? []) {
      const rate = Number(c.rate);
      if (typeof c.currency === 'string' && rate > 0) m.set(c.currency, rate);
    }
    out.set(d.time, m);
  }
  return out;
}

/** USD->X from one day's euro rates: rate(X) / rate(USD). */
function fromEuroRates(m: ReadonlyMap<string, number>, currency: string): number | undefined {
  const usd = m.get('USD');
  const x = m.get(currency);
  return usd === undefined || x === undefined ? undefined : x / usd;
}

/**
 * ECB euro foreign-exchange reference rates (daily ~16:00 CET, TARGET days): an alternative to
 * PTAX and a cross-check of it. All rates are per euro, so USD->X = rate(X) / rate(USD).
 */
export class EcbFx implements FxSource {
  readonly kind = 'ecb';
  readonly currencies: readonly string[] = FIAT_CURRENCIES.filter((c) => c !== 'USD');
  private latestCache: OfficialLatest | undefined;
  private hist: { day: string; data: EcbDays } | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly http: HttpGetter,
    private readonly now: () => number,
  ) {}

  useLatestCache(cache: OfficialLatest): void {
    this.latestCache = cache;
  }

  async fetchLatest(): Promise<Map<string, number>> {
    const days = await this.http.get('ecb', `${this.baseUrl}/eurofxref-daily.xml`, parseEcbXml);
    const newest = [...days.keys()].sort().pop();
    const m = newest === undefined ? undefined : days.get(newest);
    if (m === undefined) throw new Error('ECB daily file has no rates');
    const rates = new Map<string, number>();
    for (const c of this.currencies) {
      const r = fromEuroRates(m, c);
      if (r !== undefined) rates.set(c, r);
    }
    return rates;
  }

  latest(): Promise<FxSnapshot> {
    if (this.latestCache === undefined) return this.fetchLatest().then((rates) => ({ time: this.now(), rates: rates.set('USD', 1) }));
    return this.latestCache.get();
  }

  async daily(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]> {
    if (!this.currencies.includes(currency)) return [];
    const today = new Date(this.now()).toISOString().slice(0, 10);
    // The whole-history file is one download; fetched at most once per UTC day.
    if (this.hist?.day !== today) this.hist = { day: today, data: await this.http.get('ecb', `${this.baseUrl}/eurofxref-hist.xml`, parseEcbXml) };
    const out: DailyRate[] = [];
    for (const [date, m] of this.hist.data) {
      if (date < fromDate || date > toDate) continue;
      const r = fromEuroRates(m, currency);
      if (r !== undefined) out.push({ date, rate: r });
    }
    return out.sort((a, b) => (a.date < b.date ? -1 : 1));
  }
}
