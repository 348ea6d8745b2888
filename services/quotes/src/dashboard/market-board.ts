import type { Board, MarketData } from '../coingecko/market-data.js';
import { globalView, marketsView } from '../coingecko/views.js';
import type { Origin } from '../origin.js';

/** Most coins the market page receives in one call (the whole board of a typical deployment). */
export const BOARD_MAX = 250;

/** The figures of the market page's header: `/api/v3/global`'s, in the page's currency. */
export interface MarketGlobal {
  totalMarketCap: number;
  totalVolume: number;
  /** Percent of the total market cap that is Bitcoin's; null without market caps. */
  btcDominance: number | null;
  /** Percent change of the summed market cap over 24 h (USD). */
  marketCapChange24h: number;
  /** Coins with a fresh quote. */
  coins: number;
}

/** What the dashboard's market page draws: the ranked board and the global header, from one snapshot. */
export interface MarketBoardJson {
  currency: string;
  asOf: string;
  global: MarketGlobal;
  coins: Record<string, unknown>[];
}

/**
 * The market page's data: `/coins/markets` rows (sparklines, 1h/24h/7d changes) and the header
 * figures of `/global`, both from the same board, so they agree with the CoinGecko API.
 */
export async function marketBoardJson(data: MarketData, board: Board, currency: string, baseUrl: Origin): Promise<MarketBoardJson> {
  const vs = currency.toLowerCase();
  const coins = await marketsView(data, board, { vs, order: 'market_cap_desc', perPage: BOARD_MAX, page: 1, sparkline: true, changes: ['1h', '24h', '7d'], precision: undefined, baseUrl });
  const g = (globalView(data, board) as { data: { total_market_cap: Record<string, number>; total_volume: Record<string, number>; market_cap_percentage: Record<string, number>; market_cap_change_percentage_24h_usd: number; active_cryptocurrencies: number } }).data;
  return {
    currency,
    asOf: new Date(board.asOf * 1000).toISOString(),
    global: {
      totalMarketCap: g.total_market_cap[vs] ?? 0,
      totalVolume: g.total_volume[vs] ?? 0,
      btcDominance: g.market_cap_percentage.btc ?? null,
      marketCapChange24h: g.market_cap_change_percentage_24h_usd,
      coins: g.active_cryptocurrencies,
    },
    coins,
  };
}
