import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AccountService } from './accounts/account-service.js';
import { BufferedUsage } from './accounts/buffered-usage.js';
import { MonthlyQuota } from './accounts/monthly-quota.js';
import type { PlanCatalog } from './accounts/plans.js';
import type { RequestLimiter } from './accounts/request-limiter.js';
import type { RandomBytes } from './accounts/tokens.js';
import { authenticator } from './api/authenticator.js';
import { FastQuotePath, installFastPath } from './api/fast-quote.js';
import { parseQueryString } from './api/query-string.js';
import { registerCryptoRoutes } from './api/crypto-routes.js';
import { DashboardAssets } from './api/dashboard-assets.js';
import { registerDashboardRoutes } from './api/dashboard-routes.js';
import { DailyUsage } from './accounts/daily-usage.js';
import { UserService } from './accounts/user-service.js';
import { BurstLimiter } from './ratelimit/burst-limiter.js';
import { LoginThrottle } from './ratelimit/login-throttle.js';
import type { RateLimitGate } from './ratelimit/rate-limit-gate.js';
import { installErrorHandling } from './api/error-handler.js';
import { IconStore } from './api/icons.js';
import { registerMetaRoutes } from './api/meta-routes.js';
import { buildOpenApi } from './api/openapi.js';
import './api/request-context.js';
import type { Clock } from './clock.js';
import { FxHistory } from './history/fx-history.js';
import { HistoryService } from './history/history-service.js';
import { CoinCatalog, iconsDirectory, loadCoinNames } from './market/coin-catalog.js';
import { MarketSnapshots } from './market/market-snapshots.js';
import { Backfiller } from './history/backfill.js';
import { ExchangeMarket } from './market/exchange-market.js';
import { UpstreamCounters } from './market/retry.js';
import type { FxSource, MarketSource } from './market/types.js';
import { packageRoot } from './package-root.js';
import { QuoteService } from './service/quote-service.js';
import type { Settings } from './settings.js';
import type { Store } from './store/types.js';

/** Collaborators of the app: picked from the settings by compose.ts, or by a test. */
export interface AppDeps {
  store: Store;
  market: MarketSource;
  fx: FxSource;
  plans: PlanCatalog;
  clock: Clock;
  logger: Logger;
  random: RandomBytes;
  /** Checks after the monthly quota (burst limits plug in here). */
  extraLimiters?: readonly RequestLimiter[];
  /** Upstream request/failure counters shared by the sources. */
  counters?: UpstreamCounters;
  /** Burst limits and sign-in throttling (remote or embedded rate limiter); none when absent. */
  rateLimit?: RateLimitGate | undefined;
}

/** Services built by the app, reachable as `app.quotes` (CLI-like operations in tests). */
export interface QuotesServices {
  accounts: AccountService;
  history: HistoryService;
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
  /** The cached-quote fast path, when installed (QUOTES_FAST_PATH with access logging off). */
  fastPath: FastQuotePath | undefined;
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

  const symbols = await market.listSymbols();
  const catalog = new CoinCatalog(symbols, loadCoinNames());
  const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: deps.plans, clock, random: deps.random, changeVersion: store.changeVersion });
  const buffered = settings.usageFlushMs > 0 ? new BufferedUsage(store.usage) : undefined;
  const daily = new DailyUsage(store.dailyUsage);
  const flushUsage = async (): Promise<void> => {
    await buffered?.flush();
    await daily.flush();
  };
  // Burst limits first: a request refused with 429 never counts against the monthly quota.
  const burst = deps.rateLimit === undefined ? [] : [new BurstLimiter(deps.rateLimit)];
  const limiters: RequestLimiter[] = [...burst, new MonthlyQuota(buffered ?? store.usage, clock, daily), ...(deps.extraLimiters ?? [])];
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
  const snapshots = new MarketSnapshots({ market, fx: deps.fx, clock, symbols, refreshMs, log: log.child({ component: 'market' }), mode: live ? 'background' : 'on-demand' });
  const history = new HistoryService({ candles: store.candles, source: market });
  const fxHistory = new FxHistory(deps.fx, clock, { repo: store.fxRates, log: log.child({ component: 'fx-history' }), earliest: '2009-01-01' });
  let backfill: Backfiller | undefined;
  if (live && settings.historyBackfill) {
    backfill = new Backfiller({ source: market, candles: store.candles, states: store.backfill, history, clock, log: log.child({ component: 'backfill' }), windows: settings.backfillWindows });
  }
  const quotes = new QuoteService({ snapshots, history, fxHistory, catalog, clock, staleMs, refreshMs });

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    trustProxy: settings.trustProxy,
    return503OnClosing: true,
    // Per-request child loggers and access lines cost more than the quote itself on the cached
    // path; they exist only when the level shows them (info, fastify's access-log level).
    disableRequestLogging: !log.isLevelEnabled('info'),
    childLoggerFactory: (logger, bindings, opts) => (log.isLevelEnabled('info') ? logger.child(bindings, opts) : logger),
    // One parser for the router and the fast path, so both read a URL the same way.
    routerOptions: { querystringParser: parseQueryString },
  });
  const services: QuotesServices = { accounts, history, snapshots, catalog, store, marketSource: market.kind, flushUsage, backfill, counters, users, rateLimit: deps.rateLimit, fastPath: undefined };
  app.decorate('quotes', services);
  if (live) {
    snapshots.start();
    if (market instanceof ExchangeMarket) await market.startStreams(symbols);
    const wanted = settings.backfillCoins.includes('*') ? symbols : symbols.filter((s) => settings.backfillCoins.includes(s));
    backfill?.start(() => wanted, settings.historySyncSeconds * 1000);
    app.addHook('onClose', async () => {
      snapshots.stop();
      await backfill?.stop();
      await market.close?.();
    });
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
  app.decorateRequest('account', null);
  app.decorateRequest('startedAt', 0);
  // On every response: the data source, so simulated numbers are never mistaken for market data, and CORS.
  const commonHeaders = [
    'x-data-source', market.kind,
    'access-control-allow-origin', '*',
    'access-control-expose-headers', 'ETag, X-Data-Source, X-Quota-Limit, X-Quota-Remaining, X-Quota-Reset, Retry-After',
  ];
  app.addHook('onRequest', (request, reply, done) => {
    request.startedAt = performance.now();
    request.account = null;
    for (let i = 0; i < commonHeaders.length; i += 2) reply.header(commonHeaders[i]!, commonHeaders[i + 1]);
    done();
  });
  installErrorHandling(app);
  registerCryptoRoutes(app, { quotes, catalog, clock, auth: authenticator(accounts, limiters), publicBaseUrl: settings.publicBaseUrl });
  // Access lines are written by fastify's pipeline, so the fast path stands aside while they are on.
  if (settings.fastPath && !log.isLevelEnabled('info')) {
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
      baseUrl: (req) => settings.publicBaseUrl ?? (settings.trustProxy ? undefined : `${(req.socket as TLSSocket).encrypted === true ? 'https' : 'http'}://${req.headers.host ?? ''}`),
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
  });
  registerMetaRoutes(app, {
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
