/**
 * How many digits every number in an answer keeps (documented in docs/quotes.md, "Value
 * precision"). Values are computed at full double precision and rounded once, here, when a
 * response is built; nothing rounds twice and nothing reaches a client with float noise such as
 * `92392.02801000001`.
 *
 * - prices (price, change, day low/high, history open/high/low/close) and percentages:
 *   PRICE_DIGITS significant digits, whatever the size, so PEPE at 0.0000123456789 keeps its
 *   meaning as well as BTC in JPY; more than any exchange's tick size, so no real information is
 *   lost, while the noise (the 16th and 17th digits) is gone.
 * - FX rates (`currencyRateFromUSD`): RATE_DIGITS significant digits (PTAX publishes 4 decimals;
 *   cross rates are quotients and would otherwise run to 17 digits).
 * - amounts (volumes, market caps): the currency's minor units (cents; whole yen), but never more
 *   than MAX_DIGITS significant digits, which is all a double holds exactly.
 */

export const PRICE_DIGITS = 10;
export const RATE_DIGITS = 12;
/** A double round-trips any decimal of up to 15 significant digits. */
export const MAX_DIGITS = 15;

/** ISO 4217 minor units of the output currencies that differ from the usual 2; BTC and ETH amounts keep 8 decimals (satoshis). */
const MINOR_UNITS: Readonly<Record<string, number>> = Object.freeze({ JPY: 0, KRW: 0, CLP: 0, ISK: 0, BTC: 8, ETH: 8 });

export function minorUnits(currency: string): number {
  return MINOR_UNITS[currency] ?? 2;
}

/** Exact powers of ten (10^0 .. 10^22 are representable without error). */
const POW10: readonly number[] = Array.from({ length: 23 }, (_, i) => 10 ** i);

/** floor(log10(|x|)) for finite x != 0, exact at powers of ten (Math.log10 can land just below). */
function exponent(x: number): number {
  const a = Math.abs(x);
  let e = Math.floor(Math.log10(a));
  if (e >= -22 && e < 22) {
    const p = e >= 0 ? POW10[e + 1]! : 1 / POW10[-e - 1]!;
    if (a >= p) e++;
  }
  return e;
}

/**
 * `x` rounded to at most `decimals` decimal places and at most `sig` significant digits
 * (sig <= MAX_DIGITS), as the double that prints as that decimal. The one rounding function every
 * output value goes through.
 */
export function roundValue(x: number, sig: number, decimals = Infinity): number {
  if (!Number.isFinite(x) || x === 0) return x === 0 ? 0 : x;
  const e = exponent(x);
  const d = Math.min(decimals, Math.min(sig, MAX_DIGITS) - 1 - e);
  let out: number;
  if (d >= 0 && d <= 22) {
    // n has at most MAX_DIGITS digits, so n / 10^d (one correctly rounded division) prints as n's digits.
    const f = POW10[d]!;
    out = Math.round(x * f) / f;
  } else if (d < 0 && d >= -22) {
    const f = POW10[-d]!;
    out = Math.round(x / f) * f;
  } else {
    // Beyond the exact powers of ten (values below 1e-12 or above 1e22): the library rounding.
    out = Number(x.toPrecision(Math.max(1, Math.min(MAX_DIGITS, e + 1 + d))));
  }
  return out === 0 ? 0 : out; // never -0
}

/** The value formats of one response currency. */
export interface ValueFormat {
  price(x: number): number;
  percent(x: number): number;
  rate(x: number): number;
  amount(x: number): number;
  /** `"<low> - <high>"` of two prices, as brapi's regularMarketDayRange. */
  dayRange(low: number, high: number): string;
}

const formats = new Map<string, ValueFormat>();

/** The formats for `currency` (built once per currency). */
export function valueFormat(currency: string): ValueFormat {
  let f = formats.get(currency);
  if (f === undefined) {
    const minor = minorUnits(currency);
    const price = (x: number): number => roundValue(x, PRICE_DIGITS);
    f = Object.freeze({
      price,
      percent: price,
      rate: (x: number): number => roundValue(x, RATE_DIGITS),
      amount: (x: number): number => roundValue(x, MAX_DIGITS, minor),
      dayRange: (low: number, high: number): string => `${price(low)} - ${price(high)}`,
    });
    formats.set(currency, f);
  }
  return f;
}
