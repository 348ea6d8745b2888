import compress from '@fastify/compress';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AccountService } from './accounts/account-service.js';
import type { PlanCatalog, Plan } from './accounts/plans.js';
import type { RequestLimiter } from './accounts/request-limiter.js';
import type { RandomBytes } from './accounts/tokens.js';
import type { UsageCounter } from './accounts/buffered-usage.js';
import type { UserService } from './accounts/user-service.js';
import type { Authenticate } from './api/authenticator.js';
import type { CryptoPipeline } from './api/crypto-pipeline.js';
import { compressionOptions } from './api/compression.js';
import { registerCryptoRoutes } from './api/crypto-routes.js';
import { registerCurrencyRoutes } from './api/currency-routes.js';
import { clientErrorOptions, frameworkErrorsOption, installErrorHandling } from './api/error-handler.js';
import type { IconStore } from './api/icons.js';
import { registerMetaRoutes } from './api/meta-routes.js';
import type { Clock } from './clock.js';
import { registerCoinGeckoExchangeRoutes } from './coingecko/cg-exchange-routes.js';
import { registerCoinGeckoHistoryRoutes } from './coingecko/cg-history-routes.js';
import { registerKeyRoute } from './coingecko/cg-key-route.js';
import { registerCoinGeckoRoot, type CgBodyCache } from './coingecko/cg-route.js';
import { registerCoinGeckoRoutes } from './coingecko/cg-routes.js';
import type { MarketData } from './coingecko/market-data.js';
import type { Ingestion } from './cluster/replication.js';
import type { DashboardAssets } from './dashboard/dashboard-assets.js';
import { registerDashboardMarketRoutes } from './dashboard/dashboard-market-routes.js';
import { registerDashboardRoutes } from './dashboard/dashboard-routes.js';
import { registerPublicMarketRoutes } from './dashboard/public-market-routes.js';
import type { Store } from './domain/repositories.js';
import type { FxHistory } from './history/fx-history.js';
import { parseQueryString } from './http/query-string.js';
import type { CoinCatalog } from './market/coin-catalog.js';
import type { MarketSnapshots } from './market/market-snapshots.js';
import type { BurstLimiter } from './ratelimit/burst-limiter.js';
import type { LoginThrottle } from './ratelimit/login-throttle.js';
import type { PublicThrottle } from './ratelimit/public-throttle.js';
import type { RateLimitGate } from './ratelimit/rate-limit-gate.js';
import type { QuoteService } from './service/quote-service.js';
import type { Settings } from './settings.js';
import type { QuoteStreamHub } from './stream/quote-stream-hub.js';
import { registerStreamRoutes } from './stream/stream-routes.js';

/**
 * Every service the HTTP app is built from, built in one place (compose.ts `buildServices`, from the
 * settings and the AppDeps it picked). `buildApp` makes no choice of its own: it registers hooks and
 * routes with what it is given, and each route plugin receives its services as arguments.
 */
export interface AppServices {
  clock: Clock;
  logger: Logger;
  plans: PlanCatalog;
  random: RandomBytes;
  store: Store;
  /** The market source's kind (X-Data-Source on every response; GET /status). */
  marketSource: string;
  fxKind: string;
  accounts: AccountService;
  users: UserService;
  /** Burst limits (429) first, then the monthly quota (402), then any extra limiter. */
  limiters: readonly RequestLimiter[];
  /** The burst limits alone (GET /api/v3/key reports them). */
  burst: readonly BurstLimiter[];
  /** Monthly usage as requests count it (buffered when QUOTES_USAGE_FLUSH_MS > 0). */
  usage: UsageCounter;
  /** The route checks of brapi's routes and of the CoinGecko ones (which also read the CoinGecko key). */
  auth: { brapi: Authenticate; coingecko: Authenticate };
  catalog: CoinCatalog;
  snapshots: MarketSnapshots;
  fxHistory: FxHistory;
  quoteService: QuoteService;
  marketData: MarketData;
  cgBodies: CgBodyCache;
  streams: QuoteStreamHub;
  /** Writes buffered usage counts now (also done periodically and on close). */
  flushUsage: () => Promise<void>;
  /** What this process starts and stops with the app (the market refresh, exchange streams, backfill, replicas); none for an on-demand simulated market. */
  ingest: Ingestion | undefined;
  rateLimit: RateLimitGate | undefined;
  /** Per-minute limits of each plan as the rate limit rules set them (GET /api/v3/key); undefined without a rate limiter. */
  minuteLimits: ReadonlyMap<string, number> | undefined;
  loginThrottle: LoginThrottle;
  /** The visitors' market pages (QUOTES_PUBLIC_MARKET with a signup plan), or undefined when closed. */
  publicMarket: { plan: Plan; throttle: PublicThrottle } | undefined;
  dashboardAssets: DashboardAssets;
  icons: IconStore;
  openapi: Record<string, unknown>;
  /** One request id counter for fastify and the cached-quote fast path (fastify's default format). */
  requestIds: () => string;
  /** Headers every response carries (name, value pairs): the data source, so simulated numbers are never mistaken for market data, and CORS. */
  commonHeaders: readonly string[];
  /** GET /api/v2/crypto, for the route and the pre-router in front of fastify (QUOTES_FAST_PATH). */
  cryptoPipeline: CryptoPipeline;
}

/** Builds the HTTP app without listening (tests use inject or listen on a loopback port). */
export async function buildApp(settings: Readonly<Settings>, services: AppServices): Promise<FastifyInstance> {
  const { clock, catalog, accounts, streams, marketData, snapshots, users, limiters } = services;
  const quotes = services.quoteService;
  const refreshMs = settings.refreshSeconds * 1000;
  const staleMs = settings.staleSeconds * 1000;
  const log = services.logger;

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
    genReqId: services.requestIds,
    // One parser for the router and the fast path, so both read a URL the same way.
    routerOptions: { querystringParser: parseQueryString },
  });
  // What the ingesting replica runs (the only process, without replicas); compose.ts picks it.
  const ingest = services.ingest;
  if (ingest !== undefined) {
    await ingest.start();
    app.addHook('onClose', () => ingest.stop());
  }
  // Daily counts (dashboard) are always written behind, so the timer runs even in write-through mode.
  {
    const timer = setInterval(() => {
      services.flushUsage().catch((err: unknown) => log.error({ err }, 'writing usage counts failed; will retry'));
    }, settings.usageFlushMs > 0 ? settings.usageFlushMs : 1000);
    timer.unref();
    app.addHook('onClose', async () => {
      clearInterval(timer);
      await services.flushUsage();
    });
  }
  // On every response: the data source and CORS (the crypto pipeline writes the same list).
  const commonHeaders = services.commonHeaders;
  app.addHook('onRequest', (request, reply, done) => {
    for (let i = 0; i < commonHeaders.length; i += 2) reply.header(commonHeaders[i]!, commonHeaders[i + 1]);
    done();
  });
  installErrorHandling(app, errorLimits);
  // Before any route, so its onSend hook is on every one of them.
  if (settings.compression) await app.register(compress, compressionOptions(settings.compressionMinBytes));
  registerCryptoRoutes(app, { pipeline: services.cryptoPipeline, catalog, auth: services.auth.brapi });
  registerCoinGeckoRoutes(app, { data: marketData, catalog, clock, auth: services.auth.coingecko, publicBaseUrl: settings.publicBaseUrl, refreshMs, cacheBytes: settings.coingeckoCacheBytes });
  // brapi's fiat currency quotes, on the same tokens, plans and limits as /api/v2/crypto.
  registerCurrencyRoutes(app, { snapshots, fxHistory: services.fxHistory, fxKind: services.fxKind, clock, auth: services.auth.brapi, staleMs, refreshMs });
  // The /api/v3 endpoints added beside cg-routes.ts (history, OHLC range, exchange rates, movers, tickers, exchanges, /key).
  const cgDeps = { data: marketData, catalog, clock, auth: services.auth.coingecko, publicBaseUrl: settings.publicBaseUrl, refreshMs };
  registerCoinGeckoRoot(app);
  registerCoinGeckoHistoryRoutes(app, cgDeps, services.cgBodies);
  registerCoinGeckoExchangeRoutes(app, cgDeps, services.cgBodies);
  registerKeyRoute(app, { accounts, burst: services.burst, usage: services.usage, minuteLimits: services.minuteLimits, clock });
  registerStreamRoutes(app, { hub: streams, accounts, limiters, catalog, publicBaseUrl: settings.publicBaseUrl });
  // Open streams would keep the server from closing: they end first (clients reconnect elsewhere).
  app.addHook('preClose', (done) => {
    streams.closeAll();
    done();
  });
  const gate = services.rateLimit;
  if (gate !== undefined) app.addHook('onClose', async () => gate.close());
  registerDashboardRoutes(app, {
    users,
    throttle: services.loginThrottle,
    assets: services.dashboardAssets,
    random: services.random,
    sessionTtlSeconds: settings.dashboardSessionSeconds,
    publicMarket: settings.publicMarket,
  });
  // The dashboard's market data on the session (counted against the user's token; see the file).
  registerDashboardMarketRoutes(app, { users, accounts, plans: services.plans, limiters, marketData, quotes, catalog, hub: streams, publicBaseUrl: settings.publicBaseUrl });
  // The market and coin pages for visitors without an account, when the operator opens them.
  if (services.publicMarket !== undefined) {
    registerPublicMarketRoutes(app, { marketData, quotes, catalog, plan: services.publicMarket.plan, throttle: services.publicMarket.throttle, publicBaseUrl: settings.publicBaseUrl });
  }
  registerMetaRoutes(app, {
    // `GET /` leads a newcomer to the market page when it is public, else to the API docs.
    home: settings.publicMarket ? '/dashboard/#/market' : '/docs',
    openapi: services.openapi,
    icons: services.icons,
    snapshots,
    clock,
    marketSource: services.marketSource,
    storeKind: services.store.kind,
    staleMs,
  });
  return app;
}
