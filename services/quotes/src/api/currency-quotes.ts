import { QuotesError } from '../errors.js';
import { DAY } from '../domain/intervals.js';
import { currencyName } from '../market/currency-names.js';
import { FIAT_CURRENCIES } from '../market/currencies.js';
import type { FxSnapshot } from '../domain/market.js';

/**
 * brapi's fiat currency quotes (`GET /api/v2/currency`, `/api/v2/currency/available`) from the
 * FX rates of one market snapshot: pure functions, the routes are in currency-routes.ts.
 */

export interface CurrencyPair {
  from: string;
  to: string;
}

/** Currencies a pair may name now: USD and every fiat currency with a rate in the snapshot. */
export function pairCurrencies(fx: FxSnapshot): string[] {
  return FIAT_CURRENCIES.filter((c) => c === 'USD' || (fx.rates.get(c) ?? 0) > 0);
}

/**
 * `USD-BRL,EUR-BRL` -> pairs (upper-cased, de-duplicated, order kept). 417 without a value, 400
 * naming every pair that is not two different currencies of `pairCurrencies`, 400 past `maxPairs`
 * (the plan's items per request, as coins on /api/v2/crypto).
 */
export function parsePairs(raw: string | undefined, fx: FxSnapshot, maxPairs: number): CurrencyPair[] {
  const items = [...new Set((raw ?? '').split(',').map((s) => s.trim().toUpperCase()).filter((s) => s !== ''))];
  if (items.length === 0) throw new QuotesError('CURRENCY_MISSING');
  if (items.length > maxPairs) throw new QuotesError('CURRENCY_PAIRS_TOO_MANY', { limit: maxPairs });
  const known = new Set(pairCurrencies(fx));
  const bad: string[] = [];
  const out: CurrencyPair[] = [];
  for (const item of items) {
    const m = /^([A-Z]{3})-([A-Z]{3})$/.exec(item);
    if (m === null || m[1] === m[2] || !known.has(m[1]!) || !known.has(m[2]!)) bad.push(item.slice(0, 16));
    else out.push({ from: m[1]!, to: m[2]! });
  }
  if (bad.length > 0) throw new QuotesError('CURRENCY_PAIR_UNKNOWN', { coins: bad });
  return out;
}

/** brapi's currency record: every value a string, as brapi sends it; `source` is our extension. */
export interface CurrencyQuoteJson {
  fromCurrency: string;
  toCurrency: string;
  name: string;
  high: string;
  low: string;
  bidVariation: string;
  percentageChange: string;
  bidPrice: string;
  askPrice: string;
  updatedAtTimestamp: string;
  updatedAtDate: string;
  /** Where bid and ask come from: `ptax` (a BCB bulletin), else the FX source of the two rates (`ecb`, `simulated`, ...). */
  source: string;
}

/** Six significant digits, at least four decimals (PTAX publishes four), as brapi's decimal strings. */
export function rateText(x: number): string {
  if (!(x > 0) || !Number.isFinite(x)) return '0.0000';
  const decimals = Math.min(12, Math.max(4, 5 - Math.floor(Math.log10(x))));
  return x.toFixed(decimals);
}

const BRASILIA_OFFSET_MS = 3 * 3600 * 1000;

/** `YYYY-MM-DD HH:MM:SS` in Brasília time (UTC-3 all year), as brapi prints `updatedAtDate`. */
export function brasiliaDate(ms: number): string {
  return new Date(ms - BRASILIA_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');
}

/** Units of `to` per unit of `from` at a daily fixing, from USD->X lookups; null without both fixings. */
export type FixingOn = (currency: string, day: number) => number | null;

/**
 * One pair's quote. Bid and ask come from the PTAX bulletin when the pair is official (a PTAX
 * currency against BRL, either way round; inverted for BRL-X), else both are the FX layer's
 * mid rate (to / from through USD). The change is measured against the daily fixing of the day
 * before the quote's (the last earlier one over weekends and holidays), the same fixings that
 * convert history; `bidVariation` is the bid's share of that change.
 */
export function pairQuote(fx: FxSnapshot, pair: CurrencyPair, fxKind: string, fixingOn: FixingOn): CurrencyQuoteJson {
  const { from, to } = pair;
  const usdTo = to === 'USD' ? 1 : (fx.rates.get(to) ?? NaN);
  const usdFrom = from === 'USD' ? 1 : (fx.rates.get(from) ?? NaN);
  const mid = usdTo / usdFrom;
  const direct = to === 'BRL' ? fx.quotes?.get(from) : undefined;
  const inverse = from === 'BRL' ? fx.quotes?.get(to) : undefined;
  let bid = mid;
  let ask = mid;
  let high = mid;
  let low = mid;
  let time = fx.time;
  let source = fx.sources?.get(to === 'USD' ? from : to) ?? fxKind;
  if (direct !== undefined) {
    ({ bid, ask, high, low, time } = direct);
    source = fxKind === 'simulated' ? 'simulated' : 'ptax';
  } else if (inverse !== undefined) {
    [bid, ask, high, low, time] = [1 / inverse.ask, 1 / inverse.bid, 1 / inverse.low, 1 / inverse.high, inverse.time];
    source = fxKind === 'simulated' ? 'simulated' : 'ptax';
  }
  const day = Math.floor(time / 1000 / DAY) - 1;
  const prevTo = to === 'USD' ? 1 : fixingOn(to, day);
  const prevFrom = from === 'USD' ? 1 : fixingOn(from, day);
  // The selling rate is what the fixings record (PTAX's is the closing ask).
  const now = direct !== undefined || inverse !== undefined ? (direct !== undefined ? ask : 1 / (inverse?.ask ?? NaN)) : mid;
  const prev = prevTo === null || prevFrom === null ? null : prevTo / prevFrom;
  const pct = prev === null || !(prev > 0) ? 0 : (now / prev - 1) * 100;
  const names = `${currencyName(from).pt}/${currencyName(to).pt}`;
  return {
    fromCurrency: from,
    toCurrency: to,
    name: names,
    high: rateText(high),
    low: rateText(low),
    bidVariation: (bid * (pct / (100 + pct))).toFixed(Math.max(4, 5 - Math.floor(Math.log10(bid)))),
    percentageChange: pct.toFixed(4),
    bidPrice: rateText(bid),
    askPrice: rateText(ask),
    updatedAtTimestamp: String(Math.floor(time / 1000)),
    updatedAtDate: brasiliaDate(time),
    source,
  };
}

/** `/api/v2/currency/available`: every ordered pair of two currencies with a rate, optionally filtered. */
export function availablePairs(fx: FxSnapshot, search: string | undefined): { currency: string; name: string }[] {
  const codes = pairCurrencies(fx);
  const q = search?.trim().toLowerCase().slice(0, 100) ?? '';
  const out: { currency: string; name: string }[] = [];
  for (const a of codes) {
    for (const b of codes) {
      if (a === b) continue;
      const item = { currency: `${currencyName(a).pt}/${currencyName(b).pt}`, name: `${a}-${b}` };
      if (q === '' || item.currency.toLowerCase().includes(q) || item.name.toLowerCase().includes(q)) out.push(item);
    }
  }
  return out;
}
