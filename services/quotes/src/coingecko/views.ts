import type { Plan } from '../accounts/plans.js';
import { bucketStart, DAY, type Interval } from '../domain/intervals.js';
import type { SeriesPoint } from '../history/resample.js';
import { isFiat, USD_PEGGED } from '../market/currencies.js';
import { MAX_DIGITS, roundValue, valueFormat } from '../domain/value-precision.js';
import { badParam } from './cg-errors.js';
import type { Precision } from './cg-params.js';
import { referenceDay, type Board, type BoardCoin, type ChangeWindow, type MarketData, type PriceRefs } from './market-data.js';
import { coinTickersView } from './ticker-views.js';

/**
 * The view models of the CoinGecko-compatible API: plain objects in CoinGecko's field names and
 * order, built from a Board (one market snapshot). `marketsView` is also what the dashboard's
 * market page shows (dashboard/dashboard-market-routes.ts may call it with the session's plan).
 */

export const GECKO_SAYS = '(V3) To the Moon!';

export type MarketOrder = 'market_cap_desc' | 'market_cap_asc' | 'volume_desc' | 'volume_asc' | 'id_asc' | 'id_desc';
export const MARKET_ORDERS: readonly MarketOrder[] = ['market_cap_desc', 'market_cap_asc', 'volume_desc', 'volume_asc', 'id_asc', 'id_desc'];
export type { ChangeWindow } from './market-data.js';
/** `price_change_percentage` windows of /coins/markets. */
export const CHANGE_WINDOWS: readonly ChangeWindow[] = ['1h', '24h', '7d', '14d', '30d', '200d', '1y'];
/** Windows of /coins/{id} market_data. */
const COIN_WINDOWS: readonly ChangeWindow[] = ['1h', '24h', '7d', '14d', '30d', '60d', '200d', '1y'];
const NO_WINDOWS: ReadonlySet<ChangeWindow> = new Set();

export interface MarketsParams {
  vs: string;
  /** Coin ids to keep (CoinGecko's `ids`); undefined keeps all. */
  ids?: readonly string[] | undefined;
  symbols?: readonly string[] | undefined;
  names?: readonly string[] | undefined;
  order: MarketOrder;
  perPage: number;
  page: number;
  sparkline: boolean;
  changes: readonly ChangeWindow[];
  precision: Precision;
  /** Origin of the icon URLs. */
  baseUrl: string;
}

/** Number formats for a vs_currency and a `precision`. */
export interface Formats {
  price(x: number): number;
  amount(x: number): number;
  pct(x: number): number;
}

export function formats(vs: string, precision: Precision): Formats {
  const f = valueFormat(vs.toUpperCase());
  const price = precision === undefined ? (x: number): number => f.price(x) : precision === 'full' ? (x: number): number => x : (x: number): number => roundValue(x, MAX_DIGITS, precision);
  // A change below 1e-9 % is float noise (BTC in BTC), shown as 0.
  return { price, amount: (x: number): number => f.amount(x), pct: (x: number): number => (Math.abs(x) < 1e-9 ? 0 : f.percent(x)) };
}

export const iconUrl = (baseUrl: string, symbol: string): string => `${baseUrl}/icons/${symbol.toLowerCase()}.svg`;
const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Conversion of USD values into a vs_currency now and at the reference instants: a fiat currency
 * at the current rate for 1h and 24h and at the FX fixing of the reference close's day for the
 * longer windows (as the charts convert that close), a crypto vs_currency by that coin's own price
 * at each reference instant.
 */
export interface Conversion {
  now: number;
  /** True for fiat and USD-pegged: the 24 h change is the exchange's own, as on /api/v2. */
  constant: boolean;
  at(k: ChangeWindow): number | undefined;
}

export async function conversion(data: MarketData, board: Board, vs: string, want: ReadonlySet<ChangeWindow>, fxHistory = true): Promise<Conversion> {
  const now = data.rate(board, vs);
  const upper = vs.toUpperCase();
  const quote = board.bySymbol.get(upper);
  if (isFiat(upper) || quote === undefined || now === 1) {
    const days = [...want].map((k) => referenceDay(k, board.asOf));
    if (!fxHistory || upper === 'USD' || USD_PEGGED.has(upper) || days.every((d) => d === undefined)) return { now, constant: true, at: () => now };
    const rateOn = await data.fxRateOn(upper);
    return {
      now,
      constant: true,
      at: (k) => {
        const d = referenceDay(k, board.asOf);
        return d === undefined ? now : (rateOn(d) ?? undefined);
      },
    };
  }
  const refs = await data.references(quote, board.asOf, want);
  return { now, constant: false, at: (k) => (refs[k] !== undefined && refs[k] > 0 ? 1 / refs[k] : undefined) };
}

/** Percent change of a coin's price in the vs_currency between a reference and now; null when unknown. */
export function changePct(c: BoardCoin, refs: PriceRefs, conv: Conversion, k: ChangeWindow): number | null {
  // The exchange's own 24 h change, as /api/v2/crypto's regularMarketChangePercent.
  if (k === '24h' && conv.constant) return c.ticker.priceChangePercent;
  const then = refs[k];
  const r = conv.at(k);
  if (then === undefined || !(then > 0) || r === undefined) return null;
  return ((c.ticker.lastPrice * conv.now) / (then * r) - 1) * 100;
}


function sortCoins(coins: readonly BoardCoin[], order: MarketOrder): BoardCoin[] {
  const out = [...coins];
  switch (order) {
    case 'market_cap_desc':
      return out;
    case 'market_cap_asc':
      return out.reverse();
    case 'volume_desc':
      return out.sort((a, b) => b.ticker.quoteVolume - a.ticker.quoteVolume);
    case 'volume_asc':
      return out.sort((a, b) => a.ticker.quoteVolume - b.ticker.quoteVolume);
    case 'id_asc':
      return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    case 'id_desc':
      return out.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  }
}

/** Coins picked by ids, else names, else symbols (CoinGecko's priority); all without a filter. */
function pick(board: Board, p: { ids?: readonly string[] | undefined; names?: readonly string[] | undefined; symbols?: readonly string[] | undefined }): readonly BoardCoin[] {
  if (p.ids !== undefined) {
    const want = new Set(p.ids);
    return board.coins.filter((c) => want.has(c.id));
  }
  if (p.names !== undefined) {
    const want = new Set(p.names);
    return board.coins.filter((c) => want.has(c.name.toLowerCase()));
  }
  if (p.symbols !== undefined) {
    const want = new Set(p.symbols);
    return board.coins.filter((c) => want.has(c.symbol.toLowerCase()));
  }
  return board.coins;
}

/** `/coins/markets`: one page of ranked coins in the vs_currency. */
export async function marketsView(data: MarketData, board: Board, p: MarketsParams): Promise<Record<string, unknown>[]> {
  const fmt = formats(p.vs, p.precision);
  const want: ReadonlySet<ChangeWindow> = new Set(p.changes);
  const conv = await conversion(data, board, p.vs, want);
  const rate = conv.now;
  const sorted = sortCoins(pick(board, p), p.order);
  const pageCoins = sorted.slice((p.page - 1) * p.perPage, p.page * p.perPage);
  return Promise.all(
    pageCoins.map(async (c) => {
      const t = c.ticker;
      const refs = await data.references(c, board.asOf, want);
      const supply = t.circulatingSupply ?? null;
      const pct24 = changePct(c, refs, conv, '24h');
      const capChange = supply === null ? null : fmt.amount(t.priceChange * supply * rate);
      const out: Record<string, unknown> = {
        id: c.id,
        symbol: c.symbol.toLowerCase(),
        name: c.name,
        image: iconUrl(p.baseUrl, c.symbol),
        current_price: fmt.price(t.lastPrice * rate),
        market_cap: c.capUsd === null ? 0 : fmt.amount(c.capUsd * rate),
        market_cap_rank: c.rank,
        fully_diluted_valuation: null,
        total_volume: fmt.amount(t.quoteVolume * rate),
        high_24h: fmt.price(t.highPrice * rate),
        low_24h: fmt.price(t.lowPrice * rate),
        price_change_24h: fmt.price(t.priceChange * rate),
        price_change_percentage_24h: pct24 === null ? null : fmt.pct(pct24),
        market_cap_change_24h: capChange,
        market_cap_change_percentage_24h: supply === null || pct24 === null ? null : fmt.pct(pct24),
        circulating_supply: supply,
        total_supply: null,
        max_supply: null,
        ath: null,
        ath_change_percentage: null,
        ath_date: null,
        atl: null,
        atl_change_percentage: null,
        atl_date: null,
        roi: null,
        last_updated: iso(t.closeTime),
      };
      if (p.sparkline) {
        const w = await data.week(c.symbol, board.asOf);
        out.sparkline_in_7d = { price: [...w.closes, t.lastPrice].map((x) => fmt.price(x * rate)) };
      }
      for (const k of p.changes) {
        const v = changePct(c, refs, conv, k);
        out[`price_change_percentage_${k}_in_currency`] = v === null ? null : fmt.pct(v);
      }
      return out;
    }),
  );
}


export interface SimplePriceParams {
  ids: readonly string[] | undefined;
  names: readonly string[] | undefined;
  symbols: readonly string[] | undefined;
  vs: readonly string[];
  marketCap: boolean;
  vol: boolean;
  change: boolean;
  lastUpdated: boolean;
  precision: Precision;
}

/** `/simple/price`: `{id: {usd: .., usd_market_cap: .., ..., last_updated_at}}`; unknown ids and currencies are left out. */
export async function simplePriceView(data: MarketData, board: Board, p: SimplePriceParams): Promise<Record<string, Record<string, number | null>>> {
  const coins = pick(board, p);
  const vsList = p.vs.filter((v) => board.vsCurrencies.includes(v));
  const convs = await Promise.all(vsList.map((v) => conversion(data, board, v, NO_WINDOWS)));
  const out: Record<string, Record<string, number | null>> = {};
  for (const c of coins) {
    const t = c.ticker;
    const row: Record<string, number | null> = {};
    vsList.forEach((v, i) => {
      const conv = convs[i]!;
      const fmt = formats(v, p.precision);
      row[v] = fmt.price(t.lastPrice * conv.now);
      if (p.marketCap) row[`${v}_market_cap`] = c.capUsd === null ? 0 : fmt.amount(c.capUsd * conv.now);
      if (p.vol) row[`${v}_24h_vol`] = fmt.amount(t.quoteVolume * conv.now);
      if (p.change) {
        const pct = changePct(c, { '24h': t.openPrice }, conv, '24h');
        row[`${v}_24h_change`] = pct === null ? null : fmt.pct(pct);
      }
    });
    if (p.lastUpdated) row.last_updated_at = Math.floor(t.closeTime / 1000);
    out[c.id] = row;
  }
  return out;
}

/** `/coins/list`. */
export function coinsListView(board: Board, includePlatform: boolean, allCoins: readonly { id: string; symbol: string; name: string }[]): Record<string, unknown>[] {
  void board;
  return [...allCoins]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((c) => (includePlatform ? { id: c.id, symbol: c.symbol.toLowerCase(), name: c.name, platforms: {} } : { id: c.id, symbol: c.symbol.toLowerCase(), name: c.name }));
}

export interface CoinParams {
  marketData: boolean;
  localization: boolean;
  tickers: boolean;
  sparkline: boolean;
  baseUrl: string;
}

/** `/coins/{id}`: the documented subset (docs/quotes.md, "CoinGecko-compatible API"). */
export async function coinView(data: MarketData, board: Board, c: BoardCoin, p: CoinParams): Promise<Record<string, unknown>> {
  const icon = iconUrl(p.baseUrl, c.symbol);
  const t = c.ticker;
  const out: Record<string, unknown> = {
    id: c.id,
    symbol: c.symbol.toLowerCase(),
    name: c.name,
    web_slug: c.id,
    asset_platform_id: null,
    platforms: {},
    detail_platforms: {},
    block_time_in_minutes: 0,
    hashing_algorithm: null,
    categories: [],
    preview_listing: false,
    public_notice: null,
    additional_notices: [],
  };
  if (p.localization) out.localization = { en: c.name };
  out.description = { en: '' };
  out.links = { homepage: [], blockchain_site: [], official_forum_url: [], chat_url: [], announcement_url: [], repos_url: { github: [], bitbucket: [] } };
  out.image = { thumb: icon, small: icon, large: icon };
  out.country_origin = '';
  out.genesis_date = null;
  out.sentiment_votes_up_percentage = null;
  out.sentiment_votes_down_percentage = null;
  out.watchlist_portfolio_users = 0;
  out.market_cap_rank = c.rank;
  out.market_cap_rank_with_rehypothecated = c.rank;
  out.status_updates = [];
  if (p.marketData) {
    const want: ReadonlySet<ChangeWindow> = new Set(COIN_WINDOWS);
    const refs = await data.references(c, board.asOf, want);
    const usd = (k: ChangeWindow): number | null => {
      const then = refs[k];
      return then !== undefined && then > 0 ? (t.lastPrice / then - 1) * 100 : null;
    };
    const maps: Record<string, Record<string, number | null>> = {};
    const put = (field: string, vs: string, v: number | null): void => {
      (maps[field] ??= {})[vs] = v;
    };
    for (const vs of board.vsCurrencies) {
      // The current rate for every fiat window here: one coin page would otherwise load the daily
      // FX history of every supported currency.
      const conv = await conversion(data, board, vs, want, false);
      const fmt = formats(vs, undefined);
      const r = conv.now;
      put('current_price', vs, fmt.price(t.lastPrice * r));
      put('market_cap', vs, c.capUsd === null ? 0 : fmt.amount(c.capUsd * r));
      put('total_volume', vs, fmt.amount(t.quoteVolume * r));
      put('high_24h', vs, fmt.price(t.highPrice * r));
      put('low_24h', vs, fmt.price(t.lowPrice * r));
      put('price_change_24h_in_currency', vs, fmt.price(t.priceChange * r));
      for (const k of COIN_WINDOWS) {
        const v = changePct(c, refs, conv, k);
        put(`price_change_percentage_${k}_in_currency`, vs, v === null ? null : fmt.pct(v));
      }
      const capChange = t.circulatingSupply === undefined ? null : fmt.amount(t.priceChange * t.circulatingSupply * r);
      put('market_cap_change_24h_in_currency', vs, capChange);
      const pct24 = changePct(c, refs, conv, '24h');
      put('market_cap_change_percentage_24h_in_currency', vs, t.circulatingSupply === undefined || pct24 === null ? null : fmt.pct(pct24));
    }
    const usdFmt = formats('usd', undefined);
    const pct = (v: number | null): number | null => (v === null ? null : usdFmt.pct(v));
    const md: Record<string, unknown> = {
      current_price: maps.current_price,
      market_cap: maps.market_cap,
      market_cap_rank: c.rank,
      total_volume: maps.total_volume,
      high_24h: maps.high_24h,
      low_24h: maps.low_24h,
      price_change_24h: usdFmt.price(t.priceChange),
      price_change_percentage_24h: usdFmt.pct(t.priceChangePercent),
      price_change_percentage_7d: pct(usd('7d')),
      price_change_percentage_14d: pct(usd('14d')),
      price_change_percentage_30d: pct(usd('30d')),
      price_change_percentage_60d: pct(usd('60d')),
      price_change_percentage_200d: pct(usd('200d')),
      price_change_percentage_1y: pct(usd('1y')),
      market_cap_change_24h: t.circulatingSupply === undefined ? null : usdFmt.amount(t.priceChange * t.circulatingSupply),
      market_cap_change_percentage_24h: t.circulatingSupply === undefined ? null : usdFmt.pct(t.priceChangePercent),
      price_change_24h_in_currency: maps.price_change_24h_in_currency,
      price_change_percentage_1h_in_currency: maps.price_change_percentage_1h_in_currency,
      price_change_percentage_24h_in_currency: maps.price_change_percentage_24h_in_currency,
      price_change_percentage_7d_in_currency: maps.price_change_percentage_7d_in_currency,
      price_change_percentage_14d_in_currency: maps.price_change_percentage_14d_in_currency,
      price_change_percentage_30d_in_currency: maps.price_change_percentage_30d_in_currency,
      price_change_percentage_60d_in_currency: maps.price_change_percentage_60d_in_currency,
      price_change_percentage_200d_in_currency: maps.price_change_percentage_200d_in_currency,
      price_change_percentage_1y_in_currency: maps.price_change_percentage_1y_in_currency,
      market_cap_change_24h_in_currency: maps.market_cap_change_24h_in_currency,
      market_cap_change_percentage_24h_in_currency: maps.market_cap_change_percentage_24h_in_currency,
      total_supply: null,
      max_supply: null,
      circulating_supply: t.circulatingSupply ?? null,
      last_updated: iso(t.closeTime),
    };
    if (p.sparkline) {
      const w = await data.week(c.symbol, board.asOf);
      md.sparkline_7d = { price: [...w.closes, t.lastPrice].map((x) => usdFmt.price(x)) };
    }
    out.market_data = md;
  }
  // The coin's per-exchange tickers, as the first page of /coins/{id}/tickers.
  if (p.tickers) out.tickers = coinTickersView(board, data.deps.catalog, c.symbol, c.name, { exchanges: undefined, page: 1, order: 'trust_score_desc', logo: false, depth: false, baseUrl: p.baseUrl }).tickers;
  out.last_updated = iso(t.closeTime);
  return out;
}

/** `/search`: coins whose id, name or symbol contains the query; exact symbol or id first, then by rank. */
export function searchView(board: Board, query: string, allCoins: readonly { id: string; symbol: string; name: string; rank: number | null }[], baseUrl: string): Record<string, unknown> {
  void board;
  const q = query.toLowerCase();
  const hits = allCoins.filter((c) => c.id.includes(q) || c.name.toLowerCase().includes(q) || c.symbol.toLowerCase().includes(q));
  const exact = (c: { id: string; symbol: string }): number => (c.symbol.toLowerCase() === q || c.id === q ? 0 : 1);
  hits.sort((a, b) => exact(a) - exact(b) || (a.rank ?? Infinity) - (b.rank ?? Infinity) || (a.id < b.id ? -1 : 1));
  return {
    coins: hits.map((c) => ({ id: c.id, name: c.name, api_symbol: c.id, symbol: c.symbol, market_cap_rank: c.rank, thumb: iconUrl(baseUrl, c.symbol), large: iconUrl(baseUrl, c.symbol) })),
    exchanges: [],
    icos: [],
    categories: [],
    nfts: [],
  };
}

/** `/global`, from the coins this deployment tracks (not the whole crypto market). */
export function globalView(data: MarketData, board: Board): Record<string, unknown> {
  let capUsd = 0;
  let capUsdBefore = 0;
  let volUsd = 0;
  for (const c of board.coins) {
    volUsd += c.ticker.quoteVolume;
    if (c.capUsd !== null && c.ticker.circulatingSupply !== undefined) {
      capUsd += c.capUsd;
      capUsdBefore += c.ticker.openPrice * c.ticker.circulatingSupply;
    }
  }
  const total_market_cap: Record<string, number> = {};
  const total_volume: Record<string, number> = {};
  for (const vs of board.vsCurrencies) {
    const r = data.rate(board, vs);
    const fmt = formats(vs, undefined);
    total_market_cap[vs] = fmt.amount(capUsd * r);
    total_volume[vs] = fmt.amount(volUsd * r);
  }
  const usdFormats = formats('usd', undefined);
  const pctFmt = (x: number): number => usdFormats.pct(x);
  const market_cap_percentage: Record<string, number> = {};
  if (capUsd > 0) for (const c of board.coins.filter((x) => x.capUsd !== null).slice(0, 10)) market_cap_percentage[c.symbol.toLowerCase()] = pctFmt(((c.capUsd ?? 0) / capUsd) * 100);
  return {
    data: {
      active_cryptocurrencies: board.coins.length,
      upcoming_icos: 0,
      ongoing_icos: 0,
      ended_icos: 0,
      markets: 0,
      total_market_cap,
      total_volume,
      market_cap_percentage,
      market_cap_change_percentage_24h_usd: capUsdBefore > 0 ? pctFmt((capUsd / capUsdBefore - 1) * 100) : 0,
      volume_change_percentage_24h_usd: 0,
      updated_at: board.asOf,
    },
  };
}

/** How a chart request is served: candle interval, and the bucket size when candles are merged further. */
export interface Granularity {
  interval: Interval;
  /** Merge into buckets of this many seconds (4 h, 4 days); undefined keeps the interval's. */
  mergeSeconds?: number;
}

/** Days after which `interval=hourly` is refused (CoinGecko: hourly data up to 100 days). */
export const HOURLY_MAX_DAYS = 100;
/** Days up to which 5-minute data is served. */
export const FIVE_MIN_MAX_DAYS = 1;

/** market_chart granularity: auto (1 day -> 5 min, up to 90 days -> hourly, beyond -> daily) or `interval`. */
export function chartGranularity(spanDays: number, interval: string | undefined): Granularity {
  switch (interval) {
    case undefined:
      return { interval: spanDays <= 1 ? '5m' : spanDays <= 90 ? '1h' : '1d' };
    case 'daily':
      return { interval: '1d' };
    case 'hourly':
      if (spanDays > HOURLY_MAX_DAYS) throw badParam(`interval=hourly is limited to ${HOURLY_MAX_DAYS} days`);
      return { interval: '1h' };
    case '5m':
      if (spanDays > FIVE_MIN_MAX_DAYS) throw badParam(`interval=5m is limited to ${FIVE_MIN_MAX_DAYS} day`);
      return { interval: '5m' };
    default:
      throw badParam("invalid 'interval' parameter: expected daily, hourly or 5m");
  }
}

export const OHLC_DAYS = ['1', '7', '14', '30', '90', '180', '365', 'max'] as const;

/** ohlc candles: auto (1-2 days -> 30 min, 3-30 days -> 4 h, beyond -> 4 days) or `interval=daily|hourly`. */
export function ohlcGranularity(days: number, interval: string | undefined): Granularity {
  switch (interval) {
    case undefined:
      if (days <= 2) return { interval: '30m' };
      if (days <= 30) return { interval: '1h', mergeSeconds: 4 * 3600 };
      return { interval: '1d', mergeSeconds: 4 * DAY };
    case 'daily':
      if (days > 180) throw badParam('interval=daily is limited to 180 days (use auto granularity beyond)');
      return { interval: '1d' };
    case 'hourly':
      if (days > 90) throw badParam('interval=hourly is limited to 90 days (use auto granularity beyond)');
      return { interval: '1h' };
    default:
      throw badParam("invalid 'interval' parameter: expected daily or hourly");
  }
}

/** Points merged into fixed buckets aligned on the epoch (4 h, 4 days). */
export function mergeFixed(points: readonly SeriesPoint[], seconds: number): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  let cur: SeriesPoint | undefined;
  for (const p of points) {
    const b = Math.floor(p.time / seconds) * seconds;
    if (cur === undefined || cur.time !== b) {
      cur = { ...p, time: b };
      out.push(cur);
    } else {
      cur.high = Math.max(cur.high, p.high);
      cur.low = Math.min(cur.low, p.low);
      cur.close = p.close;
      cur.volume = cur.volume === null || p.volume === null ? null : cur.volume + p.volume;
      cur.closeTime = p.closeTime;
    }
  }
  return out;
}

export interface ChartRequest {
  coin: BoardCoin;
  vs: string;
  from: number;
  to: number;
  granularity: Granularity;
  precision: Precision;
}

/** The earliest instant a plan's history reaches at `asOf` (Unix seconds); 0 without a limit. */
export function planFloor(plan: Plan, asOf: number): number {
  return plan.historyDays === null ? 0 : asOf - plan.historyDays * DAY;
}

/**
 * `/market_chart` and `/market_chart/range`: `[ms, value]` pairs at each candle's close time,
 * price = close, market cap = close x today's circulating supply (historical supply is not
 * tracked), total volume = traded value over the 24 h before the point.
 */
export async function chartView(data: MarketData, board: Board, r: ChartRequest): Promise<{ prices: number[][]; market_caps: number[][]; total_volumes: number[][] }> {
  const { interval } = r.granularity;
  const fmt = formats(r.vs, r.precision);
  // A day more, so the first point's 24 h volume is complete.
  const lead = interval === '1d' ? 0 : DAY;
  const from = bucketStart(interval, r.from);
  const points = r.to > from ? await data.series(r.coin.symbol, interval, from - lead, r.to) : [];
  const rateOf = await data.historicalRate(r.vs, interval, from - lead, r.to);
  const supply = r.coin.ticker.circulatingSupply;
  const prices: number[][] = [];
  const caps: number[][] = [];
  const vols: number[][] = [];
  let windowSum = 0;
  let windowNull = 0;
  let tail = 0;
  for (let i = 0; i < points.length; i++) {
    const p = points[i]!;
    if (p.volume === null) windowNull++;
    else windowSum += p.volume;
    while (tail < i && points[tail]!.closeTime <= p.closeTime - DAY) {
      const old = points[tail]!;
      if (old.volume === null) windowNull--;
      else windowSum -= old.volume;
      tail++;
    }
    if (p.time < from) continue;
    const rate = rateOf(p);
    if (rate === null) continue;
    const ms = p.closeTime * 1000;
    prices.push([ms, fmt.price(p.close * rate)]);
    caps.push([ms, supply === undefined ? 0 : fmt.amount(p.close * supply * rate)]);
    if (windowNull === 0) vols.push([ms, fmt.amount((interval === '1d' ? (p.volume ?? 0) : windowSum) * rate)]);
  }
  void board;
  return { prices, market_caps: caps, total_volumes: vols };
}

/** `/ohlc`: `[ms, open, high, low, close]` at each candle's close time. */
export async function ohlcView(data: MarketData, r: ChartRequest): Promise<number[][]> {
  const g = r.granularity;
  const fmt = formats(r.vs, r.precision);
  const size = g.mergeSeconds;
  const from = size === undefined ? bucketStart(g.interval, r.from) : Math.floor(r.from / size) * size;
  const raw = r.to > from ? await data.series(r.coin.symbol, g.interval, from, r.to) : [];
  const rateOf = await data.historicalRate(r.vs, g.interval, from, r.to);
  // Converted candle by candle first, so a crypto vs_currency divides by its own price in each candle.
  const converted: SeriesPoint[] = [];
  for (const p of raw) {
    const rate = rateOf(p);
    if (rate !== null) converted.push({ ...p, open: p.open * rate, high: p.high * rate, low: p.low * rate, close: p.close * rate });
  }
  const points = size === undefined ? converted : mergeFixed(converted, size);
  const out: number[][] = [];
  for (const p of points) out.push([p.closeTime * 1000, fmt.price(p.open), fmt.price(p.high), fmt.price(p.low), fmt.price(p.close)]);
  return out;
}

/**
 * The current `/coins/markets` page for callers outside the /api/v3 routes (the dashboard's
 * session-authenticated market page): the same rows, from the current snapshot.
 */
export async function currentMarkets(data: MarketData, p: MarketsParams): Promise<Record<string, unknown>[]> {
  const board = await data.board();
  data.rate(board, p.vs); // 400 invalid vs_currency
  return marketsView(data, board, p);
}
