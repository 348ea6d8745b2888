import { QuotesError } from '../errors.js';
import type { CoinCatalog } from '../market/coin-catalog.js';
import { COINGECKO_IDS } from '../market/coin-ids.js';
import type { VenueTicker } from '../domain/market.js';
import type { Board } from './market-data.js';

/**
 * CoinGecko's ticker and exchange views (`/coins/{id}/tickers`, `/exchanges`, `/exchanges/list`,
 * `/exchanges/{id}`, `/exchanges/{id}/tickers`, and the `tickers` of `/coins/{id}`) from the
 * per-exchange tickers a market snapshot keeps (MarketSnapshot.venues).
 */

/** CoinGecko's id and display name of the exchanges ccxt knows by another id; others keep ccxt's id. */
const EXCHANGES: Readonly<Record<string, { id: string; name: string }>> = Object.freeze({
  binance: { id: 'binance', name: 'Binance' },
  binanceus: { id: 'binance_us', name: 'Binance.US' },
  coinbase: { id: 'gdax', name: 'Coinbase Exchange' },
  coinbaseexchange: { id: 'gdax', name: 'Coinbase Exchange' },
  kraken: { id: 'kraken', name: 'Kraken' },
  bitstamp: { id: 'bitstamp', name: 'Bitstamp' },
  bitfinex: { id: 'bitfinex', name: 'Bitfinex' },
  okx: { id: 'okex', name: 'OKX' },
  bybit: { id: 'bybit_spot', name: 'Bybit' },
  kucoin: { id: 'kucoin', name: 'KuCoin' },
  gateio: { id: 'gate', name: 'Gate' },
  gate: { id: 'gate', name: 'Gate' },
  htx: { id: 'huobi', name: 'HTX' },
  huobi: { id: 'huobi', name: 'HTX' },
  mexc: { id: 'mxc', name: 'MEXC' },
  bitget: { id: 'bitget', name: 'Bitget' },
  cryptocom: { id: 'crypto_com', name: 'Crypto.com Exchange' },
  gemini: { id: 'gemini', name: 'Gemini' },
  mercado: { id: 'mercado_bitcoin', name: 'Mercado Bitcoin' },
  novadax: { id: 'novadax', name: 'NovaDAX' },
  foxbit: { id: 'foxbit', name: 'Foxbit' },
  simulated: { id: 'simulated', name: 'Simulated Exchange' },
});

export interface ExchangeIdentity {
  /** CoinGecko's exchange id (the path parameter of /exchanges/{id}). */
  id: string;
  name: string;
}

/** How an ingested exchange (ccxt id) is shown. */
export function exchangeIdentity(ccxtId: string): ExchangeIdentity {
  return EXCHANGES[ccxtId] ?? { id: ccxtId, name: ccxtId.charAt(0).toUpperCase() + ccxtId.slice(1) };
}

export const exchangeLogoUrl = (baseUrl: string, id: string): string => `${baseUrl}/icons/exchanges/${id}.svg`;

/** Tickers per page of /coins/{id}/tickers and /exchanges/{id}/tickers, and of the `tickers` of /exchanges/{id} and /coins/{id}. */
export const TICKERS_PER_PAGE = 100;

export const COIN_TICKER_ORDERS = ['trust_score_desc', 'trust_score_asc', 'volume_desc', 'volume_asc'] as const;
export const EXCHANGE_TICKER_ORDERS = [...COIN_TICKER_ORDERS, 'market_cap_desc', 'market_cap_asc', 'base_target'] as const;
export type TickerOrder = (typeof EXCHANGE_TICKER_ORDERS)[number];

/**
 * Our trust score: `green` for a ticker used in the coin's price, `yellow` for a fresh one not
 * used (a less liquid pair on the same exchange), `red` for one left out as an outlier or stale.
 * It ranks what our own checks found, not CoinGecko's exchange audit.
 */
const TRUST: Readonly<Record<VenueTicker['status'], { score: string; rank: number }>> = { used: { score: 'green', rank: 2 }, unused: { score: 'yellow', rank: 1 }, outlier: { score: 'red', rank: 0 }, stale: { score: 'red', rank: 0 } };

const usdVolume = (v: VenueTicker): number => (v.usdPerTarget === null ? 0 : v.quoteVolume * v.usdPerTarget);

export interface TickerOptions {
  logo: boolean;
  depth: boolean;
  baseUrl: string;
}

/** Every per-exchange ticker of the board's snapshot. */
export function boardVenues(board: Board): readonly VenueTicker[] {
  return board.snap.venues ?? [];
}

function sortTickers(list: VenueTicker[], order: TickerOrder, board: Board): VenueTicker[] {
  const cap = (v: VenueTicker): number => board.bySymbol.get(v.base)?.capUsd ?? -1;
  const byVol = (a: VenueTicker, b: VenueTicker): number => usdVolume(b) - usdVolume(a);
  const tie = (a: VenueTicker, b: VenueTicker): number => (a.exchange < b.exchange ? -1 : a.exchange > b.exchange ? 1 : a.pair < b.pair ? -1 : a.pair > b.pair ? 1 : 0);
  const cmp: Record<TickerOrder, (a: VenueTicker, b: VenueTicker) => number> = {
    trust_score_desc: (a, b) => TRUST[b.status].rank - TRUST[a.status].rank || byVol(a, b),
    trust_score_asc: (a, b) => TRUST[a.status].rank - TRUST[b.status].rank || -byVol(a, b),
    volume_desc: byVol,
    volume_asc: (a, b) => -byVol(a, b),
    market_cap_desc: (a, b) => cap(b) - cap(a) || byVol(a, b),
    market_cap_asc: (a, b) => cap(a) - cap(b) || byVol(a, b),
    base_target: (a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : a.target < b.target ? -1 : a.target > b.target ? 1 : 0),
  };
  return list.sort((a, b) => cmp[order](a, b) || tie(a, b));
}

/** One ticker in CoinGecko's shape. */
export function tickerJson(board: Board, catalog: CoinCatalog, v: VenueTicker, o: TickerOptions): Record<string, unknown> {
  const ex = exchangeIdentity(v.exchange);
  const market: Record<string, unknown> = { name: ex.name, identifier: ex.id, has_trading_incentive: false };
  if (o.logo) market.logo = exchangeLogoUrl(o.baseUrl, ex.id);
  const usdLast = v.usdPerTarget === null ? null : v.last * v.usdPerTarget;
  const usdVol = v.usdPerTarget === null ? null : v.quoteVolume * v.usdPerTarget;
  const btc = board.bySymbol.get('BTC')?.ticker.lastPrice;
  const eth = board.bySymbol.get('ETH')?.ticker.lastPrice;
  const convert = (usd: number | null): Record<string, number> => {
    if (usd === null) return {};
    const out: Record<string, number> = {};
    if (btc !== undefined && btc > 0) out.btc = usd / btc;
    if (eth !== undefined && eth > 0) out.eth = usd / eth;
    out.usd = usd;
    return out;
  };
  const iso = new Date(v.time).toISOString();
  const out: Record<string, unknown> = {
    base: v.base,
    target: v.target,
    market,
    last: v.last,
    volume: v.baseVolume,
    converted_last: convert(usdLast),
    converted_volume: convert(usdVol),
    trust_score: TRUST[v.status].score,
    bid_ask_spread_percentage: v.bid !== null && v.ask !== null && v.ask > 0 ? ((v.ask - v.bid) / v.ask) * 100 : null,
    timestamp: iso,
    last_traded_at: iso,
    last_fetch_at: iso,
    is_anomaly: v.status === 'outlier',
    is_stale: v.status === 'stale',
    trade_url: null,
    token_info_url: null,
    coin_id: board.bySymbol.get(v.base)?.id ?? catalog.ids.id(v.base) ?? v.base.toLowerCase(),
  };
  // A coin target (USDT, BTC) has a CoinGecko id; a fiat one (USD, BRL) has none, as on CoinGecko.
  const targetId = catalog.ids.id(v.target) ?? COINGECKO_IDS[v.target];
  if (targetId !== undefined) out.target_coin_id = targetId;
  out.coin_mcap_usd = board.bySymbol.get(v.base)?.capUsd ?? 0;
  // depth=true asks for the cost to move the price 2 %: no order books are ingested, so none is given.
  void o.depth;
  return out;
}

export interface CoinTickersParams extends TickerOptions {
  /** CoinGecko exchange ids to keep; undefined keeps all. */
  exchanges: readonly string[] | undefined;
  page: number;
  order: TickerOrder;
}

/** `/coins/{id}/tickers` (and `/coins/{id}`'s `tickers`, first page): a coin's tickers on every exchange we ingest. */
export function coinTickersView(board: Board, catalog: CoinCatalog, symbol: string, name: string, p: CoinTickersParams): { name: string; tickers: Record<string, unknown>[] } {
  const keep = p.exchanges === undefined ? undefined : new Set(p.exchanges);
  const list = boardVenues(board).filter((v) => v.base === symbol && (keep === undefined || keep.has(exchangeIdentity(v.exchange).id)));
  const page = sortTickers(list, p.order, board).slice((p.page - 1) * TICKERS_PER_PAGE, p.page * TICKERS_PER_PAGE);
  return { name, tickers: page.map((v) => tickerJson(board, catalog, v, p)) };
}

/** One exchange's figures over the board's per-exchange tickers. */
interface ExchangeSummary {
  identity: ExchangeIdentity;
  ccxtId: string;
  /** 24 h traded value in BTC of its fresh tickers. */
  volumeBtc: number;
  coins: number;
  pairs: number;
}

/** Every exchange with tickers on the board, by 24 h volume (largest first). */
export function exchangeSummaries(board: Board): ExchangeSummary[] {
  const btc = board.bySymbol.get('BTC')?.ticker.lastPrice;
  const by = new Map<string, { usd: number; coins: Set<string>; pairs: number }>();
  for (const v of boardVenues(board)) {
    let e = by.get(v.exchange);
    if (e === undefined) by.set(v.exchange, (e = { usd: 0, coins: new Set(), pairs: 0 }));
    e.pairs++;
    e.coins.add(v.base);
    if (v.status !== 'stale') e.usd += usdVolume(v);
  }
  const out = [...by].map(([ccxtId, e]) => ({ identity: exchangeIdentity(ccxtId), ccxtId, volumeBtc: btc !== undefined && btc > 0 ? e.usd / btc : 0, coins: e.coins.size, pairs: e.pairs }));
  return out.sort((a, b) => b.volumeBtc - a.volumeBtc || (a.identity.id < b.identity.id ? -1 : 1));
}

/** The exchange of a CoinGecko exchange id on the board; 404 `exchange not found` otherwise. */
export function exchangeOf(board: Board, id: string): ExchangeSummary {
  const e = exchangeSummaries(board).find((x) => x.identity.id === id);
  if (e === undefined) throw new QuotesError('EXCHANGE_UNKNOWN');
  return e;
}

const volumeBtc = (x: number): number => Math.round(x * 1e8) / 1e8;

function exchangeRow(e: ExchangeSummary, baseUrl: string): Record<string, unknown> {
  return {
    id: e.identity.id,
    name: e.identity.name,
    year_established: null,
    country: null,
    description: '',
    url: '',
    image: exchangeLogoUrl(baseUrl, e.identity.id),
    has_trading_incentive: false,
    trust_score: null,
    trust_score_rank: null,
    trade_volume_24h_btc: volumeBtc(e.volumeBtc),
  };
}

/** `/exchanges`: one page of the exchanges we ingest, by 24 h volume. */
export function exchangesView(board: Board, p: { page: number; perPage: number; baseUrl: string }): Record<string, unknown>[] {
  return exchangeSummaries(board)
    .slice((p.page - 1) * p.perPage, p.page * p.perPage)
    .map((e) => exchangeRow(e, p.baseUrl));
}

/** `/exchanges/list`: id and name of every exchange we ingest, by id. */
export function exchangesListView(board: Board): { id: string; name: string }[] {
  return exchangeSummaries(board)
    .map((e) => ({ id: e.identity.id, name: e.identity.name }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export interface ExchangeTickersParams extends TickerOptions {
  /** Coin ids to keep; undefined keeps all. */
  coinIds: readonly string[] | undefined;
  page: number;
  order: TickerOrder;
}

/** `/exchanges/{id}/tickers`: one page of an exchange's tickers. */
export function exchangeTickersView(board: Board, catalog: CoinCatalog, e: ExchangeSummary, p: ExchangeTickersParams): { name: string; tickers: Record<string, unknown>[] } {
  const keep = p.coinIds === undefined ? undefined : new Set(p.coinIds);
  const list = boardVenues(board).filter((v) => v.exchange === e.ccxtId && (keep === undefined || keep.has(board.bySymbol.get(v.base)?.id ?? catalog.ids.id(v.base) ?? '')));
  const page = sortTickers(list, p.order, board).slice((p.page - 1) * TICKERS_PER_PAGE, p.page * TICKERS_PER_PAGE);
  return { name: e.identity.name, tickers: page.map((v) => tickerJson(board, catalog, v, p)) };
}

/** `/exchanges/{id}`: the exchange, its figures and its 100 most traded tickers. */
export function exchangeView(board: Board, catalog: CoinCatalog, e: ExchangeSummary, baseUrl: string): Record<string, unknown> {
  const row = exchangeRow(e, baseUrl);
  return {
    name: row.name,
    year_established: null,
    country: null,
    description: '',
    url: '',
    image: row.image,
    facebook_url: '',
    reddit_url: '',
    telegram_url: '',
    slack_url: '',
    other_url_1: '',
    other_url_2: '',
    twitter_handle: '',
    has_trading_incentive: false,
    centralized: e.ccxtId !== 'simulated',
    public_notice: e.ccxtId === 'simulated' ? 'Simulated market data (MARKET_SOURCE=simulated), not a real exchange.' : '',
    alert_notice: '',
    trust_score: null,
    trust_score_rank: null,
    trade_volume_24h_btc: row.trade_volume_24h_btc,
    coins: e.coins,
    pairs: e.pairs,
    tickers: exchangeTickersView(board, catalog, e, { coinIds: undefined, page: 1, order: 'volume_desc', logo: false, depth: false, baseUrl }).tickers,
    status_updates: [],
  };
}
