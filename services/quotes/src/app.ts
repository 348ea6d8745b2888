import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AccessSink } from './logger.js';
import { AccountService } from './accounts/account-service.js';
import { BufferedUsage } from './accounts/buffered-usage.js';
import { MonthlyQuota } from './accounts/monthly-quota.js';
import type { PlanCatalog } from './accounts/plans.js';
import type { RequestLimiter } from './accounts/request-limiter.js';
import type { RandomBytes } from './accounts/tokens.js';
import { authenticator } from './api/authenticator.js';
import { AccessLog, requestIdGenerator } from './api/access-log.js';
import { FastQuotePath, installFastPath } from './api/fast-quote.js';
import compress from '@fastify/compress';
import { compressionOptions } from './api/compression.js';
import { parseQueryString } from './http/query-string.js';
import { registerCryptoRoutes } from './api/crypto-routes.js';
import { registerCurrencyRoutes } from './api/currency-routes.js';
import { registerCoinGeckoRoutes, requestCoingeckoToken } from './coingecko/cg-routes.js';
import { CgBodyCache, registerCoinGeckoRoot } from './coingecko/cg-route.js';
import { registerCoinGeckoHistoryRoutes } from './coingecko/cg-history-routes.js';
import { registerCoinGeckoExchangeRoutes } from './coingecko/cg-exchange-routes.js';
import { registerKeyRoute } from './coingecko/cg-key-route.js';
import { planMinuteLimits } from './ratelimit/plan-minute-limits.js';
import { shippedRulesDir } from './ratelimit/create-gate.js';
import { MarketData } from './coingecko/market-data.js';
import { QuoteStreamHub } from './stream/quote-stream-hub.js';
import { registerStreamRoutes } from './stream/stream-routes.js';
import { DashboardAssets } from './dashboard/dashboard-assets.js';
import { registerDashboardRoutes } from './dashboard/dashboard-routes.js';
import { registerDashboardMarketRoutes } from './dashboard/dashboard-market-routes.js';
import { registerPublicMarketRoutes } from './dashboard/public-market-routes.js';
import { PublicThrottle } from './ratelimit/public-throttle.js';
import { DailyUsage } from './accounts/daily-usage.js';
import { UserService } from './accounts/user-service.js';
import { BurstLimiter } from './ratelimit/burst-limiter.js';
import { LoginThrottle } from './ratelimit/login-throttle.js';
import type { RateLimitGate } from './ratelimit/rate-limit-gate.js';
import { clientErrorOptions, frameworkErrorsOption, installErrorHandling } from './api/error-handler.js';
import { IconStore } from './api/icons.js';
import { registerMetaRoutes } from './api/meta-routes.js';
import { buildOpenApi } from './openapi.js';
import './api/request-context.js';
import type { Clock } from './clock.js';
import { FxHistory } from './history/fx-history.js';
import { HistoryService } from './history/history-service.js';
import { PricedHistory } from './history/priced-history.js';
import { HistorySlots } from './history/history-slots.js';
import { CoinCatalog, iconsDirectory, loadCoinNames } from './market/coin-catalog.js';
import { MarketSnapshots } from './market/market-snapshots.js';
import { Backfiller } from './history/backfill.js';
import { LiveCandleKeeper } from './history/live-candle-keeper.js';
import { liveCandleKey } from './cluster/market-state-codec.js';
import type { Ingestion, Replication } from './cluster/replication.js';
import { ExchangeMarket } from './market/exchange-market.js';
import { UpstreamCounters } from './market/retry.js';
import type { FxSource, MarketSource } from './domain/market.js';
import { packageRoot } from './package-root.js';
import { QuoteService } from './service/quote-service.js';
import type { Settings } from './settings.js';
import type { QuotesMetrics } from './observability/quotes-metrics.js';
import { originOf } from './origin.js';
import type { Store } from './domain/repositories.js';

/** Collaborators of the app: picked from the settings by compose.ts, or by a test. */
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

/** Services built by the app, reachable as `app.quotes` (CLI-like operations in tests). */
export interface QuotesServices {
  accounts: AccountService;
  history: HistoryService;
  /** History over explicit time windows in any currency, within the request budget (CoinGecko charts). */
  pricedHistory: PricedHistory;
  snapshots: MarketSnapshots;
  catalog: CoinCatalog;
  store: Store;
  marketSource: string;
  /** Writes buffered usage counts now (also done periodically and on close). */
  flushUsage: () => Promise<void>;
  /** Present with a live market source and HISTORY_BACKFILL=true. */
  backfill: Backfiller | undefined;
  counters: UpstreamCounters;
  /** Dashboard users (also the CLI's `user plan`). */
  users: UserService;
  rateLimit: RateLimitGate | undefined;
  /** The cached-quote fast path, when installed (QUOTES_FAST_PATH). */
  fastPath: FastQuotePath | undefined;
  /** Live-price streams (GET /api/v2/crypto/stream and the dashboard's). */
  streams: QuoteStreamHub;
  /** The market data of the CoinGecko-compatible API (the dashboard's market page uses its views too). */
  marketData: MarketData;
  /** Quotes and their caches (the metrics read the caches and the history queue). */
  quoteService: QuoteService;
  /** The monthly quota limiter (the metrics read its refusals). */
  monthlyQuota: MonthlyQuota;
}

declare module 'fastify' {
  interface FastifyInstance {
    quotes: QuotesServices;
  }
}

/** Builds the HTTP app without listening (tests use inject or listen on a loopback port). */
export async function buildApp(settings: Readonly<Settings>, deps: AppDeps): Promise<FastifyInstance> {
  const { store, market, clock } = deps;
  const refreshMs = settings.refreshSeconds * 1000;
  const staleMs = settings.staleSeconds * 1000;
  const log = deps.logger;

  const replication = deps.replication;
  // An `api` replica takes the coin list from the shared market state (cluster/replication.ts).
  const symbols = replication === undefined ? await market.listSymbols() : await replication.initialSymbols(() => market.listSymbols());
  const catalog = new CoinCatalog(symbols, loadCoinNames());
  // PostgreSQL cannot tell cheaply on its own: the replicas poll a change counter (cluster/replication.ts).
  const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: deps.plans, clock, random: deps.random, changeVersion: store.changeVersion ?? deps.replication?.changeVersion });
  const buffered = settings.usageFlushMs > 0 ? new BufferedUsage(store.usage) : undefined;
  const daily = new DailyUsage(store.dailyUsage);
  const flushUsage = async (): Promise<void> => {
    await buffered?.flush();
    await daily.flush();
  };
  // Burst limits first: a request refused with 429 never counts against the monthly quota.
  const burst = deps.rateLimit === undefined ? [] : [new BurstLimiter(deps.rateLimit)];
  const monthlyQuota = new MonthlyQuota(buffered ?? store.usage, clock, daily);
  const limiters: RequestLimiter[] = [...burst, monthlyQuota, ...(deps.extraLimiters ?? [])];
  const users = new UserService({
    users: store.users,
    sessions: store.sessions,
    accounts,
    plans: deps.plans,
    usage: buffered ?? store.usage,
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
  let backfill: Backfiller | undefined;
  if (live && settings.historyBackfill) {
    backfill = new Backfiller({ source: market, candles: store.candles, states: store.backfill, history, clock, log: log.child({ component: 'backfill' }), windows: settings.backfillWindows });
  }
  const quotes = new QuoteService({ snapshots, history, fxHistory, catalog, clock, staleMs, refreshMs, cacheBytes: settings.quoteCacheBytes, historyMaxPoints: settings.historyMaxPoints, historyAnswerCacheBytes: settings.historyAnswerCacheBytes, historySlots: new HistorySlots(settings.historyConcurrency, settings.historyQueue) });
  const pricedHistory = new PricedHistory({ history, fxHistory, clock, maxPoints: settings.historyMaxPoints });
  const marketData = new MarketData({ snapshots, history, fxHistory, catalog, clock, staleMs, maxPoints: settings.historyMaxPoints });

  const requestIds = requestIdGenerator();
  const errorLimits = { maxBodyBytes: settings.maxBodyBytes, maxHeaderBytes: settings.maxHeaderBytes };
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    trustProxy: settings.trustProxy,
    // Closing, parser and framework errors in the brapi error shape (api/error-handler.ts).
    return503OnClosing: false,
    ...clientErrorOptions(errorLimits),
    frameworkErrors: frameworkErrorsOption(errorLimits),
    bodyLimit: settings.maxBodyBytes,
    http: { maxHeaderSize: settings.maxHeaderBytes },
    // Per-request child loggers and access lines cost more than the quote itself on the cached
    // path; they exist only when the level shows them (info, fastify's access-log level).
    disableRequestLogging: !log.isLevelEnabled('info'),
    childLoggerFactory: (logger, bindings, opts) => (log.isLevelEnabled('info') ? logger.child(bindings, opts) : logger),
    // One id counter for fastify and the fast path (fastify's default format).
    genReqId: requestIds,
    // One parser for the router and the fast path, so both read a URL the same way.
    routerOptions: { querystringParser: parseQueryString },
  });
  // Live-price streams: fed by every new snapshot, bounded by the QUOTES_STREAM_* settings.
  const streams = new QuoteStreamHub({
    feed: snapshots,
    // One coin's record for every origin: the streams put each client's origin in as they write.
    coinJson: async (coin, currency) => (await quotes.quoteJson({ coins: [coin], currency })).text.slice(1, -1),
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
  const services: QuotesServices = { accounts, history, pricedHistory, snapshots, catalog, store, marketSource: market.kind, flushUsage, backfill, counters, users, rateLimit: deps.rateLimit, fastPath: undefined, streams, marketData, quoteService: quotes, monthlyQuota };
  app.decorate('quotes', services);
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
  if (replication !== undefined) {
    replication.start(snapshots, ingestion);
    app.addHook('onClose', () => replication.stop());
  } else if (live) {
    await ingestion.start();
    app.addHook('onClose', () => ingestion.stop());
  }
  // Daily counts (dashboard) are always written behind, so the timer runs even in write-through mode.
  {
    const timer = setInterval(() => {
      flushUsage().catch((err: unknown) => log.error({ err }, 'writing usage counts failed; will retry'));
    }, settings.usageFlushMs > 0 ? settings.usageFlushMs : 1000);
    timer.unref();
    app.addHook('onClose', async () => {
      clearInterval(timer);
      await flushUsage();
    });
  }
  app.decorateRequest('startedAt', 0);
  // On every response: the data source, so simulated numbers are never mistaken for market data, and CORS.
  const commonHeaders = [
    'x-data-source', market.kind,
    'access-control-allow-origin', '*',
    'access-control-expose-headers', 'ETag, X-Data-Source, X-Quota-Limit, X-Quota-Remaining, X-Quota-Reset, Retry-After',
  ];
  app.addHook('onRequest', (request, reply, done) => {
    request.startedAt = performance.now();
    for (let i = 0; i < commonHeaders.length; i += 2) reply.header(commonHeaders[i]!, commonHeaders[i + 1]);
    done();
  });
  installErrorHandling(app, errorLimits);
  // Before any route, so its onSend hook is on every one of them.
  if (settings.compression) await app.register(compress, compressionOptions(settings.compressionMinBytes));
  registerCryptoRoutes(app, { quotes, catalog, clock, auth: authenticator(accounts, limiters), publicBaseUrl: settings.publicBaseUrl });
  registerCoinGeckoRoutes(app, { data: marketData, catalog, clock, auth: authenticator(accounts, limiters, requestCoingeckoToken), publicBaseUrl: settings.publicBaseUrl, refreshMs, cacheBytes: settings.coingeckoCacheBytes });
  // brapi's fiat currency quotes, on the same tokens, plans and limits as /api/v2/crypto.
  registerCurrencyRoutes(app, { snapshots, fxHistory, fxKind: deps.fx.kind, clock, auth: authenticator(accounts, limiters), staleMs, refreshMs });
  // The /api/v3 endpoints added beside cg-routes.ts (history, OHLC range, exchange rates, movers, tickers, exchanges, /key).
  const cgDeps = { data: marketData, catalog, clock, auth: authenticator(accounts, limiters, requestCoingeckoToken), publicBaseUrl: settings.publicBaseUrl, refreshMs };
  const cgBodies = new CgBodyCache(settings.coingeckoCacheBytes);
  registerCoinGeckoRoot(app);
  registerCoinGeckoHistoryRoutes(app, cgDeps, cgBodies);
  registerCoinGeckoExchangeRoutes(app, cgDeps, cgBodies);
  const minuteLimits = deps.rateLimit === undefined ? undefined : planMinuteLimits(settings.rateLimitRulesDir ?? shippedRulesDir(), settings.rateLimitDomain);
  registerKeyRoute(app, { accounts, burst, usage: buffered ?? store.usage, minuteLimits, clock });
  registerStreamRoutes(app, { hub: streams, accounts, limiters, catalog, publicBaseUrl: settings.publicBaseUrl });
  // Open streams would keep the server from closing: they end first (clients reconnect elsewhere).
  app.addHook('preClose', (done) => {
    streams.closeAll();
    done();
  });
  // With access logging on, the fast path writes fastify's access lines itself (AccessLog).
  if (settings.fastPath) {
    // The route's steps with the account and quote caches in front (see FastQuotePath).
    const fast = new FastQuotePath({
      accounts,
      quotes,
      limiters,
      catalog,
      clock,
      commonHeaders,
      log,
      // As the route computes it; behind a trusted proxy only fastify reads X-Forwarded-*.
      baseUrl: (req) => settings.publicBaseUrl ?? (settings.trustProxy ? undefined : originOf((req.socket as TLSSocket).encrypted === true ? 'https' : 'http', req.headers.host)),
      compressMinBytes: settings.compression ? settings.compressionMinBytes : undefined,
      access: log.isLevelEnabled('info')
        ? { log: new AccessLog(app.log, deps.accessSink), requestId: requestIds, clientIp: (req) => (settings.trustProxy ? undefined : req.socket.remoteAddress) }
        : undefined,
    });
    if (installFastPath(app.server, fast)) {
      services.fastPath = fast;
      app.addHook('preClose', (done) => {
        fast.enabled = false;
        done();
      });
    }
  }
  if (deps.rateLimit !== undefined) {
    const gate = deps.rateLimit;
    app.addHook('onClose', async () => gate.close());
  }
  registerDashboardRoutes(app, {
    users,
    throttle: new LoginThrottle(deps.rateLimit),
    assets: new DashboardAssets(settings.dashboardAssetsDir ?? join(packageRoot(), 'dist', 'web')),
    random: deps.random,
    sessionTtlSeconds: settings.dashboardSessionSeconds,
    publicMarket: settings.publicMarket,
  });
  // The dashboard's market data on the session (counted against the user's token; see the file).
  registerDashboardMarketRoutes(app, { users, accounts, plans: deps.plans, limiters, marketData, quotes, catalog, hub: streams, publicBaseUrl: settings.publicBaseUrl });
  // The market and coin pages for visitors without an account, when the operator opens them.
  const visitorPlan = deps.plans.get(settings.dashboardSignupPlan);
  if (settings.publicMarket && visitorPlan !== undefined) {
    registerPublicMarketRoutes(app, { marketData, quotes, catalog, plan: visitorPlan, throttle: new PublicThrottle(deps.rateLimit), publicBaseUrl: settings.publicBaseUrl });
  }
  registerMetaRoutes(app, {
    // `GET /` leads a newcomer to the market page when it is public, else to the API docs.
    home: settings.publicMarket ? '/dashboard/#/market' : '/docs',
    openapi: buildOpenApi(deps.plans),
    icons: new IconStore(iconsDirectory()),
    snapshots,
    clock,
    marketSource: market.kind,
    storeKind: store.kind,
    staleMs,
  });
  return app;
}
