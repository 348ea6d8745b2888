/** The dashboard's JSON API (same origin, session cookie) and the public quotes API (token). */

export interface SessionInfo {
  signedIn: boolean;
  email?: string;
  csrfToken: string;
  /** The operator opened the market and coin pages to visitors (QUOTES_PUBLIC_MARKET). */
  publicMarket?: boolean;
}

export interface PlanInfo {
  id: string;
  name: string;
  crypto: boolean;
  monthlyRequests: number;
  maxCoinsPerRequest: number;
  historyDays: number | null;
  ranges: string[];
  intervals: string[];
}

export interface AccountInfo {
  email: string;
  plan: PlanInfo;
  token: { id: string; prefix: string; createdAt: string } | null;
  usage: { month: string; count: number; limit: number; remaining: number; resetAt: string; daily: Array<{ day: string; count: number }> };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken = '';
let dataSource: string | undefined;

/** The server's market source as its last answer named it (`X-Data-Source`: `simulated`, `exchange`). */
export function currentDataSource(): string | undefined {
  return dataSource;
}

/** Called with every new `X-Data-Source` value (the simulated-data notice follows it). */
let onDataSource: ((source: string) => void) | undefined;
export function watchDataSource(fn: (source: string) => void): void {
  onDataSource = fn;
  if (dataSource !== undefined) fn(dataSource);
}

async function parse<T>(res: Response): Promise<T> {
  const source = res.headers.get('x-data-source');
  if (source !== null && source !== dataSource) {
    dataSource = source;
    onDataSource?.(source);
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  if (!res.ok) throw new ApiError(res.status, typeof body.message === 'string' ? body.message : `HTTP ${res.status}`);
  return body as T;
}

export async function loadSession(): Promise<SessionInfo> {
  const s = await parse<SessionInfo>(await fetch('/dashboard/api/session', { credentials: 'same-origin' }));
  csrfToken = s.csrfToken;
  return s;
}

/** State-changing calls: JSON body plus the CSRF token header. */
export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const res = await fetch(`/dashboard/api/${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
    body: JSON.stringify(body),
  });
  const out = await parse<T & { csrfToken?: string }>(res);
  if (out !== undefined && typeof out.csrfToken === 'string') csrfToken = out.csrfToken;
  return out;
}

export async function account(): Promise<AccountInfo> {
  return await parse<AccountInfo>(await fetch('/dashboard/api/account', { credentials: 'same-origin' }));
}

const TOKEN_KEY = 'quotes.token';

/**
 * The API token is shown once; the dashboard keeps it in this tab's sessionStorage only for the
 * code snippets of the account page. The dashboard's own calls use the session, never the token.
 */
export function rememberToken(token: string | undefined): void {
  if (token === undefined) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export function storedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

/** GET of the dashboard's own (session-authenticated) API. */
export async function dashboardGet<T>(path: string): Promise<T> {
  return await parse<T>(await fetch(`/dashboard/api/${path}`, { credentials: 'same-origin' }));
}

/** One row of the market board (CoinGecko's /coins/markets fields). */
export interface MarketCoin {
  id: string;
  symbol: string;
  name: string;
  image: string;
  current_price: number;
  market_cap: number;
  market_cap_rank: number | null;
  total_volume: number;
  price_change_percentage_24h: number | null;
  price_change_percentage_1h_in_currency?: number | null;
  price_change_percentage_24h_in_currency?: number | null;
  price_change_percentage_7d_in_currency?: number | null;
  sparkline_in_7d?: { price: number[] };
  last_updated: string;
}

/** The header of the market page: /api/v3/global's figures in the page's currency. */
export interface MarketGlobal {
  totalMarketCap: number;
  totalVolume: number;
  btcDominance: number | null;
  marketCapChange24h: number;
  coins: number;
}

export interface MarketBoard {
  currency: string;
  asOf: string;
  global: MarketGlobal;
  coins: MarketCoin[];
}

/** Signed out on a public market (QUOTES_PUBLIC_MARKET): the pages read the visitors' routes. */
let visitor = false;
export function setVisitor(on: boolean): void {
  visitor = on;
}
export function isVisitor(): boolean {
  return visitor;
}
const marketPath = (): string => (visitor ? 'public/market' : 'market');

export async function marketBoard(currency: string): Promise<MarketBoard> {
  return await dashboardGet<MarketBoard>(`${marketPath()}?currency=${encodeURIComponent(currency)}`);
}

/** A coin as /api/v2/crypto returns it (with history). */
export interface QuoteCoin {
  coin: string;
  coinName: string;
  currency: string;
  regularMarketPrice: number;
  regularMarketChangePercent: number;
  regularMarketDayHigh: number;
  regularMarketDayLow: number;
  regularMarketVolume: number;
  marketCap: number;
  regularMarketTime: string;
  coinImageUrl: string;
  historicalDataPrice?: Array<{ date: number; open: number | null; high: number | null; low: number | null; close: number | null; volume: number | null }>;
  usedRange?: string;
  usedInterval?: string;
}

export async function coinHistory(coin: string, currency: string, range: string, interval: string | undefined): Promise<{ coin: QuoteCoin; plan: { ranges: string[]; intervals: string[] } }> {
  const iv = interval === undefined ? '' : `&interval=${encodeURIComponent(interval)}`;
  return await dashboardGet(`${marketPath()}/history?coin=${encodeURIComponent(coin)}&currency=${encodeURIComponent(currency)}&range=${encodeURIComponent(range)}${iv}`);
}
