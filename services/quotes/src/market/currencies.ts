/** BRL plus the PTAX currency set: what brapi converts quotes and history into. */
export const CURRENCIES = ['BRL', 'USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'DKK', 'NOK', 'SEK'] as const;
export type Currency = (typeof CURRENCIES)[number];
export const DEFAULT_CURRENCY: Currency = 'BRL';

export function isCurrency(v: string): v is Currency {
  return (CURRENCIES as readonly string[]).includes(v);
}

/**
 * Extension: more fiat currencies from PTAX's currency list (BCB `Moedas`). They are served only
 * where an FX source has a rate for them (the ECB reference rates publish most; the simulated FX
 * all); PTAX itself is asked only for CURRENCIES, so its request count per refresh is unchanged.
 */
export const EXTRA_FIAT = ['ARS', 'CLP', 'COP', 'MXN', 'PEN', 'UYU', 'CNY', 'HKD', 'INR', 'KRW', 'SGD', 'TWD', 'NZD', 'ZAR', 'TRY', 'PLN', 'CZK', 'HUF', 'ILS', 'THB', 'IDR', 'MYR', 'PHP', 'SAR', 'AED', 'ISK', 'RON', 'BGN'] as const;

/** Every fiat currency a quote may be asked in (brapi's set first). */
export const FIAT_CURRENCIES: readonly string[] = Object.freeze([...CURRENCIES, ...EXTRA_FIAT]);
const FIAT_SET: ReadonlySet<string> = new Set(FIAT_CURRENCIES);

/**
 * Extension: crypto quote currencies. A price in BTC is the coin's USD price divided by BTC's USD
 * price from the same snapshot; USDT is a USD-pegged stablecoin, so it converts 1:1 like USD.
 */
export const CRYPTO_QUOTES = ['BTC', 'ETH', 'USDT'] as const;
const CRYPTO_SET: ReadonlySet<string> = new Set(CRYPTO_QUOTES);

/** Everything `/api/v2/crypto?currency=` accepts (fiat ones still need a rate to be answered). */
export const QUOTE_CURRENCIES: readonly string[] = Object.freeze([...FIAT_CURRENCIES, ...CRYPTO_QUOTES]);

export function isFiat(v: string): boolean {
  return FIAT_SET.has(v);
}

export function isCryptoQuote(v: string): boolean {
  return CRYPTO_SET.has(v);
}

export function isQuoteCurrency(v: string): boolean {
  return FIAT_SET.has(v) || CRYPTO_SET.has(v);
}

/** Stablecoins pegged 1:1 to the US dollar: priced at exactly 1 USD, converted like dollars. */
export const USD_PEGGED: ReadonlySet<string> = new Set(['USDT', 'USDC', 'DAI', 'TUSD', 'FDUSD', 'USDP', 'BUSD', 'USDD', 'PYUSD', 'USDE', 'GUSD', 'LUSD', 'FRAX']);

/** What `usdRate` reads: the FX rates and the coins' USD prices of one market snapshot. */
export interface RateInputs {
  fx: { rates: ReadonlyMap<string, number> };
  tickers: ReadonlyMap<string, { lastPrice: number }>;
}

/**
 * Units of `currency` per US dollar in one snapshot, or undefined when there is none: fiat from
 * the FX rates, USD-pegged coins exactly 1, other crypto quotes 1 / (the coin's USD price). The
 * one conversion both APIs use, so /api/v2/crypto and /api/v3 agree on every number.
 */
export function usdRate(snap: RateInputs, currency: string): number | undefined {
  if (currency === 'USD' || USD_PEGGED.has(currency)) return 1;
  if (CRYPTO_SET.has(currency) || !FIAT_SET.has(currency)) {
    const p = snap.tickers.get(currency)?.lastPrice;
    return p !== undefined && p > 0 ? 1 / p : undefined;
  }
  const r = snap.fx.rates.get(currency);
  return r !== undefined && r > 0 ? r : undefined;
}
