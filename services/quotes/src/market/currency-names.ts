/**
 * Names and unit signs of the fiat currencies we quote (market/currencies.ts): English for the
 * CoinGecko-compatible API (`/exchange_rates`), Portuguese for brapi's currency endpoints, whose
 * pair names read "Dólar Americano/Real Brasileiro".
 */
export interface CurrencyName {
  en: string;
  pt: string;
  unit: string;
}

const NAMES: Readonly<Record<string, CurrencyName>> = Object.freeze({
  BRL: { en: 'Brazil Real', pt: 'Real Brasileiro', unit: 'R$' },
  USD: { en: 'US Dollar', pt: 'Dólar Americano', unit: '$' },
  EUR: { en: 'Euro', pt: 'Euro', unit: '€' },
  GBP: { en: 'British Pound Sterling', pt: 'Libra Esterlina', unit: '£' },
  JPY: { en: 'Japanese Yen', pt: 'Iene Japonês', unit: '¥' },
  CHF: { en: 'Swiss Franc', pt: 'Franco Suíço', unit: 'Fr.' },
  CAD: { en: 'Canadian Dollar', pt: 'Dólar Canadense', unit: 'CA$' },
  AUD: { en: 'Australian Dollar', pt: 'Dólar Australiano', unit: 'A$' },
  DKK: { en: 'Danish Krone', pt: 'Coroa Dinamarquesa', unit: 'kr.' },
  NOK: { en: 'Norwegian Krone', pt: 'Coroa Norueguesa', unit: 'kr' },
  SEK: { en: 'Swedish Krona', pt: 'Coroa Sueca', unit: 'kr' },
  ARS: { en: 'Argentine Peso', pt: 'Peso Argentino', unit: '$' },
  CLP: { en: 'Chilean Peso', pt: 'Peso Chileno', unit: 'CLP$' },
  COP: { en: 'Colombian Peso', pt: 'Peso Colombiano', unit: 'COL$' },
  MXN: { en: 'Mexican Peso', pt: 'Peso Mexicano', unit: 'MX$' },
  PEN: { en: 'Peruvian Sol', pt: 'Sol Peruano', unit: 'S/' },
  UYU: { en: 'Uruguayan Peso', pt: 'Peso Uruguaio', unit: '$U' },
  CNY: { en: 'Chinese Yuan', pt: 'Yuan Chinês', unit: '¥' },
  HKD: { en: 'Hong Kong Dollar', pt: 'Dólar de Hong Kong', unit: 'HK$' },
  INR: { en: 'Indian Rupee', pt: 'Rúpia Indiana', unit: '₹' },
  KRW: { en: 'South Korean Won', pt: 'Won Sul-Coreano', unit: '₩' },
  SGD: { en: 'Singapore Dollar', pt: 'Dólar de Cingapura', unit: 'S$' },
  TWD: { en: 'New Taiwan Dollar', pt: 'Novo Dólar Taiwanês', unit: 'NT$' },
  NZD: { en: 'New Zealand Dollar', pt: 'Dólar Neozelandês', unit: 'NZ$' },
  ZAR: { en: 'South African Rand', pt: 'Rand Sul-Africano', unit: 'R' },
  TRY: { en: 'Turkish Lira', pt: 'Lira Turca', unit: '₺' },
  PLN: { en: 'Polish Zloty', pt: 'Zloty Polonês', unit: 'zł' },
  CZK: { en: 'Czech Koruna', pt: 'Coroa Checa', unit: 'Kč' },
  HUF: { en: 'Hungarian Forint', pt: 'Florim Húngaro', unit: 'Ft' },
  ILS: { en: 'Israeli New Shekel', pt: 'Novo Shekel Israelense', unit: '₪' },
  THB: { en: 'Thai Baht', pt: 'Baht Tailandês', unit: '฿' },
  IDR: { en: 'Indonesian Rupiah', pt: 'Rupia Indonésia', unit: 'Rp' },
  MYR: { en: 'Malaysian Ringgit', pt: 'Ringgit Malaio', unit: 'RM' },
  PHP: { en: 'Philippine Peso', pt: 'Peso Filipino', unit: '₱' },
  SAR: { en: 'Saudi Riyal', pt: 'Rial Saudita', unit: 'SR' },
  AED: { en: 'United Arab Emirates Dirham', pt: 'Dirham dos Emirados', unit: 'DH' },
  ISK: { en: 'Icelandic Króna', pt: 'Coroa Islandesa', unit: 'kr' },
  RON: { en: 'Romanian Leu', pt: 'Leu Romeno', unit: 'lei' },
  BGN: { en: 'Bulgarian Lev', pt: 'Lev Búlgaro', unit: 'лв' },
});

/** The names of a fiat currency code (upper case); the code itself for one not in the table. */
export function currencyName(code: string): CurrencyName {
  return NAMES[code] ?? { en: code, pt: code, unit: code };
}
