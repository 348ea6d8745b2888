import { CURRENCIES, USD_PEGGED } from './currencies.js';
import type { SpotMarket } from './exchange-client.js';

/** Quotes treated as US dollars, most preferred first (used when liquidity is not known yet). */
export const USD_QUOTES: readonly string[] = ['USDT', 'USDC', 'USD', 'FDUSD', 'TUSD', 'DAI', 'USDP', 'BUSD'];
const FIATS: ReadonlySet<string> = new Set(CURRENCIES.filter((c) => c !== 'USD'));

export interface Pair {
  exchange: string;
  /** ccxt unified symbol, e.g. `BTC/USDT`. */
  symbol: string;
  base: string;
  quote: string;
  /** 'usd': a USD-stable quote (1:1); 'fiat': converted at the live FX rate. */
  kind: 'usd' | 'fiat';
}

/** Which pairs price which coin, on which exchange; built once from the exchanges' market lists. */
export class PairCatalog {
  /** coin -> exchange -> candidate pairs. */
  private readonly byCoin = new Map<string, Map<string, Pair[]>>();
  /** Pairs between a USD-stable coin and a fiat currency (USDT/BRL, EUR/USDT): exchange-derived FX. */
  readonly fxPairs: Pair[] = [];

  constructor(marketsByExchange: ReadonlyMap<string, readonly SpotMarket[]>, fiatPairs: readonly string[]) {
    const fiatAllowed = new Set(fiatPairs);
    for (const [exchange, markets] of marketsByExchange) {
      for (const m of markets) {
        const usdQuote = USD_QUOTES.includes(m.quote);
        const fiatQuote = FIATS.has(m.quote);
        if ((USD_PEGGED.has(m.base) || USD_QUOTES.includes(m.base)) && fiatQuote) this.fxPairs.push({ exchange, symbol: m.symbol, base: m.base, quote: m.quote, kind: 'fiat' });
        if (FIATS.has(m.base) && usdQuote) this.fxPairs.push({ exchange, symbol: m.symbol, base: m.base, quote: m.quote, kind: 'usd' });
        if (FIATS.has(m.base)) continue; // EUR/USDT is a currency, not a coin
        let kind: Pair['kind'] | undefined;
        if (usdQuote) kind = 'usd';
        // A pegged coin is priced at 1 USD whatever it trades against, so any fiat pair lists it.
        else if (fiatQuote && (fiatAllowed.has(m.quote) || USD_PEGGED.has(m.base))) kind = 'fiat';
        if (kind === undefined || m.base === m.quote) continue;
        let perEx = this.byCoin.get(m.base);
        if (perEx === undefined) this.byCoin.set(m.base, (perEx = new Map<string, Pair[]>()));
        const list = perEx.get(exchange) ?? [];
        list.push({ exchange, symbol: m.symbol, base: m.base, quote: m.quote, kind });
        perEx.set(exchange, list);
      }
    }
  }

  coins(): string[] {
    return [...this.byCoin.keys()].sort();
  }

  pairs(coin: string): ReadonlyMap<string, readonly Pair[]> {
    return this.byCoin.get(coin) ?? new Map();
  }

  /** USD-stable pairs of a coin on the first exchange (in `order`) that has one, by quote preference. */
  candlePairs(coin: string, order: readonly string[]): Pair[] {
    const perEx = this.byCoin.get(coin);
    if (perEx === undefined) return [];
    for (const ex of order) {
      const usd = (perEx.get(ex) ?? []).filter((p) => p.kind === 'usd');
      if (usd.length > 0) return usd.sort((a, b) => USD_QUOTES.indexOf(a.quote) - USD_QUOTES.indexOf(b.quote));
    }
    return [];
  }
}
