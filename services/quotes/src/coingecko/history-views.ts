import { QuotesError } from '../errors.js';
import { DAY } from '../domain/intervals.js';
import { currencyName } from '../market/currency-names.js';
import { isFiat, USD_PEGGED } from '../market/currencies.js';
import { badParam } from './cg-errors.js';
import { changePct, conversion, formats, iconUrl, type ChangeWindow } from './views.js';
import type { Board, BoardCoin, MarketData } from './market-data.js';

/**
 * Views of /coins/{id}/history, /exchange_rates and /coins/top_gainers_losers, from the same
 * board, candles and FX fixings as the other /api/v3 views (so their numbers agree with
 * /market_chart, /simple/price and /coins/markets).
 */

/**
 * The `date` of /coins/{id}/history: `dd-mm-yyyy` (CoinGecko's documented form) or `yyyy-mm-dd`
 * (the form its SDK documents). Returns the UTC midnight of that day (Unix seconds).
 */
export function historyDate(raw: string): number {
  const dmy = /^(\d{2})-(\d{2})-(\d{4})$/.exec(raw);
  const ymd = /^(\d{4})-(\d{2})-(\d{2})$/.exec(raw);
  const [y, m, d] = dmy !== null ? [dmy[3], dmy[2], dmy[1]] : ymd !== null ? [ymd[1], ymd[2], ymd[3]] : [];
  if (y !== undefined && m !== undefined && d !== undefined) {
    const t = Date.UTC(Number(y), Number(m) - 1, Number(d));
    const back = new Date(t);
    // Date.UTC rolls 31-02 over into March: only a real calendar day is accepted.
    if (back.getUTCFullYear() === Number(y) && back.getUTCMonth() === Number(m) - 1 && back.getUTCDate() === Number(d)) return t / 1000;
  }
  throw badParam("invalid 'date' parameter: expected dd-mm-yyyy (or yyyy-mm-dd)");
}

export interface HistoryParams {
  /** UTC midnight of the requested day (Unix seconds). */
  day: number;
  localization: boolean;
  baseUrl: string;
}

/**
 * `/coins/{id}/history`: the coin at 00:00 UTC of the day, i.e. the close of the daily candle
 * that ends then (the day before's), in every vs_currency of the board: fiat at the FX fixing of
 * that candle's day (carried over weekends), USD-pegged 1:1, a crypto vs_currency by that coin's
 * own daily close. Exactly the daily `/market_chart` point at that instant. Market cap is the
 * close times today's circulating supply (historical supply is not tracked); total volume is the
 * candle's traded value. No candle (before the coin's history, or a future day): CoinGecko's
 * answer for unknown data, the coin without `market_data`.
 */
export async function historyView(data: MarketData, board: Board, c: BoardCoin, p: HistoryParams): Promise<Record<string, unknown>> {
  const icon = iconUrl(p.baseUrl, c.symbol);
  const out: Record<string, unknown> = { id: c.id, symbol: c.symbol.toLowerCase(), name: c.name };
  if (p.localization) out.localization = { en: c.name };
  out.image = { thumb: icon, small: icon };
  const closeOf = async (symbol: string): Promise<{ close: number; volume: number | null } | undefined> => {
    if (p.day > board.asOf) return undefined;
    const points = await data.series(symbol, '1d', p.day - DAY, p.day);
    const k = points.find((x) => x.time === p.day - DAY && x.closeTime === p.day);
    return k === undefined || !(k.close > 0) ? undefined : { close: k.close, volume: k.volume };
  };
  const k = await closeOf(c.symbol);
  if (k === undefined) return out;
  const supply = c.ticker.circulatingSupply;
  const closeDay = p.day / DAY - 1;
  const current_price: Record<string, number> = {};
  const market_cap: Record<string, number> = {};
  const total_volume: Record<string, number> = {};
  for (const vs of board.vsCurrencies) {
    const upper = vs.toUpperCase();
    let rate: number | null | undefined;
    if (upper === 'USD' || USD_PEGGED.has(upper)) rate = 1;
    else if (isFiat(upper)) rate = (await data.fxRateOn(upper))(closeDay);
    else {
      const q = await closeOf(upper);
      rate = q === undefined ? undefined : 1 / q.close;
    }
    if (rate === null || rate === undefined || !(rate > 0)) continue;
    const fmt = formats(vs, undefined);
    current_price[vs] = fmt.price(k.close * rate);
    market_cap[vs] = supply === undefined ? 0 : fmt.amount(k.close * supply * rate);
    if (k.volume !== null) total_volume[vs] = fmt.amount(k.volume * rate);
  }
  out.market_data = { current_price, market_cap, total_volume };
  out.community_data = { facebook_likes: null, reddit_average_posts_48h: 0, reddit_average_comments_48h: 0, reddit_subscribers: 0, reddit_accounts_active_48h: 0 };
  out.developer_data = { forks: 0, stars: 0, subscribers: 0, total_issues: 0, closed_issues: 0, pull_requests_merged: 0, pull_request_contributors: 0, code_additions_deletions_4_weeks: { additions: 0, deletions: 0 }, commit_count_4_weeks: 0 };
  out.public_interest_stats = { alexa_rank: null, bing_matches: null };
  return out;
}

/** `/exchange_rates`: BTC in every vs_currency of the board, then bits and sats; values as /simple/price prices BTC. */
export function exchangeRatesView(data: MarketData, board: Board): { rates: Record<string, { name: string; unit: string; value: number; type: string }> } {
  const btc = board.bySymbol.get('BTC');
  if (btc === undefined) throw new QuotesError('QUOTE_UNAVAILABLE', { coins: ['BTC'] });
  const rates: Record<string, { name: string; unit: string; value: number; type: string }> = {};
  const crypto = board.vsCurrencies.filter((vs) => !isFiat(vs.toUpperCase()));
  const fiat = board.vsCurrencies.filter((vs) => isFiat(vs.toUpperCase()));
  // BTC first, as CoinGecko lists it; then the other coins, then fiat.
  for (const vs of [...crypto.filter((v) => v === 'btc'), ...crypto.filter((v) => v !== 'btc'), ...fiat]) {
    const upper = vs.toUpperCase();
    const value = formats(vs, undefined).price(btc.ticker.lastPrice * data.rate(board, vs));
    if (isFiat(upper)) {
      const n = currencyName(upper);
      rates[vs] = { name: n.en, unit: n.unit, value, type: 'fiat' };
    } else rates[vs] = { name: board.bySymbol.get(upper)?.name ?? upper, unit: upper, value, type: 'crypto' };
  }
  rates.bits = { name: 'Bits', unit: 'μBTC', value: 1_000_000, type: 'crypto' };
  rates.sats = { name: 'Satoshi', unit: 'sats', value: 100_000_000, type: 'crypto' };
  return { rates };
}

/** `duration` of /coins/top_gainers_losers. */
export const MOVER_DURATIONS: readonly ChangeWindow[] = ['1h', '24h', '7d', '14d', '30d', '60d', '1y'];
/** Extra `price_change_percentage` windows of /coins/top_gainers_losers. */
export const MOVER_WINDOWS: readonly ChangeWindow[] = ['1h', '24h', '7d', '14d', '30d', '60d', '200d', '1y'];
export const TOP_COINS = ['300', '500', '1000', 'all'] as const;
/** Coins traded below this in 24 h (USD) are left out, as CoinGecko does. */
export const MOVER_MIN_VOLUME_USD = 50_000;
/** Coins per list. */
export const MOVERS_PER_LIST = 30;

export interface MoversParams {
  vs: string;
  duration: ChangeWindow;
  topCoins: (typeof TOP_COINS)[number];
  changes: readonly ChangeWindow[];
  baseUrl: string;
}

/**
 * `/coins/top_gainers_losers`: among the coins ranked within `topCoins` by market cap (`all`:
 * every coin, ranked or not) that traded at least MOVER_MIN_VOLUME_USD in 24 h, the 30 with the
 * largest rise and the 30 with the largest fall over `duration`, measured as /coins/markets
 * measures its change windows. A coin whose change is unknown (no reference close) is left out.
 */
export async function moversView(data: MarketData, board: Board, p: MoversParams): Promise<{ top_gainers: Record<string, unknown>[]; top_losers: Record<string, unknown>[] }> {
  const windows = MOVER_WINDOWS.filter((w) => w === '24h' || w === p.duration || p.changes.includes(w));
  const want: ReadonlySet<ChangeWindow> = new Set(windows);
  const conv = await conversion(data, board, p.vs, want);
  const fmt = formats(p.vs, undefined);
  const limit = p.topCoins === 'all' ? Infinity : Number(p.topCoins);
  const eligible = board.coins.filter((c) => c.ticker.quoteVolume >= MOVER_MIN_VOLUME_USD && (p.topCoins === 'all' || (c.rank !== null && c.rank <= limit)));
  const rows = await Promise.all(
    eligible.map(async (c) => {
      const refs = await data.references(c, board.asOf, want);
      const pct = (w: ChangeWindow): number | null => changePct(c, refs, conv, w);
      return { c, change: pct(p.duration), pct };
    }),
  );
  const known = rows.filter((r): r is typeof r & { change: number } => r.change !== null);
  const item = (r: (typeof known)[number]): Record<string, unknown> => {
    const out: Record<string, unknown> = {
      id: r.c.id,
      symbol: r.c.symbol.toLowerCase(),
      name: r.c.name,
      image: iconUrl(p.baseUrl, r.c.symbol),
      market_cap_rank: r.c.rank,
      [p.vs]: fmt.price(r.c.ticker.lastPrice * conv.now),
      [`${p.vs}_24h_vol`]: fmt.amount(r.c.ticker.quoteVolume * conv.now),
    };
    for (const w of windows) {
      const v = r.pct(w);
      out[`${p.vs}_${w}_change`] = v === null ? null : fmt.pct(v);
    }
    return out;
  };
  const byChange = [...known].sort((a, b) => b.change - a.change || (a.c.id < b.c.id ? -1 : 1));
  const gainers = byChange.filter((r) => r.change > 0).slice(0, MOVERS_PER_LIST);
  const losers = byChange.reverse().filter((r) => r.change < 0).slice(0, MOVERS_PER_LIST);
  return { top_gainers: gainers.map(item), top_losers: losers.map(item) };
}
