import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CoinIds } from './coin-ids.js';

export interface CoinInfo {
  symbol: string;
  name: string;
}

const require = createRequire(import.meta.url);

/** Where the `cryptocurrencies` list gives a symbol to another, older coin. */
export const NAME_OVERRIDES: Readonly<Record<string, string>> = Object.freeze({ TON: 'Toncoin', RNDR: 'Render', MATIC: 'Polygon', FIL: 'Filecoin' });

/** Symbol -> name from the `cryptocurrencies` package (CryptoCompare's list). */
export function loadCoinNames(): Readonly<Record<string, string>> {
  const file = require.resolve('cryptocurrencies/cryptocurrencies.json');
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
}

/** Directory of the colour SVG icons of the `cryptocurrency-icons` package (CC0). */
export function iconsDirectory(): string {
  return join(dirname(require.resolve('cryptocurrency-icons/manifest.json')), 'svg', 'color');
}

/** The coins this deployment serves, with display names; built once at start-up. */
export class CoinCatalog {
  private readonly bySymbol: ReadonlyMap<string, CoinInfo>;
  /** Sorted symbols, so /available answers without sorting per request. */
  readonly symbols: readonly string[];
  /** CoinGecko ids of the listed coins (market/coin-ids.ts). */
  readonly ids: CoinIds;
  /** Lower-case names, per symbol, for name search. */
  private readonly lowerNames: ReadonlyMap<string, string>;

  constructor(symbols: readonly string[], names: Readonly<Record<string, string>>, overrides: Readonly<Record<string, string>> = NAME_OVERRIDES) {
    const m = new Map<string, CoinInfo>();
    for (const s of symbols) m.set(s, { symbol: s, name: overrides[s] ?? names[s] ?? s });
    this.bySymbol = m;
    this.symbols = Object.freeze([...m.keys()].sort());
    this.ids = new CoinIds(this.symbols, (s) => m.get(s)?.name ?? s);
    this.lowerNames = new Map([...m.values()].map((c) => [c.symbol, c.name.toLowerCase()]));
  }

  get(symbol: string): CoinInfo | undefined {
    return this.bySymbol.get(symbol);
  }

  /**
   * Case-insensitive substring match on the symbol or the name (`bitcoin` finds BTC, BCH and
   * WBTC), sorted by symbol.
   */
  search(term: string | undefined): string[] {
    if (term === undefined || term === '') return [...this.symbols];
    const t = term.toUpperCase();
    const lower = term.toLowerCase();
    return this.symbols.filter((s) => s.includes(t) || (this.lowerNames.get(s)?.includes(lower) ?? false));
  }
}
