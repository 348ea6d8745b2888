/** BRL plus the PTAX currency set: what brapi converts quotes and history into. */
export const CURRENCIES = ['BRL', 'USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'DKK', 'NOK', 'SEK'] as const;
export type Currency = (typeof CURRENCIES)[number];
export const DEFAULT_CURRENCY: Currency = 'BRL';

export function isCurrency(v: string): v is Currency {
  return (CURRENCIES as readonly string[]).includes(v);
}

/** Stablecoins pegged 1:1 to the US dollar: priced at exactly 1 USD, converted like dollars. */
export const USD_PEGGED: ReadonlySet<string> = new Set(['USDT', 'USDC', 'DAI', 'TUSD', 'FDUSD', 'USDP', 'BUSD', 'USDD', 'PYUSD', 'USDE', 'GUSD', 'LUSD', 'FRAX']);
