import { DAY, utcDate } from '../domain/intervals.js';
import { CURRENCIES } from './currencies.js';
import type { HttpGetter } from './http-json.js';
import type { OfficialLatest, OfficialRates } from './official-latest.js';
import type { DailyRate, FxQuote, FxSnapshot, FxSource } from '../domain/market.js';

/** One bulletin of the PTAX OData service. */
interface PtaxRow {
  cotacaoCompra?: unknown;
  cotacaoVenda?: unknown;
  dataHoraCotacao?: unknown;
  tipoBoletim?: unknown;
}

/** `YYYY-MM-DD` -> PTAX's `MM-DD-YYYY`. */
const ptaxDate = (iso: string): string => `${iso.slice(5, 7)}-${iso.slice(8, 10)}-${iso.slice(0, 4)}`;
const isoDay = (d: string): number => Date.parse(`${d}T00:00:00Z`) / 1000;
/** Brasília is UTC-3 all year (no daylight saving since 2019). */
const BRASILIA_OFFSET = 3 * 3600;
/** Longest stretch without a bulletin (Carnival + weekend) plus margin. */
const LOOKBACK_DAYS = 10;
const CHUNK_DAYS = 366;

function parseRows(body: string): PtaxRow[] {
  const v = JSON.parse(body) as { value?: unknown };
  if (v === null || typeof v !== 'object' || !Array.isArray(v.value)) throw new TypeError('no "value" array');
  return v.value as PtaxRow[];
}

/** `2026-03-13 13:04:29.123` (Brasília local time, 3 to 6 decimals or none) -> milliseconds. */
function bulletinTime(local: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})/.exec(local);
  if (m === null) return undefined;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) + BRASILIA_OFFSET * 1000;
}

/**
 * The quote of `date` from one day's bulletins: bid and ask of its closing bulletin, the day's
 * highest ask and lowest bid over all of its bulletins (opening, intermediate, closing).
 */
function dayQuote(rows: readonly PtaxRow[], date: string): FxQuote | undefined {
  let closing: FxQuote | undefined;
  let high = 0;
  let low = Infinity;
  for (const r of rows) {
    if (typeof r.dataHoraCotacao !== 'string' || r.dataHoraCotacao.slice(0, 10) !== date) continue;
    if (typeof r.cotacaoCompra !== 'number' || typeof r.cotacaoVenda !== 'number' || !(r.cotacaoCompra > 0) || !(r.cotacaoVenda > 0)) continue;
    high = Math.max(high, r.cotacaoVenda);
    low = Math.min(low, r.cotacaoCompra);
    const time = bulletinTime(r.dataHoraCotacao);
    if (typeof r.tipoBoletim === 'string' && r.tipoBoletim.startsWith('Fechamento') && time !== undefined) closing = { bid: r.cotacaoCompra, ask: r.cotacaoVenda, high: 0, low: 0, time };
  }
  return closing === undefined ? undefined : { ...closing, high: Math.max(high, closing.ask), low: Math.min(low, closing.bid) };
}

/** The closing bulletin (the official PTAX) of each day, keyed by date. */
function closings(rows: readonly PtaxRow[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) {
    if (typeof r.tipoBoletim === 'string' && !r.tipoBoletim.startsWith('Fechamento')) continue;
    if (typeof r.cotacaoVenda !== 'number' || !(r.cotacaoVenda > 0) || typeof r.dataHoraCotacao !== 'string') throw new TypeError('malformed bulletin');
    out.set(r.dataHoraCotacao.slice(0, 10), r.cotacaoVenda);
  }
  return out;
}

/**
 * Banco Central do Brasil PTAX (Olinda OData): BRL per unit of each PTAX currency, closing
 * bulletin. USD->BRL is the dollar's PTAX; USD->X is PTAX(USD) / PTAX(X) of the same day.
 * Weekends and holidays have no bulletin (empty answers) and are carried by the callers.
 */
export class PtaxFx implements FxSource {
  readonly kind = 'ptax';
  readonly currencies: readonly string[] = CURRENCIES.filter((c) => c !== 'USD');
  private latestCache: OfficialLatest | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly http: HttpGetter,
    private readonly now: () => number,
  ) {}

  /** Wires the cache that decides refresh and staleness (built by the composition root). */
  useLatestCache(cache: OfficialLatest): void {
    this.latestCache = cache;
  }

  private dayUrl(currency: string, isoDate: string): string {
    return `${this.baseUrl}/CotacaoMoedaDia(moeda=@moeda,dataCotacao=@dataCotacao)?@moeda='${currency}'&@dataCotacao='${ptaxDate(isoDate)}'&$format=json`;
  }

  private periodUrl(currency: string, from: string, to: string): string {
    return `${this.baseUrl}/CotacaoMoedaPeriodo(moeda=@moeda,dataInicial=@dataInicial,dataFinalCotacao=@dataFinalCotacao)?@moeda='${currency}'&@dataInicial='${ptaxDate(from)}'&@dataFinalCotacao='${ptaxDate(to)}'&$format=json`;
  }

  /** The latest closing PTAX of a currency: today in Brasília, else the days before. */
  async lastClosing(currency: string): Promise<{ date: string; rate: number; quote: FxQuote | undefined } | undefined> {
    const today = Math.floor((this.now() / 1000 - BRASILIA_OFFSET) / DAY) * DAY;
    for (let i = 0; i <= LOOKBACK_DAYS; i++) {
      const d = utcDate(today - i * DAY);
      const rows = await this.http.get('ptax', this.dayUrl(currency, d), parseRows);
      const c = closings(rows).get(d);
      if (c !== undefined) return { date: d, rate: c, quote: dayQuote(rows, d) };
    }
    return undefined;
  }

  /**
   * USD->X for every PTAX currency from the latest closing bulletins, and each currency's
   * bid/ask against BRL (the same requests: a day's answer carries all of its bulletins).
   */
  async fetchLatest(): Promise<OfficialRates> {
    const usd = await this.lastClosing('USD');
    if (usd === undefined) throw new Error('PTAX has no USD closing bulletin in the last days');
    const rates = new Map<string, number>([['BRL', usd.rate]]);
    const quotes = new Map<string, FxQuote>();
    if (usd.quote !== undefined) quotes.set('USD', usd.quote);
    for (const c of this.currencies) {
      if (c === 'BRL') continue;
      const x = await this.lastClosing(c);
      if (x === undefined) continue;
      rates.set(c, usd.rate / x.rate);
      if (x.quote !== undefined) quotes.set(c, x.quote);
    }
    return { rates, quotes };
  }

  latest(): Promise<FxSnapshot> {
    if (this.latestCache === undefined) return this.fetchLatest().then(({ rates, quotes }) => (quotes === undefined ? { time: this.now(), rates: rates.set('USD', 1) } : { time: this.now(), rates: rates.set('USD', 1), quotes }));
    return this.latestCache.get();
  }

  private async series(currency: string, from: string, to: string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (let s = isoDay(from); s <= isoDay(to); s += CHUNK_DAYS * DAY) {
      const e = Math.min(isoDay(to), s + (CHUNK_DAYS - 1) * DAY);
      const rows = await this.http.get('ptax', this.periodUrl(currency, utcDate(s), utcDate(e)), parseRows);
      for (const [d, r] of closings(rows)) out.set(d, r);
    }
    return out;
  }

  async daily(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]> {
    if (!this.currencies.includes(currency) || fromDate > toDate) return [];
    const usd = await this.series('USD', fromDate, toDate);
    const other = currency === 'BRL' ? undefined : await this.series(currency, fromDate, toDate);
    const out: DailyRate[] = [];
    for (const [date, brlPerUsd] of [...usd].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (other === undefined) out.push({ date, rate: brlPerUsd });
      else {
        const brlPerX = other.get(date);
        if (brlPerX !== undefined) out.push({ date, rate: brlPerUsd / brlPerX });
      }
    }
    return out;
  }
}
