import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { openPostgresCluster } from './cluster/postgres-cluster.js';
import { Replication } from './cluster/replication.js';
import type { Logger } from 'pino';
import type { Logging } from './logger.js';
import { defaultPlansFile, loadPlans } from './accounts/plans.js';
import type { AppDeps } from './app.js';
import { systemClock, type Clock } from './clock.js';
import { ExchangeFx } from './market/exchange-fx.js';
import type { ExchangeMarket } from './market/exchange-market.js';
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

/*
 * The composition root of the quotes service: the one module that picks implementations from
 * the settings (the store, the market and FX sources, the rate limit decider). Everything else
 * receives what it picked; `buildApp` (app.ts) wires them into the HTTP app. Used by main.ts and
 * the CLI, the two entry points.
 */

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
