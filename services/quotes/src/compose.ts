import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { openPostgresCluster } from './cluster/postgres-cluster.js';
import { Replication } from './cluster/replication.js';
import type { Logger } from 'pino';
import type { Logging } from './logger.js';
import { defaultPlansFile, loadPlans } from './accounts/plans.js';
import { systemClock, type Clock } from './clock.js';
import { ExchangeFx } from './market/exchange-fx.js';
import { ExchangeMarket } from './market/exchange-market.js';
import { LayeredFx } from './market/layered-fx.js';
import { ecbFx, exchangeMarket, ptaxFx, upstreams, type SourceOptions } from './market-sources.js';
import { UpstreamCounters } from './market/retry.js';
import { SimulatedFx } from './market/simulated-fx.js';
import { SimulatedMarket } from './market/simulated-market.js';
import { fileSupply, PaprikaSupply, type SupplySource } from './market/supply-source.js';
import type { FxSource, MarketSource } from './domain/market.js';
import { QuotesMetrics } from './observability/quotes-metrics.js';
import type { QuotesTracing } from './observability/tracing.js';
import { packageRoot } from './package-root.js';
import { connectRemoteDecider, createGate, embeddedDecider } from './ratelimit/create-gate.js';
import type { RateLimitDecider } from './ratelimit/decider.js';
import type { RateLimitGate } from './ratelimit/rate-limit-gate.js';
import type { FxSourceKind, Settings } from './settings.js';
import { parseDatabaseUrl, redactDatabaseUrl } from './store/database-url.js';
import { MemoryStore } from './store/memory-store.js';
import { openPostgresStore } from './store/postgres-store.js';
import { openSqliteStore } from './store/sqlite-store.js';
import type { Store } from './domain/repositories.js';

import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { AccountService } from './accounts/account-service.js';
import { BufferedUsage, type UsageCounter } from './accounts/buffered-usage.js';
import { DailyUsage } from './accounts/daily-usage.js';
import { MonthlyQuota } from './accounts/monthly-quota.js';
import type { PlanCatalog } from './accounts/plans.js';
import type { RequestLimiter } from './accounts/request-limiter.js';
import type { RandomBytes } from './accounts/tokens.js';
import { UserService } from './accounts/user-service.js';
import { AccessLog, requestIdGenerator } from './api/access-log.js';
import { authenticator } from './api/authenticator.js';
import { AnswerWriter } from './api/answers.js';
import { CryptoPipeline } from './api/crypto-pipeline.js';
import { FastQuotePath, installFastPath } from './api/fast-quote.js';
import { IconStore } from './api/icons.js';
import { buildApp, type AppServices } from './app.js';
import { liveCandleKey } from './cluster/market-state-codec.js';
import type { Ingestion } from './cluster/replication.js';
import { CgBodyCache } from './coingecko/cg-route.js';
import { requestCoingeckoToken } from './coingecko/cg-routes.js';
import { MarketData } from './coingecko/market-data.js';
import { DashboardAssets } from './dashboard/dashboard-assets.js';
import { Backfiller } from './history/backfill.js';
import { FxHistory } from './history/fx-history.js';
import { HistoryService } from './history/history-service.js';
import { HistorySlots } from './history/history-slots.js';
import { LiveCandleKeeper } from './history/live-candle-keeper.js';
import { PricedHistory } from './history/priced-history.js';
import type { AccessSink } from './logger.js';
import { CoinCatalog, iconsDirectory, loadCoinNames } from './market/coin-catalog.js';
import { MarketSnapshots } from './market/market-snapshots.js';
import { buildOpenApi } from './openapi.js';
import { BurstLimiter } from './ratelimit/burst-limiter.js';
import { shippedRulesDir } from './ratelimit/create-gate.js';
import { LoginThrottle } from './ratelimit/login-throttle.js';
import { planMinuteLimits } from './ratelimit/plan-minute-limits.js';
import { PublicThrottle } from './ratelimit/public-throttle.js';
import { QuoteService } from './service/quote-service.js';
import { QuoteStreamHub } from './stream/quote-stream-hub.js';

/*
 * The composition root of the quotes service: the one module that picks implementations and builds
 * the services. In order:
 *   createDeps     settings -> AppDeps: the store, the market and FX sources, the rate limit
 *                  decider and its wrappers (tracing, metrics), replication (a test builds AppDeps itself)
 *   buildServices  AppDeps -> QuotesServices: every service of the app, each built once, with the
 *                  choices the settings and the deps make (buffered usage, burst limits, the market
 *                  refresh mode, backfill, live candles, exchange streams, the visitors' pages)
 *   buildApp       (app.ts) registers the hooks and routes with the services it is given
 *   createFastPath the cached-quote fast path over the built app (QUOTES_FAST_PATH), one call
 * `composeApp` runs the last three. Used by main.ts and the CLI, the two entry points, and the tests.
 */

/** Collaborators of the app: picked from the settings by `createDeps`, or by a test. */
export interface AppDeps {
  store: Store;
  market: MarketSource;
  fx: FxSource;
  plans: PlanCatalog;
  clock: Clock;
  logger: Logger;
  /** Where the cached-quote path writes its access lines (createLogging); without it they go through `logger.info`. */
  accessSink?: AccessSink;
  random: RandomBytes;
  /** Checks after the monthly quota (burst limits plug in here). */
  extraLimiters?: readonly RequestLimiter[];
  /** Upstream request/failure counters shared by the sources. */
  counters?: UpstreamCounters;
  /** Burst limits and sign-in throttling (remote or embedded rate limiter); none when absent. */
  rateLimit?: RateLimitGate | undefined;
  /** Several replicas on PostgreSQL: the ingest lease and the shared market state; absent for one process. */
  replication?: Replication | undefined;
  /** The Prometheus metrics (QUOTES_METRICS_PORT); main.ts instruments the built app and serves them. */
  metrics?: QuotesMetrics | undefined;
}

/** The services of a composed app: what buildApp is given, and what the metrics, the CLI-like operations of tests and main.ts read. */
export interface QuotesServices extends AppServices {
  history: HistoryService;
  /** History over explicit time windows in any currency, within the request budget (CoinGecko charts). */
  pricedHistory: PricedHistory;
  /** Present with a live market source and HISTORY_BACKFILL=true. */
  backfill: Backfiller | undefined;
  counters: UpstreamCounters;
  /** The monthly quota limiter (the metrics read its refusals). */
  monthlyQuota: MonthlyQuota;
}

/** An app as production runs it: the built app, its services and the fast path when installed. */
export interface ComposedApp {
  app: FastifyInstance;
  services: QuotesServices;
  /** The cached-quote fast path, when installed (QUOTES_FAST_PATH). */
  fastPath: FastQuotePath | undefined;
}

/** Services, then the app with its routes, then the fast path in front of it. */
export async function composeApp(settings: Readonly<Settings>, deps: AppDeps): Promise<ComposedApp> {
  const services = await buildServices(settings, deps);
  const app = await buildApp(settings, services);
  const fastPath = createFastPath(settings, services, app, deps.accessSink);
  return { app, services, fastPath };
}

/** Every service of the app, each built once from the settings and the deps. */
export async function buildServices(settings: Readonly<Settings>, deps: AppDeps): Promise<QuotesServices> {
  const { store, market, clock } = deps;
  const refreshMs = settings.refreshSeconds * 1000;
  const staleMs = settings.staleSeconds * 1000;
  const log = deps.logger;

  const replication = deps.replication;
  // An `api` replica takes the coin list from the shared market state (cluster/replication.ts).
  const symbols = replication === undefined ? await market.listSymbols() : await replication.initialSymbols(() => market.listSymbols());
  const catalog = new CoinCatalog(symbols, loadCoinNames());
  // PostgreSQL cannot tell cheaply on its own: the replicas poll a change counter (cluster/replication.ts).
  const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: deps.plans, clock, random: deps.random, changeVersion: store.changeVersion ?? replication?.changeVersion });
  const buffered = settings.usageFlushMs > 0 ? new BufferedUsage(store.usage) : undefined;
  const usage: UsageCounter = buffered ?? store.usage;
  const daily = new DailyUsage(store.dailyUsage);
  const flushUsage = async (): Promise<void> => {
    await buffered?.flush();
    await daily.flush();
  };
  // Burst limits first: a request refused with 429 never counts against the monthly quota.
  const burst = deps.rateLimit === undefined ? [] : [new BurstLimiter(deps.rateLimit)];
  const monthlyQuota = new MonthlyQuota(usage, clock, daily);
  const limiters: RequestLimiter[] = [...burst, monthlyQuota, ...(deps.extraLimiters ?? [])];
  const users = new UserService({
    users: store.users,
    sessions: store.sessions,
    accounts,
    plans: deps.plans,
    usage,
    usageStore: store.usage,
    daily,
    flushUsage,
    clock,
    random: deps.random,
    signupPlan: settings.dashboardSignupPlan,
    sessionTtlMs: settings.dashboardSessionSeconds * 1000,
  });
  const live = market.kind !== 'simulated';
  const counters = deps.counters ?? new UpstreamCounters();
  // A live source refreshes on a timer, so no request ever waits on an exchange's retries.
  const snapshots = new MarketSnapshots({ market, fx: deps.fx, clock, symbols, refreshMs, maxVenues: settings.exchangeTickersMax, log: log.child({ component: 'market' }), mode: live || replication !== undefined ? 'background' : 'on-demand', ...(replication === undefined ? {} : { mayIngest: replication.mayIngest, publish: replication.publish }) });
  // Several replicas: requests fill history from the sources only on the ingesting replica, and
  // every replica serves the in-progress candles published with the market state (cluster/replication.ts).
  const sharedHistory = replication === undefined ? {} : { mayFetch: replication.mayIngest, sharedLive: replication.liveCandle };
  const history = new HistoryService({ candles: store.candles, source: market, cacheBytes: settings.historyCacheBytes, chunkCandles: settings.historyChunkCandles, ...sharedHistory });
  const fxHistory = new FxHistory(deps.fx, clock, { repo: store.fxRates, log: log.child({ component: 'fx-history' }), earliest: '2009-01-01', ...(replication === undefined ? {} : { mayFetch: replication.mayIngest, reloadMs: refreshMs }) });
  const backfill =
    live && settings.historyBackfill
      ? new Backfiller({ source: market, candles: store.candles, states: store.backfill, history, clock, log: log.child({ component: 'backfill' }), windows: settings.backfillWindows })
      : undefined;
  const quoteService = new QuoteService({ snapshots, history, fxHistory, catalog, clock, staleMs, refreshMs, cacheBytes: settings.quoteCacheBytes, historyMaxPoints: settings.historyMaxPoints, historyAnswerCacheBytes: settings.historyAnswerCacheBytes, historySlots: new HistorySlots(settings.historyConcurrency, settings.historyQueue) });
  const pricedHistory = new PricedHistory({ history, fxHistory, clock, maxPoints: settings.historyMaxPoints });
  const marketData = new MarketData({ snapshots, history, fxHistory, catalog, clock, staleMs, maxPoints: settings.historyMaxPoints });
  // Live-price streams: fed by every new snapshot, bounded by the QUOTES_STREAM_* settings.
  const streams = new QuoteStreamHub({
    feed: snapshots,
    // One coin's record for every origin: the streams put each client's origin in as they write.
    coinJson: async (coin, currency) => (await quoteService.quoteJson({ coins: [coin], currency })).text.slice(1, -1),
    // Revocations and plan changes end open streams within the token cache's change delay.
    access: { version: () => accounts.tokensVersion(), livePlans: (ids) => accounts.livePlans(ids) },
    clock,
    log: log.child({ component: 'streams' }),
    epoch: deps.random(6).toString('base64url'),
    limits: {
      maxPerToken: settings.streamMaxPerToken,
      maxTotal: settings.streamMaxTotal,
      heartbeatMs: settings.streamHeartbeatSeconds * 1000,
      chargeMs: settings.streamChargeSeconds * 1000,
      bufferBytes: settings.streamBufferBytes,
      stallMs: settings.streamStallSeconds * 1000,
      lifetimeMs: settings.streamLifetimeSeconds * 1000,
    },
  });
  // What the ingesting replica runs (the only process, without replicas): market refresh (tickers
  // and FX), exchange streams, history backfill.
  const wanted = settings.backfillCoins.includes('*') ? symbols : symbols.filter((s) => settings.backfillCoins.includes(s));
  // Several replicas: the ingesting one keeps the newest candles and FX fixings in the database.
  const keeper =
    replication === undefined
      ? undefined
      : new LiveCandleKeeper({ source: market, candles: store.candles, history, fxHistory, fxCurrencies: deps.fx.currencies, clock, log: log.child({ component: 'history-keeper' }), symbols: () => wanted, bases: [...new Set(settings.backfillWindows.map((w) => w.base))], key: liveCandleKey });
  if (keeper !== undefined) replication?.publishLiveCandles(keeper.current);
  const ingestion: Ingestion = {
    start: async () => {
      snapshots.start();
      if (market instanceof ExchangeMarket) await market.startStreams(symbols);
      backfill?.start(() => wanted, settings.historySyncSeconds * 1000);
      keeper?.start(refreshMs);
    },
    stop: async () => {
      snapshots.stop();
      await backfill?.stop();
      await keeper?.stop();
      await market.close?.();
    },
  };
  // Several replicas: the lease decides when this process ingests; one live process always does.
  const ingest: Ingestion | undefined =
    replication !== undefined
      ? {
          start: () => {
            replication.start(snapshots, ingestion);
            return Promise.resolve();
          },
          stop: () => replication.stop(),
        }
      : live
        ? ingestion
        : undefined;
  const visitorPlan = deps.plans.get(settings.dashboardSignupPlan);
  const commonHeaders = [
    'x-data-source', market.kind,
    'access-control-allow-origin', '*',
    'access-control-expose-headers', 'ETag, X-Data-Source, X-Quota-Limit, X-Quota-Remaining, X-Quota-Reset, Retry-After',
  ];
  // GET /api/v2/crypto, once, for fastify's route and the pre-router alike (api/crypto-pipeline.ts).
  const cryptoPipeline = new CryptoPipeline({
    accounts,
    limiters,
    quotes: quoteService,
    catalog,
    clock,
    publicBaseUrl: settings.publicBaseUrl,
    commonHeaders,
    writer: new AnswerWriter(settings.compression ? settings.compressionMinBytes : undefined, log),
    log,
  });
  return {
    clock,
    logger: log,
    plans: deps.plans,
    random: deps.random,
    store,
    marketSource: market.kind,
    fxKind: deps.fx.kind,
    accounts,
    users,
    limiters,
    burst,
    usage,
    auth: { brapi: authenticator(accounts, limiters), coingecko: authenticator(accounts, limiters, requestCoingeckoToken) },
    catalog,
    snapshots,
    fxHistory,
    quoteService,
    marketData,
    cgBodies: new CgBodyCache(settings.coingeckoCacheBytes),
    streams,
    flushUsage,
    ingest,
    rateLimit: deps.rateLimit,
    minuteLimits: deps.rateLimit === undefined ? undefined : planMinuteLimits(settings.rateLimitRulesDir ?? shippedRulesDir(), settings.rateLimitDomain),
    loginThrottle: new LoginThrottle(deps.rateLimit),
    publicMarket: settings.publicMarket && visitorPlan !== undefined ? { plan: visitorPlan, throttle: new PublicThrottle(deps.rateLimit) } : undefined,
    dashboardAssets: new DashboardAssets(settings.dashboardAssetsDir ?? join(packageRoot(), 'dist', 'web')),
    icons: new IconStore(iconsDirectory()),
    openapi: buildOpenApi(deps.plans),
    requestIds: requestIdGenerator(),
    commonHeaders,
    cryptoPipeline,
    history,
    pricedHistory,
    backfill,
    counters,
    monthlyQuota,
  };
}

/**
 * The pre-router in front of the built app (QUOTES_FAST_PATH; api/fast-quote.ts): `GET
 * /api/v2/crypto` handed to the app's CryptoPipeline without fastify's per-request work. Undefined
 * when off, when the server has no single request listener to stand in front of, or behind a
 * trusted proxy where fastify alone reads X-Forwarded-* (the scheme, unless PUBLIC_BASE_URL
 * fixes the origin, and the client address of the access lines). With access logging on, it
 * writes fastify's access lines itself (AccessLog, on the app's logger).
 */
export function createFastPath(settings: Readonly<Settings>, services: AppServices, app: FastifyInstance, accessSink?: AccessSink): FastQuotePath | undefined {
  if (!settings.fastPath) return undefined;
  const log = services.logger;
  const accessLogged = log.isLevelEnabled('info');
  if (settings.trustProxy && (settings.publicBaseUrl === undefined || accessLogged)) return undefined;
  const fast = new FastQuotePath({
    pipeline: services.cryptoPipeline,
    scheme: (req) => ((req.socket as TLSSocket).encrypted === true ? 'https' : 'http'),
    access: accessLogged ? { log: new AccessLog(app.log, accessSink), requestId: services.requestIds, clientIp: (req) => req.socket.remoteAddress ?? '' } : undefined,
  });
  if (!installFastPath(app.server, fast)) return undefined;
  app.addHook('preClose', (done) => {
    fast.enabled = false;
    done();
  });
  return fast;
}

/**
 * Collaborators of the app as production runs it. With `tracing` (TRACING_ENABLED; main.ts loads
 * it), the store, the sources and the rate limit decider are wrapped in its spans.
 */
export function createDeps(settings: Readonly<Settings>, logging: Logging, clock: Clock = systemClock, waits: { sleep?: (ms: number) => Promise<void> } = {}, tracing?: QuotesTracing): AppDeps {
  const { logger, access: accessSink } = logging;
  const plans = loadPlans(settings.plansFile ?? defaultPlansFile(packageRoot()));
  const opened = openStore(settings);
  const store = tracing?.traceStore(opened) ?? opened;
  const counters = new UpstreamCounters();
  const sources = createSources(settings, { clock, log: logger, counters, ...waits });
  const market = tracing?.traceMarket(sources.market) ?? sources.market;
  const fx = tracing?.traceFx(sources.fx) ?? sources.fx;
  // The Prometheus registry when QUOTES_METRICS_PORT is set (main.ts serves it).
  const metrics = settings.metricsPort > 0 ? new QuotesMetrics() : undefined;
  const observe = (d: RateLimitDecider): RateLimitDecider => {
    const traced = tracing?.traceDecider(d) ?? d;
    return metrics?.wrapDecider(traced) ?? traced;
  };
  const rateLimit = createRateLimitGate(settings, logger, clock, observe);
  const replication = createReplication(settings, logger);
  return { store, market, fx, plans, clock, logger, accessSink, random: randomBytes, counters, rateLimit, replication, metrics };
}

/**
 * On PostgreSQL, where several replicas may share the database: the ingest lease and the shared
 * market state (cluster/replication.ts). Undefined for SQLite and `memory:` (one process).
 */
export function createReplication(settings: Readonly<Settings>, logger: Logger): Replication | undefined {
  const target = parseDatabaseUrl(settings.databaseUrl, settings.dataDir);
  if (target?.kind !== 'postgres') return undefined;
  // A renewal slower than a fifth of the lease counts as failed (the next one is due then).
  const cluster = openPostgresCluster(target.url, { leaseStatementMs: Math.max(200, Math.floor(settings.leaderLeaseMs / 5)) });
  return new Replication({
    cluster,
    role: settings.role,
    holder: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    leaseMs: settings.leaderLeaseMs,
    pollMs: settings.statePollMs,
    now: () => performance.now(),
    log: logger.child({ component: 'replicas' }),
  });
}

/** The store DATABASE_URL names (see parseDatabaseUrl). */
export function openStore(settings: Readonly<Pick<Settings, 'databaseUrl' | 'dataDir'>>): Store {
  const target = parseDatabaseUrl(settings.databaseUrl, settings.dataDir);
  switch (target?.kind) {
    case 'sqlite':
      return openSqliteStore(target.file);
    case 'postgres':
      return openPostgresStore(target.url);
    case 'memory':
      return new MemoryStore();
    case undefined:
      throw new Error(`unsupported DATABASE_URL scheme: ${redactDatabaseUrl(settings.databaseUrl ?? '')}`);
  }
}

/** The market source (MARKET_SOURCE) and the FX source (FX_SOURCE, layered when several). */
export function createSources(settings: Readonly<Settings>, o: SourceOptions): { market: MarketSource; fx: FxSource } {
  const up = upstreams(settings, o);
  let market: MarketSource;
  let exchange: ExchangeMarket | undefined;
  // Filled in below; the market asks it only after start-up (to price fiat-quoted pairs).
  const fxRef: { current?: FxSource } = {};
  if (settings.marketSource === 'simulated') {
    market = new SimulatedMarket({ seed: settings.simulatedSeed, clock: o.clock });
  } else {
    let supply: SupplySource | undefined;
    if (settings.supplyFile !== undefined) supply = fileSupply(settings.supplyFile);
    else if (settings.supplyUrl !== undefined) supply = new PaprikaSupply(settings.supplyUrl, up.http, o.clock, o.log.child({ component: 'supply' }));
    exchange = exchangeMarket(settings, o, up, supply, () => (fxRef.current === undefined ? Promise.reject(new Error('no FX yet')) : fxRef.current.latest()));
    market = exchange;
  }
  const make = (kind: FxSourceKind): FxSource => {
    switch (kind) {
      case 'simulated':
        return new SimulatedFx({ seed: settings.simulatedSeed, clock: o.clock });
      case 'ptax':
        return ptaxFx(settings, o, up);
      case 'ecb':
        return ecbFx(settings, o, up);
      case 'exchange':
        if (exchange === undefined) throw new Error('FX_SOURCE=exchange needs MARKET_SOURCE=exchange');
        return new ExchangeFx(exchange);
    }
  };
  const list = settings.fxSources.map(make);
  const fx = list.length === 1 ? list[0]! : new LayeredFx(list, o.log.child({ component: 'fx' }), o.counters);
  fxRef.current = fx;
  return { market, fx };
}

/**
 * Remote when RATELIMIT_GRPC_ADDR is set, embedded otherwise; undefined with RATELIMIT_ENABLED=false.
 * `observe` wraps the decider (metrics, tracing).
 */
export function createRateLimitGate(settings: Readonly<Settings>, logger: Logger, clock: Clock, observe: (d: RateLimitDecider) => RateLimitDecider = (d) => d): RateLimitGate | undefined {
  if (!settings.rateLimitEnabled) return undefined;
  const address = settings.rateLimitGrpcAddr;
  const decider: RateLimitDecider =
    address === undefined ? embeddedDecider(settings.rateLimitRulesDir, clock, settings.rateLimitMemoryMaxBytes) : connectRemoteDecider({ address, tls: settings.rateLimitTls, timeoutMs: settings.rateLimitTimeoutMs }, logger);
  return createGate(observe(decider), { domain: settings.rateLimitDomain, failureMode: settings.rateLimitFailureMode, address }, logger, clock);
}
