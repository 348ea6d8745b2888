import { isBaseInterval, type BaseInterval } from './history/intervals.js';
import { isSupportedDatabaseUrl } from './store/open-store.js';

/**
 * Every environment variable the quotes service reads, parsed once at start-up. All problems
 * are reported together in one error; the result is frozen and passed down.
 */
export interface Settings {
  host: string;
  port: number;
  /** Undefined means SQLite in `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  marketSource: MarketSourceKind;
  /** ccxt exchange ids, in order of preference (the first listing a coin also serves its candles). */
  exchanges: readonly string[];
  /** Per exchange id: REST base origin (and optional path prefix) replacing the exchange's own hosts. */
  exchangeUrls: Readonly<Record<string, string>>;
  /** Per exchange id: WebSocket base replacing the exchange's stream host (default: derived from exchangeUrls). */
  exchangeWsUrls: Readonly<Record<string, string>>;
  /** Stream tickers over the exchanges' WebSockets (where ccxt supports it) on top of the REST refresh. */
  marketWebsocket: boolean;
  /** An exchange whose price deviates more than this percentage from the median is left out. */
  outlierPercent: number;
  /** Fiat quote currencies whose pairs may price a coin that has no USD-stable pair. */
  fiatPairs: readonly string[];
  requestTimeoutMs: number;
  retryAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Milliseconds per unit of request weight given to ccxt's throttle; undefined keeps the exchange's published limit. */
  rateLimitMs: number | undefined;
  supplyFile: string | undefined;
  supplyUrl: string | undefined;
  fxSources: readonly FxSourceKind[];
  ptaxUrl: string;
  ecbUrl: string;
  fxRefreshSeconds: number;
  fxStaleSeconds: number;
  historyBackfill: boolean;
  /** Coins to backfill; ['*'] means every listed coin. */
  backfillCoins: readonly string[];
  /** Base series to backfill and how many days back (null: full history). */
  backfillWindows: readonly BackfillWindow[];
  historySyncSeconds: number;
  simulatedSeed: number;
  /** Undefined means the plans.json shipped with the service. */
  plansFile: string | undefined;
  /** Origin for absolute URLs (icons); undefined means the request's own scheme and host. */
  publicBaseUrl: string | undefined;
  refreshSeconds: number;
  staleSeconds: number;
  logLevel: string;
  trustProxy: boolean;
  /** Cached quote responses served without fastify's per-request pipeline (see api/fast-quote.ts). */
  fastPath: boolean;
  /** 0 = every request written at once (exact across servers); otherwise write-behind interval. */
  usageFlushMs: number;
  /** Burst limits and login throttling through the rate limiter (false: none at all). */
  rateLimitEnabled: boolean;
  /** gRPC address of a `ratelimit` deployment; undefined = embedded engine in this process. */
  rateLimitGrpcAddr: string | undefined;
  rateLimitTls: { ca: string | undefined; cert: string | undefined; key: string | undefined; serverName: string | undefined } | undefined;
  rateLimitTimeoutMs: number;
  rateLimitFailureMode: 'allow' | 'deny';
  rateLimitDomain: string;
  /** Rule directory of the embedded engine; undefined = the `ratelimit/` shipped with the service. */
  rateLimitRulesDir: string | undefined;
  /** Plan given to dashboard sign-ups. */
  dashboardSignupPlan: string;
  dashboardSessionSeconds: number;
  /** Built dashboard assets; undefined = dist/web of the package. */
  dashboardAssetsDir: string | undefined;
}

export type MarketSourceKind = 'simulated' | 'exchange';
export type FxSourceKind = 'simulated' | 'ptax' | 'ecb' | 'exchange';
const FX_KINDS: readonly FxSourceKind[] = ['simulated', 'ptax', 'ecb', 'exchange'];
export interface BackfillWindow {
  base: BaseInterval;
  /** Days back from now; null = from the first candle the exchange has. */
  days: number | null;
}

interface Definition {
  name: string;
  default: string | undefined;
  /** Unit and meaning, shown in docs and errors. */
  doc: string;
  apply: (raw: string | undefined, out: Partial<Settings>) => string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function int(min: number, max: number, set: (n: number, out: Partial<Settings>) => void) {
  return (raw: string | undefined, out: Partial<Settings>): string | undefined => {
    const n = Number(raw);
    if (raw === undefined || !/^-?\d+$/.test(raw.trim()) || n < min || n > max) return `must be an integer from ${min} to ${max}`;
    set(n, out);
    return undefined;
  };
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

function bool(set: (b: boolean, out: Partial<Settings>) => void) {
  return (raw: string | undefined, out: Partial<Settings>): string | undefined => {
    if (raw !== 'true' && raw !== 'false') return 'must be true or false';
    set(raw === 'true', out);
    return undefined;
  };
}

function num(min: number, max: number, set: (n: number, out: Partial<Settings>) => void) {
  return (raw: string | undefined, out: Partial<Settings>): string | undefined => {
    const n = Number(raw);
    if (raw === undefined || raw.trim() === '' || !Number.isFinite(n) || n < min || n > max) return `must be a number from ${min} to ${max}`;
    set(n, out);
    return undefined;
  };
}

function url(set: (u: string, out: Partial<Settings>) => void) {
  return (raw: string | undefined, out: Partial<Settings>): string | undefined => {
    if (raw === undefined || !/^https?:\/\/[^\s]+$/.test(raw)) return 'must be an http(s) URL';
    set(raw.replace(/\/+$/, ''), out);
    return undefined;
  };
}

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds from `90`, `90s`, `15m`, `1h` or `4d`. */
export function parseDuration(raw: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([smhd]?)$/.exec(raw.trim());
  if (m === null) return undefined;
  return Number(m[1]) * (UNIT_SECONDS[m[2] === '' ? 's' : (m[2] ?? 's')] ?? 1);
}

function duration(min: number, max: number, set: (seconds: number, out: Partial<Settings>) => void) {
  return (raw: string | undefined, out: Partial<Settings>): string | undefined => {
    const n = raw === undefined ? undefined : parseDuration(raw);
    if (n === undefined || n < min || n > max) return `must be a duration (seconds, or with s/m/h/d) from ${min} s to ${max} s`;
    set(n, out);
    return undefined;
  };
}

export const SETTINGS: readonly Definition[] = [
  { name: 'QUOTES_HOST', default: '0.0.0.0', doc: 'address to listen on', apply: (v, o) => void (o.host = v ?? '0.0.0.0') },
  { name: 'QUOTES_PORT', default: '3000', doc: 'TCP port (3000 is also the brapi SDK\'s local environment)', apply: int(0, 65535, (n, o) => (o.port = n)) },
  {
    name: 'DATABASE_URL',
    default: undefined,
    doc: 'unset: SQLite file <QUOTES_DATA_DIR>/quotes.sqlite; postgres://user@host:port/db: PostgreSQL; sqlite:<path>: that SQLite file; memory: nothing kept',
    apply: (v, o) => {
      if (v !== undefined && !isSupportedDatabaseUrl(v)) return 'must start with postgres://, postgresql://, sqlite: or be memory:';
      o.databaseUrl = v;
      return undefined;
    },
  },
  { name: 'QUOTES_DATA_DIR', default: './data', doc: 'directory of the default SQLite database', apply: (v, o) => void (o.dataDir = v ?? './data') },
  {
    name: 'MARKET_SOURCE',
    default: 'exchange',
    doc: 'where quotes come from: exchange (live, through ccxt and MARKET_EXCHANGES) or simulated (deterministic, offline; what quickstart uses)',
    apply: (v, o) => (v === 'simulated' || v === 'exchange' ? void (o.marketSource = v) : 'must be one of: exchange, simulated'),
  },
  {
    name: 'MARKET_EXCHANGES',
    default: 'binance',
    doc: 'comma-separated ccxt exchange ids, most trusted first (e.g. binance,binanceus)',
    apply: (v, o) => {
      const ids = list(v);
      if (ids.length === 0 || ids.some((id) => !/^[a-z][a-z0-9]*$/.test(id))) return 'must be a comma-separated list of ccxt exchange ids (lower case)';
      o.exchanges = ids;
      return undefined;
    },
  },
  {
    name: 'MARKET_EXCHANGE_URL_<ID>',
    default: undefined,
    doc: 'per exchange (e.g. MARKET_EXCHANGE_URL_BINANCE=https://data-api.binance.vision): origin replacing every REST host of that exchange, paths kept',
    apply: () => undefined,
  },
  {
    name: 'MARKET_EXCHANGE_WS_URL_<ID>',
    default: undefined,
    doc: 'per exchange: WebSocket origin replacing its stream host; unset: MARKET_EXCHANGE_URL_<ID> with ws(s)://, else the exchange\'s own',
    apply: () => undefined,
  },
  { name: 'MARKET_WEBSOCKET', default: 'false', doc: 'true: also stream tickers over WebSocket where ccxt supports it (REST refresh stays as fallback)', apply: bool((b, o) => (o.marketWebsocket = b)) },
  {
    name: 'MARKET_OUTLIER_PERCENT',
    default: '5',
    doc: 'percent; with several exchanges, one whose price deviates more than this from the median is left out and logged',
    apply: num(0.01, 100, (n, o) => (o.outlierPercent = n)),
  },
  {
    name: 'MARKET_FIAT_PAIRS',
    default: '',
    doc: 'fiat quotes (e.g. BRL,EUR) whose pairs may price a coin without a USD-stable pair, converted at the live FX rate',
    apply: (v, o) => {
      const l = list(v).map((x) => x.toUpperCase());
      if (l.some((x) => !/^[A-Z]{3}$/.test(x))) return 'must be a comma-separated list of currency codes';
      o.fiatPairs = l;
      return undefined;
    },
  },
  { name: 'MARKET_REQUEST_TIMEOUT_MS', default: '10000', doc: 'milliseconds before an exchange or FX request counts as timed out', apply: int(100, 300_000, (n, o) => (o.requestTimeoutMs = n)) },
  { name: 'MARKET_RETRY_ATTEMPTS', default: '4', doc: 'tries per upstream call (errors, timeouts, 429/418, malformed payloads) before giving up until the next cycle', apply: int(1, 20, (n, o) => (o.retryAttempts = n)) },
  { name: 'MARKET_RETRY_BASE_MS', default: '500', doc: 'first backoff in milliseconds; doubles per try, with jitter', apply: int(1, 600_000, (n, o) => (o.retryBaseMs = n)) },
  { name: 'MARKET_RETRY_MAX_MS', default: '60000', doc: 'longest backoff in milliseconds (a Retry-After from the exchange is honoured even when longer)', apply: int(1, 3_600_000, (n, o) => (o.retryMaxMs = n)) },
  {
    name: 'MARKET_RATE_LIMIT_MS',
    default: undefined,
    doc: 'milliseconds per unit of request weight for ccxt\'s throttle; unset: the exchange\'s published limit as ccxt knows it',
    apply: (v, o) => {
      if (v === undefined) return void (o.rateLimitMs = undefined);
      return num(0, 60_000, (n, out) => (out.rateLimitMs = n))(v, o);
    },
  },
  { name: 'MARKET_SUPPLY_FILE', default: undefined, doc: 'JSON {"BTC": 19800000, ...}: circulating supply per coin; marketCap = price x supply (else 0)', apply: (v, o) => void (o.supplyFile = v) },
  {
    name: 'MARKET_SUPPLY_URL',
    default: undefined,
    doc: 'CoinPaprika-compatible API base (GET <url>/v1/tickers) to fetch circulating supplies hourly, e.g. https://api.coinpaprika.com; unset: none',
    apply: (v, o) => {
      if (v !== undefined && !/^https?:\/\//.test(v)) return 'must be an http(s) URL';
      o.supplyUrl = v?.replace(/\/+$/, '');
      return undefined;
    },
  },
  {
    name: 'FX_SOURCE',
    default: 'auto',
    doc: 'USD exchange-rate sources, first wins per currency: any of ptax, ecb, exchange (live USDT/BRL-style pairs), simulated; auto = simulated with the simulated market, else ptax,ecb',
    apply: (v, o) => {
      if (v === 'auto' || v === undefined) return void (o.fxSources = []);
      const l = list(v);
      if (l.length === 0 || l.some((x) => !(FX_KINDS as readonly string[]).includes(x))) return `must be auto or a list of: ${FX_KINDS.join(', ')}`;
      o.fxSources = l as FxSourceKind[];
      return undefined;
    },
  },
  { name: 'FX_PTAX_URL', default: 'https://olinda.bcb.gov.br/olinda/servico/PTAX/versao/v1/odata', doc: 'base of the BCB PTAX OData service', apply: url((u, o) => (o.ptaxUrl = u)) },
  { name: 'FX_ECB_URL', default: 'https://www.ecb.europa.eu/stats/eurofxref', doc: 'base of the ECB reference-rate files (eurofxref-daily.xml, eurofxref-hist.xml)', apply: url((u, o) => (o.ecbUrl = u)) },
  { name: 'FX_REFRESH_INTERVAL', default: '600', doc: 'seconds (or 10m, 1h) between fetches of official latest rates', apply: duration(1, 86_400, (n, o) => (o.fxRefreshSeconds = n)) },
  {
    name: 'FX_STALE_AFTER',
    default: '4d',
    doc: 'official rates last fetched longer ago than this (seconds or 30m, 4d) make quotes in that currency 503; official rates are daily, so days',
    apply: duration(60, 30 * 86_400, (n, o) => (o.fxStaleSeconds = n)),
  },
  { name: 'HISTORY_BACKFILL', default: 'true', doc: 'with MARKET_SOURCE=exchange: backfill and keep syncing candle history in the background', apply: bool((b, o) => (o.historyBackfill = b)) },
  {
    name: 'HISTORY_BACKFILL_COINS',
    default: '*',
    doc: 'coins to backfill (e.g. BTC,ETH); * = every listed coin',
    apply: (v, o) => {
      const l = list(v).map((x) => x.toUpperCase());
      if (l.length === 0) return 'must be * or a list of coins';
      o.backfillCoins = l;
      return undefined;
    },
  },
  {
    name: 'HISTORY_BACKFILL_WINDOWS',
    default: '1m:7d,30m:60d,1h:max,1d:max,1mo:max',
    doc: 'base series to backfill and how far back: <1m|30m|1h|1d|1mo>:<days>d or :max (the exchange\'s whole history)',
    apply: (v, o) => {
      const out: BackfillWindow[] = [];
      for (const item of list(v)) {
        const m = /^(\w+):(?:(\d+)d|(max))$/.exec(item);
        if (m === null || !isBaseInterval(m[1] ?? '')) return 'must look like 1m:7d,1h:max (series 1m, 30m, 1h, 1d, 1mo)';
        out.push({ base: m[1] as BaseInterval, days: m[3] === 'max' ? null : Number(m[2]) });
      }
      o.backfillWindows = out;
      return undefined;
    },
  },
  { name: 'HISTORY_SYNC_INTERVAL', default: '60', doc: 'seconds (or 1m, 1h) between incremental syncs and gap checks of backfilled series', apply: duration(5, 86_400, (n, o) => (o.historySyncSeconds = n)) },
  { name: 'QUOTES_SIM_SEED', default: '42', doc: 'seed of the simulated market and rates (integer)', apply: int(0, 2 ** 31 - 1, (n, o) => (o.simulatedSeed = n)) },
  { name: 'QUOTES_PLANS_FILE', default: undefined, doc: 'JSON file with the plans; unset: plans.json shipped with the service', apply: (v, o) => void (o.plansFile = v) },
  {
    name: 'PUBLIC_BASE_URL',
    default: undefined,
    doc: 'origin used in absolute URLs such as coinImageUrl (e.g. https://quotes.example.com); unset: taken from each request',
    apply: (v, o) => {
      if (v === undefined) return void (o.publicBaseUrl = undefined);
      if (!/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(v)) return 'must be an http(s) URL';
      o.publicBaseUrl = v.replace(/\/+$/, '');
      return undefined;
    },
  },
  { name: 'QUOTES_REFRESH_SECONDS', default: '15', doc: 'seconds between market refreshes; also the Cache-Control max-age of quotes', apply: int(1, 3600, (n, o) => (o.refreshSeconds = n)) },
  { name: 'QUOTES_STALE_SECONDS', default: '300', doc: 'a ticker or rate older than this many seconds is answered with 503', apply: int(1, 86400, (n, o) => (o.staleSeconds = n)) },
  {
    name: 'MARKET_REFRESH_INTERVAL',
    default: undefined,
    doc: 'seconds (or 15s, 1m) between ticker refreshes (one batched call per exchange); overrides QUOTES_REFRESH_SECONDS',
    apply: (v, o) => (v === undefined ? undefined : duration(1, 3600, (n, out) => (out.refreshSeconds = Math.round(n)))(v, o)),
  },
  {
    name: 'MARKET_STALE_AFTER',
    default: undefined,
    doc: 'seconds (or 5m) after which a coin\'s data is answered with 503 stating its age; overrides QUOTES_STALE_SECONDS',
    apply: (v, o) => (v === undefined ? undefined : duration(1, 86_400, (n, out) => (out.staleSeconds = Math.round(n)))(v, o)),
  },
  {
    name: 'QUOTES_USAGE_FLUSH_MS',
    default: '1000',
    doc: 'milliseconds between writes of usage counts; 0 writes every request at once (quotas exact across several servers, slower)',
    apply: int(0, 60_000, (n, o) => (o.usageFlushMs = n)),
  },
  {
    name: 'QUOTES_LOG_LEVEL',
    default: 'info',
    doc: `log level: ${LOG_LEVELS.join(', ')}`,
    apply: (v, o) => (v !== undefined && LOG_LEVELS.includes(v) ? void (o.logLevel = v) : `must be one of: ${LOG_LEVELS.join(', ')}`),
  },
  {
    name: 'QUOTES_TRUST_PROXY',
    default: 'false',
    doc: 'true behind a reverse proxy: scheme and host come from X-Forwarded-* headers',
    apply: (v, o) => (v === 'true' || v === 'false' ? void (o.trustProxy = v === 'true') : 'must be true or false'),
  },
  {
    name: 'QUOTES_FAST_PATH',
    default: 'true',
    doc: 'true: a GET /api/v2/crypto whose answer is already cached, by a token already known, is served ahead of the framework pipeline with identical bytes (applies when access logging is off: QUOTES_LOG_LEVEL warn or above); false: every request takes the full pipeline',
    apply: bool((b, o) => (o.fastPath = b)),
  },
  // Burst limits and the dashboard (issue 8).
  { name: 'RATELIMIT_ENABLED', default: 'true', doc: 'false turns burst limits and sign-in throttling off entirely (monthly quotas still apply)', apply: bool((b, o) => (o.rateLimitEnabled = b)) },
  {
    name: 'RATELIMIT_GRPC_ADDR',
    default: undefined,
    doc: 'host:port of a ratelimit service (gRPC ShouldRateLimit, domain RATELIMIT_DOMAIN) loaded with ratelimit/quotes.yaml; unset: the same engine embedded in this process (counters per process)',
    apply: (v, o) => void (o.rateLimitGrpcAddr = v),
  },
  { name: 'RATELIMIT_GRPC_TLS', default: 'false', doc: 'true: TLS to the ratelimit service with the system roots (implied by any RATELIMIT_GRPC_TLS_* file below)', apply: bool((b, o) => (o.rateLimitTls = b ? { ca: undefined, cert: undefined, key: undefined, serverName: undefined } : undefined)) },
  { name: 'RATELIMIT_GRPC_TLS_CA', default: undefined, doc: 'CA file (PEM) the ratelimit server certificate must chain to', apply: () => undefined },
  { name: 'RATELIMIT_GRPC_TLS_CERT', default: undefined, doc: 'client certificate file (PEM) for mutual TLS (with _KEY)', apply: () => undefined },
  { name: 'RATELIMIT_GRPC_TLS_KEY', default: undefined, doc: 'client private key file (PEM) for mutual TLS', apply: () => undefined },
  { name: 'RATELIMIT_GRPC_TLS_SERVER_NAME', default: undefined, doc: 'name to verify in the server certificate instead of the address host', apply: () => undefined },
  {
    name: 'RATELIMIT_TIMEOUT',
    default: '100ms',
    doc: 'deadline of each ShouldRateLimit call (e.g. 50ms, 1s; a bare number is milliseconds); past it RATELIMIT_FAILURE_MODE applies',
    apply: (v, o) => {
      const m = /^(\d+(?:\.\d+)?)\s*(ms|s)?$/.exec((v ?? '').trim());
      const ms = m === null ? NaN : Number(m[1]) * (m[2] === 's' ? 1000 : 1);
      if (!(ms >= 1 && ms <= 60_000)) return 'must be a duration from 1ms to 60s (e.g. 100ms)';
      o.rateLimitTimeoutMs = Math.round(ms);
      return undefined;
    },
  },
  {
    name: 'RATELIMIT_FAILURE_MODE',
    default: 'allow',
    doc: 'when the ratelimit service cannot answer in time: allow (admit unchecked, like Envoy failure_mode_deny=false) or deny (503 with Retry-After: 1); logged and counted either way',
    apply: (v, o) => (v === 'allow' || v === 'deny' ? void (o.rateLimitFailureMode = v) : 'must be allow or deny'),
  },
  { name: 'RATELIMIT_DOMAIN', default: 'quotes', doc: 'rate limit domain of the quotes rules', apply: (v, o) => void (o.rateLimitDomain = v ?? 'quotes') },
  { name: 'RATELIMIT_RULES_DIR', default: undefined, doc: 'rule directory of the embedded engine; unset: services/quotes/ratelimit (quotes.yaml) shipped with the service', apply: (v, o) => void (o.rateLimitRulesDir = v) },
  {
    name: 'DASHBOARD_SIGNUP_PLAN',
    default: 'startup',
    doc: 'plan of new dashboard sign-ups (operators change it per user with `quotes user plan EMAIL PLAN`)',
    apply: (v, o) => (v !== undefined && /^[a-z0-9_-]+$/.test(v) ? void (o.dashboardSignupPlan = v) : 'must be a plan id'),
  },
  { name: 'DASHBOARD_SESSION_TTL', default: '7d', doc: 'lifetime of a dashboard session (seconds, or 30m, 12h, 7d)', apply: duration(60, 365 * 86_400, (n, o) => (o.dashboardSessionSeconds = Math.round(n))) },
  { name: 'DASHBOARD_ASSETS_DIR', default: undefined, doc: 'directory of the built dashboard; unset: services/quotes/dist/web (produced by npm run build)', apply: (v, o) => void (o.dashboardAssetsDir = v) },
];

export class SettingsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid settings:\n  ${problems.join('\n  ')}`);
    this.name = 'SettingsError';
  }
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Record<string, string>> = {}): Readonly<Settings> {
  const out: Partial<Settings> = {};
  const problems: string[] = [];
  for (const d of SETTINGS) {
    const given = overrides[d.name] ?? env[d.name];
    const raw = given === undefined || given === '' ? d.default : given;
    const err = d.apply(raw, out);
    if (err !== undefined) problems.push(`${d.name}=${JSON.stringify(d.name === 'DATABASE_URL' ? given?.replace(/\/\/[^@/]*@/, '//***@') : given)}: ${err}`);
  }
  // Per-exchange URLs are named after the exchange id, so they are found by prefix.
  const urls: Record<string, string> = {};
  const wsUrls: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...env, ...overrides })) {
    const m = /^MARKET_EXCHANGE_(WS_)?URL_([A-Z0-9]+)$/.exec(name);
    if (m === null || value === undefined || value === '') continue;
    const ok = m[1] === undefined ? /^https?:\/\/[^\s]+$/.test(value) : /^wss?:\/\/[^\s]+$/.test(value);
    if (!ok) {
      problems.push(`${name}=${JSON.stringify(value)}: must be an ${m[1] === undefined ? 'http(s)' : 'ws(s)'} URL`);
      continue;
    }
    (m[1] === undefined ? urls : wsUrls)[(m[2] ?? '').toLowerCase()] = value.replace(/\/+$/, '');
  }
  out.exchangeUrls = urls;
  out.exchangeWsUrls = wsUrls;
  if (out.fxSources !== undefined && out.fxSources.length === 0) out.fxSources = out.marketSource === 'simulated' ? ['simulated'] : ['ptax', 'ecb'];
  const tlsFile = (name: string): string | undefined => {
    const v = overrides[name] ?? env[name];
    return v === undefined || v === '' ? undefined : v;
  };
  const [ca, cert, key, serverName] = ['RATELIMIT_GRPC_TLS_CA', 'RATELIMIT_GRPC_TLS_CERT', 'RATELIMIT_GRPC_TLS_KEY', 'RATELIMIT_GRPC_TLS_SERVER_NAME'].map(tlsFile);
  if (ca !== undefined || cert !== undefined || key !== undefined || serverName !== undefined) out.rateLimitTls = { ca, cert, key, serverName };
  if ((cert === undefined) !== (key === undefined)) problems.push('RATELIMIT_GRPC_TLS_CERT and RATELIMIT_GRPC_TLS_KEY must be set together');
  if (problems.length > 0) throw new SettingsError(problems);
  return Object.freeze(out as Settings);
}
