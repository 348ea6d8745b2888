// Every environment variable of the quotes service, declared once on @rls/settings:
// name, default, unit, meaning. `loadSettings` parses them all at start-up, lists every bad
// variable in one error, and returns a frozen object that is passed down; its type is inferred
// from the declarations. docs/quotes.md's settings table is generated from SETTING_DEFS
// (`npx tsx --conditions=source services/quotes/src/settings-doc.ts`).
import {
  def,
  family,
  optional,
  parseEnum,
  parseFloatIn,
  parseHttpUrl,
  parseInteger,
  parseList,
  parseSecondsIn,
  parseTrueFalse,
  parseWsUrl,
  SettingsReader,
  type Env,
  type ValuesOf,
} from '@rls/settings';
import { isBaseInterval } from './domain/intervals.js';
import { HISTORY_SETTING_DEFS, type BackfillWindow } from './history/history-settings.js';
import { COINGECKO_SETTING_DEFS } from './coingecko/coingecko-settings.js';
import { STREAM_SETTING_DEFS } from './stream/stream-settings.js';
import { METRICS_SETTING_DEFS } from './observability/metrics-settings.js';
import { TRACING_SETTING_DEFS } from './observability/tracing-settings.js';
import { isSupportedDatabaseUrl, parseDatabaseUrl } from './store/database-url.js';
import { parsePublicOrigin } from './origin.js';

export { SettingsError } from '@rls/settings';

export type MarketSourceKind = 'simulated' | 'exchange';
export type FxSourceKind = 'simulated' | 'ptax' | 'ecb' | 'exchange';
const FX_KINDS: readonly FxSourceKind[] = ['simulated', 'ptax', 'ecb', 'exchange'];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const text = (raw: string): string => raw;
const int = (min: number, max: number) => (raw: string): number => parseInteger(raw, min, max);
/** A duration in whole seconds (`90`, `15m`, `4d`) within [min, max] seconds. */
const seconds = (min: number, max: number) => (raw: string): number => Math.round(parseSecondsIn(raw, min, max));
/** Hides the password of a database URL in error messages. */
const redactUrl = (raw: string): string => raw.replace(/\/\/[^@/]*@/, '//***@');

function upperList(raw: string): readonly string[] {
  return parseList(raw).map((x) => x.toUpperCase());
}

export const SETTING_DEFS = {
  host: def({ name: 'QUOTES_HOST', default: '0.0.0.0', meaning: 'Address to listen on.', parse: text }),
  port: def({ name: 'QUOTES_PORT', default: '3000', unit: 'port', meaning: "TCP port (3000 is also the brapi SDK's local environment).", parse: int(0, 65535) }),
  databaseUrl: def({
    name: 'DATABASE_URL',
    default: undefined,
    meaning: 'Unset: SQLite file `<QUOTES_DATA_DIR>/quotes.sqlite`; `postgres://user@host:port/db`: PostgreSQL; `sqlite:<path>`: that SQLite file; `memory:`: nothing kept.',
    redact: redactUrl,
    parse: optional((raw) => {
      if (!isSupportedDatabaseUrl(raw)) throw new Error('must start with postgres://, postgresql://, sqlite: or be memory:');
      return raw;
    }),
  }),
  dataDir: def({ name: 'QUOTES_DATA_DIR', default: './data', unit: 'path', meaning: 'Directory of the default SQLite database.', parse: text }),
  marketSource: def({
    name: 'MARKET_SOURCE',
    default: 'exchange',
    meaning: '`exchange` (live, through ccxt and MARKET_EXCHANGES) or `simulated` (deterministic, offline; what `quotes quickstart` uses when unset).',
    parse: (raw): MarketSourceKind => parseEnum(raw, ['exchange', 'simulated'] as const, false),
  }),
  exchanges: def({
    name: 'MARKET_EXCHANGES',
    default: 'binance',
    unit: 'list',
    meaning: 'Comma-separated ccxt exchange ids, most trusted first (e.g. `binance,binanceus`); the first with a USD-stable pair serves a coin\'s candles.',
    parse: (raw): readonly string[] => {
      const ids = parseList(raw);
      if (ids.length === 0 || ids.some((id) => !/^[a-z][a-z0-9]*$/.test(id))) throw new Error('must be a comma-separated list of ccxt exchange ids (lower case)');
      return ids;
    },
  }),
  exchangeUrls: family({
    name: 'MARKET_EXCHANGE_URL_<ID>',
    pattern: /^MARKET_EXCHANGE_URL_([A-Z0-9]+)$/,
    key: (id) => id.toLowerCase(),
    unit: 'URL',
    meaning: 'Per exchange (e.g. `MARKET_EXCHANGE_URL_BINANCE=https://data-api.binance.vision`): origin replacing every REST host of that exchange, paths kept.',
    parse: parseHttpUrl,
  }),
  exchangeWsUrls: family({
    name: 'MARKET_EXCHANGE_WS_URL_<ID>',
    pattern: /^MARKET_EXCHANGE_WS_URL_([A-Z0-9]+)$/,
    key: (id) => id.toLowerCase(),
    unit: 'URL',
    meaning: "Per exchange: WebSocket origin replacing its stream host; unset: `MARKET_EXCHANGE_URL_<ID>` with ws(s)://, else the exchange's own.",
    parse: parseWsUrl,
  }),
  marketWebsocket: def({ name: 'MARKET_WEBSOCKET', default: 'false', meaning: '`true`: also stream tickers over WebSocket where ccxt supports it (the REST refresh stays as fallback).', parse: parseTrueFalse }),
  outlierPercent: def({
    name: 'MARKET_OUTLIER_PERCENT',
    default: '5',
    unit: 'percent',
    meaning: 'With several exchanges, one whose price deviates more than this from the volume-weighted median is left out and logged (0.01–100).',
    parse: (raw) => parseFloatIn(raw, 0.01, 100),
  }),
  exchangeTickersMax: def({
    name: 'MARKET_EXCHANGE_TICKERS_MAX',
    default: '5000',
    unit: 'tickers',
    meaning:
      'Most per-exchange tickers (one per exchange and pair ingested) kept with each market snapshot, most traded first, for /api/v3/coins/{id}/tickers and /exchanges; also what the shared market state carries to other replicas (1–100000).',
    parse: int(1, 100_000),
  }),
  fiatPairs: def({
    name: 'MARKET_FIAT_PAIRS',
    default: '',
    unit: 'list',
    meaning: 'Fiat quotes (e.g. `BRL,EUR`) whose pairs may price a coin without a USD-stable pair, converted at the live FX rate.',
    parse: (raw) => {
      const l = upperList(raw);
      if (l.some((x) => !/^[A-Z]{3}$/.test(x))) throw new Error('must be a comma-separated list of currency codes');
      return l;
    },
  }),
  requestTimeoutMs: def({ name: 'MARKET_REQUEST_TIMEOUT_MS', default: '10000', unit: 'ms', meaning: 'Time before an exchange or FX request counts as timed out (100–300000).', parse: int(100, 300_000) }),
  retryAttempts: def({ name: 'MARKET_RETRY_ATTEMPTS', default: '4', unit: 'tries', meaning: 'Tries per upstream call (errors, timeouts, 429/418, malformed payloads) before giving up until the next cycle (1–20).', parse: int(1, 20) }),
  retryBaseMs: def({ name: 'MARKET_RETRY_BASE_MS', default: '500', unit: 'ms', meaning: 'First backoff; doubles per try, with equal jitter (between half and all of it).', parse: int(1, 600_000) }),
  retryMaxMs: def({ name: 'MARKET_RETRY_MAX_MS', default: '60000', unit: 'ms', meaning: 'Longest backoff (a Retry-After from the exchange is honoured even when longer).', parse: int(1, 3_600_000) }),
  rateLimitMs: def({
    name: 'MARKET_RATE_LIMIT_MS',
    default: undefined,
    unit: 'ms',
    meaning: "Per unit of request weight for ccxt's throttle (0–60000); unset: the exchange's published limit as ccxt knows it.",
    parse: optional((raw) => parseFloatIn(raw, 0, 60_000)),
  }),
  supplyFile: def({ name: 'MARKET_SUPPLY_FILE', default: undefined, unit: 'path', meaning: 'JSON `{"BTC": 19800000, ...}`: circulating supply per coin; marketCap = price × supply (else 0).', parse: optional(text) }),
  supplyUrl: def({
    name: 'MARKET_SUPPLY_URL',
    default: undefined,
    unit: 'URL',
    meaning: 'CoinPaprika-compatible API base (`GET <url>/v1/tickers`) to fetch circulating supplies hourly, e.g. `https://api.coinpaprika.com`; unset: none.',
    parse: optional(parseHttpUrl),
  }),
  fxSource: def({
    name: 'FX_SOURCE',
    default: 'auto',
    unit: 'list',
    meaning: 'USD exchange-rate sources, first wins per currency: any of `ptax`, `ecb`, `exchange` (live USDT/BRL-style pairs), `simulated`; `auto` = `simulated` with the simulated market, else `ptax,ecb`.',
    parse: (raw): readonly FxSourceKind[] | 'auto' => {
      if (raw === 'auto') return 'auto';
      const l = parseList(raw);
      if (l.length === 0 || l.some((x) => !(FX_KINDS as readonly string[]).includes(x))) throw new Error(`must be auto or a list of: ${FX_KINDS.join(', ')}`);
      return l as FxSourceKind[];
    },
  }),
  ptaxUrl: def({ name: 'FX_PTAX_URL', default: 'https://olinda.bcb.gov.br/olinda/servico/PTAX/versao/v1/odata', unit: 'URL', meaning: 'Base of the BCB PTAX OData service.', parse: parseHttpUrl }),
  ecbUrl: def({ name: 'FX_ECB_URL', default: 'https://www.ecb.europa.eu/stats/eurofxref', unit: 'URL', meaning: 'Base of the ECB reference-rate files (eurofxref-daily.xml, eurofxref-hist.xml).', parse: parseHttpUrl }),
  fxRefreshSeconds: def({ name: 'FX_REFRESH_INTERVAL', default: '600', unit: 'seconds (or 10m, 1h)', meaning: 'Time between fetches of official latest rates (1 s–1 d).', parse: (raw) => parseSecondsIn(raw, 1, 86_400) }),
  fxStaleSeconds: def({
    name: 'FX_STALE_AFTER',
    default: '4d',
    unit: 'seconds (or 30m, 4d)',
    meaning: 'Official rates last fetched longer ago than this make quotes in that currency 503; official rates are daily, so days (60 s–30 d).',
    parse: (raw) => parseSecondsIn(raw, 60, 30 * 86_400),
  }),
  historyBackfill: def({ name: 'HISTORY_BACKFILL', default: 'true', meaning: 'With MARKET_SOURCE=exchange: backfill and keep syncing candle history in the background.', parse: parseTrueFalse }),
  backfillCoins: def({
    name: 'HISTORY_BACKFILL_COINS',
    default: '*',
    unit: 'list',
    meaning: 'Coins to backfill (e.g. `BTC,ETH`); `*` = every listed coin.',
    parse: (raw) => {
      const l = upperList(raw);
      if (l.length === 0) throw new Error('must be * or a list of coins');
      return l;
    },
  }),
  backfillWindows: def({
    name: 'HISTORY_BACKFILL_WINDOWS',
    default: '1m:7d,30m:60d,1h:max,1d:max,1mo:max',
    unit: 'list',
    meaning: "Base series to backfill and how far back: `<1m|30m|1h|1d|1mo>:<days>d` or `:max` (the exchange's whole history).",
    parse: (raw): readonly BackfillWindow[] => {
      const out: BackfillWindow[] = [];
      for (const item of parseList(raw)) {
        const m = /^(\w+):(?:(\d+)d|(max))$/.exec(item);
        const base = m?.[1] ?? '';
        if (m === null || !isBaseInterval(base)) throw new Error('must look like 1m:7d,1h:max (series 1m, 30m, 1h, 1d, 1mo)');
        out.push({ base, days: m[3] === 'max' ? null : Number(m[2]) });
      }
      return out;
    },
  }),
  historySyncSeconds: def({ name: 'HISTORY_SYNC_INTERVAL', default: '60', unit: 'seconds (or 1m, 1h)', meaning: 'Time between incremental syncs and gap checks of backfilled series (5 s–1 d).', parse: (raw) => parseSecondsIn(raw, 5, 86_400) }),
  simulatedSeed: def({ name: 'QUOTES_SIM_SEED', default: '42', unit: 'integer', meaning: 'Seed of the simulated market and rates.', parse: int(0, 2 ** 31 - 1) }),
  plansFile: def({ name: 'QUOTES_PLANS_FILE', default: undefined, unit: 'path', meaning: 'JSON file with the plans; unset: `plans.json` shipped with the service.', parse: optional(text) }),
  publicBaseUrl: def({
    name: 'PUBLIC_BASE_URL',
    default: undefined,
    unit: 'URL',
    meaning:
      'Origin used in absolute URLs such as coinImageUrl (e.g. `https://quotes.example.com`); unset: taken from each request\'s scheme and Host, which must then be a host name or IP address with an optional port (at most 259 characters; otherwise 400).',
    parse: optional(parsePublicOrigin),
  }),
  quoteCacheBytes: def({
    name: 'QUOTES_QUOTE_CACHE_BYTES',
    default: '16777216',
    unit: 'bytes',
    meaning:
      'Memory for built /api/v2/crypto answers without history, kept per market snapshot, currency and coin list whatever the Host (oldest dropped first; 65536–4294967296).',
    parse: int(65_536, 4 * 1024 ** 3),
  }),
  refreshSeconds: def({ name: 'QUOTES_REFRESH_SECONDS', default: '15', unit: 'seconds', meaning: 'Time between market refreshes; also the Cache-Control max-age of quotes (1–3600).', parse: int(1, 3600) }),
  staleSeconds: def({ name: 'QUOTES_STALE_SECONDS', default: '300', unit: 'seconds', meaning: 'A ticker or rate older than this is answered with 503 (1–86400).', parse: int(1, 86_400) }),
  marketRefreshSeconds: def({
    name: 'MARKET_REFRESH_INTERVAL',
    default: undefined,
    unit: 'seconds (or 15s, 1m)',
    meaning: 'Time between ticker refreshes (one batched call per exchange); overrides QUOTES_REFRESH_SECONDS (1 s–1 h).',
    parse: optional(seconds(1, 3600)),
  }),
  marketStaleSeconds: def({
    name: 'MARKET_STALE_AFTER',
    default: undefined,
    unit: 'seconds (or 5m)',
    meaning: "Age after which a coin's data is answered with 503 stating its age; overrides QUOTES_STALE_SECONDS (1 s–1 d).",
    parse: optional(seconds(1, 86_400)),
  }),
  usageFlushMs: def({
    name: 'QUOTES_USAGE_FLUSH_MS',
    default: 'auto',
    unit: 'ms',
    meaning:
      'Time between writes of monthly usage counts (and on shutdown); 0 counts every request in the database at once (one atomic conditional increment: quotas exact across replicas); `auto` = 0 with PostgreSQL (unless QUOTES_SINGLE_REPLICA=true), 1000 otherwise. Above 0, N replicas can overshoot a quota by what they admit within one interval (0–60000).',
    parse: (raw): number | 'auto' => (raw === 'auto' ? 'auto' : parseInteger(raw, 0, 60_000)),
  }),
  role: def({
    name: 'QUOTES_ROLE',
    default: 'all',
    meaning:
      '`all`: serve the API and compete to be the one ingesting replica (exchange polling and streams, FX, history backfill); `api`: serve only, from the shared market state; `ingest`: compete to ingest, not meant to take API traffic. `api` and `ingest` need PostgreSQL (several replicas); SQLite and `memory:` run one process with `all`.',
    parse: (raw) => parseEnum(raw, ['all', 'api', 'ingest'] as const, false),
  }),
  singleReplica: def({
    name: 'QUOTES_SINGLE_REPLICA',
    default: 'false',
    meaning:
      '`true` declares that exactly one replica runs on PostgreSQL: allows the embedded rate limiter (per-process burst counters) and write-behind usage counting. Unset on PostgreSQL, the service refuses to start with the embedded limiter (set RATELIMIT_GRPC_ADDR to a ratelimit service loaded with ratelimit/quotes.yaml).',
    parse: parseTrueFalse,
  }),
  leaderLeaseMs: def({
    name: 'QUOTES_LEADER_LEASE',
    default: '5s',
    unit: 'seconds (or 5s, 1m)',
    meaning:
      'PostgreSQL: length of the ingest lease. The leader renews it every fifth of it and stops ingesting once a renewal has not succeeded for 80 % of it; another replica takes over after it expired, so fail-over takes at most the lease plus a fifth of it plus one market refresh (1–120 s).',
    parse: (raw) => Math.round(parseSecondsIn(raw, 1, 120) * 1000),
  }),
  statePollMs: def({
    name: 'QUOTES_STATE_POLL_INTERVAL',
    default: '1s',
    unit: 'seconds',
    meaning:
      'PostgreSQL: how often every replica reads the shared versions (one query): a replica that does not ingest reloads the market state when it moved, so it lags the ingesting replica by at most this plus a query; a token revocation or plan change made anywhere is seen within two of it (0.1–60 s).',
    parse: (raw) => Math.round(parseSecondsIn(raw, 0.1, 60) * 1000),
  }),
  logLevel: def({ name: 'QUOTES_LOG_LEVEL', default: 'info', meaning: `Log level (pino): ${LOG_LEVELS.join(', ')}.`, parse: (raw) => parseEnum(raw, LOG_LEVELS, false) }),
  logFormat: def({
    name: 'QUOTES_LOG_FORMAT',
    default: 'auto',
    meaning: '`json`: one JSON object a line (for log collectors); `pretty`: coloured, readable lines (pino-pretty); `auto`: pretty when standard output is a terminal, JSON otherwise.',
    parse: (raw) => parseEnum(raw, ['auto', 'json', 'pretty'] as const, false),
  }),
  trustProxy: def({ name: 'QUOTES_TRUST_PROXY', default: 'false', meaning: '`true` behind a reverse proxy: scheme and host come from X-Forwarded-* headers.', parse: parseTrueFalse }),
  fastPath: def({
    name: 'QUOTES_FAST_PATH',
    default: 'true',
    meaning:
      '`true`: every GET /api/v2/crypto is handed to its pipeline ahead of the framework\'s per-request work (a pre-router: identical bytes and the same access log lines); `false`: it reaches the pipeline through the framework\'s route.',
    parse: parseTrueFalse,
  }),
  compression: def({
    name: 'QUOTES_COMPRESSION',
    default: 'true',
    meaning: '`true`: response bodies (API JSON, dashboard assets) are sent brotli- or gzip-compressed when the request\'s Accept-Encoding allows it (brotli preferred; `Vary: Accept-Encoding`); `false`: always as they are.',
    parse: parseTrueFalse,
  }),
  maxHeaderBytes: def({
    name: 'QUOTES_MAX_HEADER_BYTES',
    default: '16384',
    unit: 'bytes',
    meaning: 'Most bytes of a request line plus headers (1024–1048576); more is answered 431 in the brapi error shape and the connection closed.',
    parse: int(1024, 1_048_576),
  }),
  maxBodyBytes: def({
    name: 'QUOTES_MAX_BODY_BYTES',
    default: '65536',
    unit: 'bytes',
    meaning: 'Most bytes of a request body (dashboard forms; 1024–16777216); more is answered 413.',
    parse: int(1024, 16_777_216),
  }),
  compressionMinBytes: def({
    name: 'QUOTES_COMPRESSION_MIN_BYTES',
    default: '4096',
    unit: 'bytes',
    meaning: 'Smallest body that is compressed (0–1048576). Compressing a small quote saves a packet or two but costs several times the rest of the request (docs: Compression), so quotes of a few coins go as they are; history, lists and dashboard assets are compressed.',
    parse: int(0, 1_048_576),
  }),
  rateLimitEnabled: def({ name: 'RATELIMIT_ENABLED', default: 'true', meaning: '`false` turns burst limits and sign-in throttling off entirely (monthly quotas still apply).', parse: parseTrueFalse }),
  rateLimitGrpcAddr: def({
    name: 'RATELIMIT_GRPC_ADDR',
    default: undefined,
    unit: 'host:port',
    meaning: 'Address of a ratelimit service (gRPC ShouldRateLimit, domain RATELIMIT_DOMAIN) loaded with ratelimit/quotes.yaml; unset: the same engine embedded in this process (counters per process).',
    parse: optional(text),
  }),
  rateLimitGrpcTls: def({ name: 'RATELIMIT_GRPC_TLS', default: 'false', meaning: '`true`: TLS to the ratelimit service with the system roots (implied by any RATELIMIT_GRPC_TLS_* file below).', parse: parseTrueFalse }),
  rateLimitGrpcTlsCa: def({ name: 'RATELIMIT_GRPC_TLS_CA', default: undefined, unit: 'path', meaning: 'CA file (PEM) the ratelimit server certificate must chain to.', parse: optional(text) }),
  rateLimitGrpcTlsCert: def({ name: 'RATELIMIT_GRPC_TLS_CERT', default: undefined, unit: 'path', meaning: 'Client certificate file (PEM) for mutual TLS (with _KEY).', parse: optional(text) }),
  rateLimitGrpcTlsKey: def({ name: 'RATELIMIT_GRPC_TLS_KEY', default: undefined, unit: 'path', meaning: 'Client private key file (PEM) for mutual TLS.', parse: optional(text) }),
  rateLimitGrpcTlsServerName: def({ name: 'RATELIMIT_GRPC_TLS_SERVER_NAME', default: undefined, meaning: 'Name to verify in the server certificate instead of the address host.', parse: optional(text) }),
  rateLimitTimeoutMs: def({
    name: 'RATELIMIT_TIMEOUT',
    default: '100ms',
    unit: 'ms (or 1s)',
    meaning: 'Deadline of each ShouldRateLimit call (e.g. 50ms, 1s; a bare number is milliseconds; 1 ms–60 s); past it RATELIMIT_FAILURE_MODE applies.',
    parse: (raw) => {
      const m = /^(\d+(?:\.\d+)?)\s*(ms|s)?$/.exec(raw.trim());
      const ms = m === null ? NaN : Number(m[1]) * (m[2] === 's' ? 1000 : 1);
      if (!(ms >= 1 && ms <= 60_000)) throw new Error('must be a duration from 1ms to 60s (e.g. 100ms)');
      return Math.round(ms);
    },
  }),
  rateLimitFailureMode: def({
    name: 'RATELIMIT_FAILURE_MODE',
    default: 'allow',
    meaning: 'When the ratelimit service cannot answer in time: `allow` (admit unchecked, like Envoy failure_mode_deny=false) or `deny` (503 with Retry-After: 1); logged and counted either way.',
    parse: (raw) => parseEnum(raw, ['allow', 'deny'] as const, false),
  }),
  rateLimitDomain: def({ name: 'RATELIMIT_DOMAIN', default: 'quotes', meaning: 'Rate limit domain of the quotes rules.', parse: text }),
  rateLimitMemoryMaxBytes: def({
    name: 'RATELIMIT_MEMORY_MAX_BYTES',
    default: '67108864',
    unit: 'bytes',
    meaning:
      'Memory the embedded engine\'s counter store may charge (key bytes + 192 per counter; used without RATELIMIT_GRPC_ADDR). When full it drops expired, then least recently used cold counters, never hot ones or ones at their limit; when nothing can go, new counters are refused like an unreachable ratelimit service (RATELIMIT_FAILURE_MODE). 4096–17179869184; default 64 MiB.',
    parse: int(4096, 17_179_869_184),
  }),
  rateLimitRulesDir: def({ name: 'RATELIMIT_RULES_DIR', default: undefined, unit: 'path', meaning: 'Rule directory of the embedded engine; unset: services/quotes/ratelimit (quotes.yaml) shipped with the service.', parse: optional(text) }),
  publicMarket: def({
    name: 'QUOTES_PUBLIC_MARKET',
    default: 'false',
    meaning:
      "`true`: the dashboard's market and coin pages are open to visitors without an account (read-only, no token or quota; the `public_ip` rule of the rate limit rules counts each address's requests), and `GET /` leads there. `false` (default): only signed-in users see them, every view counted against their plan, since a public page gives the market data away outside any plan; `quotes quickstart` turns it on.",
    parse: parseTrueFalse,
  }),
  dashboardSignupPlan: def({
    name: 'DASHBOARD_SIGNUP_PLAN',
    default: 'startup',
    meaning: 'Plan of new dashboard sign-ups (operators change it per user with `quotes user plan EMAIL PLAN`).',
    parse: (raw) => {
      if (!/^[a-z0-9_-]+$/.test(raw)) throw new Error('must be a plan id');
      return raw;
    },
  }),
  dashboardSessionSeconds: def({ name: 'DASHBOARD_SESSION_TTL', default: '7d', unit: 'seconds (or 30m, 12h, 7d)', meaning: 'Lifetime of a dashboard session (60 s–365 d).', parse: seconds(60, 365 * 86_400) }),
  dashboardAssetsDir: def({ name: 'DASHBOARD_ASSETS_DIR', default: undefined, unit: 'path', meaning: 'Directory of the built dashboard; unset: services/quotes/dist/web (produced by npm run build).', parse: optional(text) }),
  ...STREAM_SETTING_DEFS,
  ...HISTORY_SETTING_DEFS,
  ...COINGECKO_SETTING_DEFS,
  ...METRICS_SETTING_DEFS,
  ...TRACING_SETTING_DEFS,
} as const;

type DeclaredValues = ValuesOf<typeof SETTING_DEFS>;

/** TLS to a remote ratelimit service; undefined = plaintext. */
export interface RateLimitTls {
  ca: string | undefined;
  cert: string | undefined;
  key: string | undefined;
  serverName: string | undefined;
}

/**
 * The settings the rest of the service reads: the declared values, with the ones that combine
 * several variables folded into one property (an override, `auto`, the TLS files).
 */
function combine(v: DeclaredValues) {
  const {
    fxSource,
    marketRefreshSeconds,
    marketStaleSeconds,
    rateLimitGrpcTls,
    rateLimitGrpcTlsCa: ca,
    rateLimitGrpcTlsCert: cert,
    rateLimitGrpcTlsKey: key,
    rateLimitGrpcTlsServerName: serverName,
    ...rest
  } = v;
  const anyTlsFile = ca !== undefined || cert !== undefined || key !== undefined || serverName !== undefined;
  const rateLimitTls: RateLimitTls | undefined = anyTlsFile ? { ca, cert, key, serverName } : rateLimitGrpcTls ? { ca: undefined, cert: undefined, key: undefined, serverName: undefined } : undefined;
  const autoFx: readonly FxSourceKind[] = rest.marketSource === 'simulated' ? ['simulated'] : ['ptax', 'ecb'];
  const postgres = parseDatabaseUrl(rest.databaseUrl, rest.dataDir)?.kind === 'postgres';
  return {
    ...rest,
    // Write-through on a shared database: replicas never overshoot a quota together.
    usageFlushMs: rest.usageFlushMs === 'auto' ? (postgres && !rest.singleReplica ? 0 : 1000) : rest.usageFlushMs,
    fxSources: fxSource === 'auto' ? autoFx : fxSource,
    refreshSeconds: marketRefreshSeconds ?? rest.refreshSeconds,
    staleSeconds: marketStaleSeconds ?? rest.staleSeconds,
    rateLimitTls,
  };
}

export type Settings = Readonly<ReturnType<typeof combine>>;

/**
 * Parses the environment (an empty variable counts as unset); `overrides` win over `env`, and
 * `fallbacks` replace a declared default for a variable left unset (the quick start's offline
 * market). Throws SettingsError listing every bad variable.
 */
export function loadSettings(env: Env = process.env, overrides: Partial<Record<string, string>> = {}, fallbacks: Partial<Record<string, string>> = {}): Settings {
  const merged: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(fallbacks)) if (value !== undefined) merged[name] = value;
  for (const [name, value] of Object.entries(env)) if (value !== undefined && value !== '') merged[name] = value;
  for (const [name, value] of Object.entries(overrides)) if (value !== undefined) merged[name] = value;
  const reader = new SettingsReader(merged, { blankIsUnset: true });
  const values = reader.readAll(SETTING_DEFS);
  if ((values.rateLimitGrpcTlsCert === undefined) !== (values.rateLimitGrpcTlsKey === undefined)) {
    reader.fail('RATELIMIT_GRPC_TLS_CERT and RATELIMIT_GRPC_TLS_KEY must be set together');
  }
  reader.finish();
  return Object.freeze(combine(values));
}
