// The composition root's assembly: it turns frozen settings into a store (compose-counter-store.ts),
// the decision service, health, the rule source (files, xDS, or the primary process in worker
// mode), tracing, and the gRPC and HTTP servers, without listening. The implementation choices and
// the decision path's wrappers (in their declared order) come from compose.ts; this file only
// connects what it returns — `start()` opens the listeners, `stop()` drains them. main.ts calls
// `composeRateLimitApp` and only runs the process: settings -> build -> listen, and signals.
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { RateLimitService, StatsStore, mathRandom, systemClock, type Clock, type CounterStore, type RandomSource, type RuleSet } from '@rls/engine';
import { buildRlqs, callStatsRecorder, composeDecisionPath, composeServiceStore, limiterOptionsFrom, operatorMonitorFor, serverTlsOptions, xdsRuleSink } from './compose.js';
import { composeCounterStore, describeCounterStore } from './compose-counter-store.js';
import { HealthChecker, trackStoreHealth } from './health.js';
import type { Logger } from './logger.js';
import { fileProviderOptions, FileRuleProvider } from './provider/file-provider.js';
import { createDebugServer, type DebugServer } from './server/debug-server.js';
import { debugAccessPolicyOf } from './server/debug-settings.js';
import { createGrpcServer, type GrpcServer } from './server/grpc-server.js';
import { grpcLimitsOf } from './server/grpc-limits-settings.js';
import { createHttpServer, type HttpServer } from './server/http-server.js';
import { httpTimeoutsFrom, requestLimitsFrom } from './server/limits-settings.js';
import type { Scheduler } from './provider/xds-backoff.js';
import { createXdsRuleProvider, type XdsRuleProvider } from './provider/xds-rule-provider.js';
import { xdsConnectionOptions } from './provider/xds-settings.js';
import { CertificateReloader } from './server/tls-cert-reloader.js';
import type { LoadedSettings, Settings } from './settings.js';
import type { WorkerRole } from './cluster/worker-role.js';
import type { WorkersStatus } from './cluster/worker-status.js';
import type { WorkerSupervision } from './operator/operator-monitor.js';
import { SnapshotRuleProvider } from './provider/snapshot-provider.js';
import { startStatsSinks, type StatsSinks, type StatsSinksOptions } from './stats/stats-sinks.js';
import type { OperatorMonitor, OperatorContext } from './operator/operator-monitor.js';
import { CountersRoutes } from './operator/counters-routes.js';
import { OperatorRoutes } from './operator/operator-routes.js';
import { sourcesOfSnapshot, specsOfFiles } from './operator/rules-view.js';
import type { Tracing } from './tracing/tracing.js';

export interface AppDeps {
  logger: Logger;
  /** Statistics sinks to start with the listeners (none when omitted: stats stay in memory). */
  statsSinks?: StatsSinksOptions;
  clock?: Clock;
  random?: RandomSource;
  stats?: StatsStore;
  /** OpenTelemetry tracing (TRACING_ENABLED); without it no tracing code runs per request. */
  tracing?: Tracing;
  /** Timers of the xDS reconnect backoff (real timers when omitted). */
  xdsScheduler?: Scheduler;
  /**
   * Worker mode: the primary process owns the rule source and sends snapshots (the caller applies
   * them), so this app neither watches the rule files nor opens an xDS stream.
   */
  rulesFromPrimary?: boolean;
  /** Worker mode: the service-wide statistics the debug server's /stats shows (the primary's totals). */
  statsTotals?: () => Promise<StatsStore>;
  /** Worker mode: this worker's id, the number of workers and the primary's state of them (the operator page shows them). */
  worker?: { id: number; count: number; status?: () => WorkersStatus | undefined };
}

export interface RateLimitApp {
  readonly settings: Settings;
  readonly logger: Logger;
  readonly stats: StatsStore;
  readonly health: HealthChecker;
  readonly store: CounterStore;
  readonly service: RateLimitService;
  readonly grpc: GrpcServer;
  readonly http: HttpServer;
  readonly debug: DebugServer;
  /** What the operator page shows (undefined with OPERATOR_PAGE=off). */
  readonly operator: OperatorMonitor | undefined;
  /** The FILE rule provider (reads, watches and reloads the rule directory). */
  readonly fileProvider: FileRuleProvider;
  /** Directory the rule files are read from. */
  readonly rulesDirectory: string;
  /** The xDS rule source (CONFIG_TYPE=GRPC_XDS_SOTW), started by main; undefined in file mode. */
  readonly xds: XdsRuleProvider | undefined;
  /** Watches GRPC_SERVER_TLS_CERT/_KEY while the listeners are open (GRPC_SERVER_USE_TLS). */
  readonly certReloader: CertificateReloader | undefined;
  /** Reads and swaps in the rule files; on error keeps the previous rules and returns the error. */
  loadRules(): Error | undefined;
  /** The running statistics sinks (after start). */
  sinks(): StatsSinks | undefined;
  /** Starts watching the rules and opens the gRPC, HTTP and debug listeners. */
  start(): Promise<{ grpc: AddressInfo; http: AddressInfo; debug: AddressInfo }>;
  /**
   * Graceful stop: health unhealthy at once, listeners keep serving for SHUTDOWN_DRAIN_DELAY, then
   * stop accepting while in-flight requests finish (bounded by SHUTDOWN_TIMEOUT), then the store
   * closes, the last stats are pushed and traces flushed. Calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

/** Health component names, as upstream names them. */
export const HEALTH_STORE = 'redis';
export const HEALTH_CONFIG = 'config';
export const HEALTH_SIGTERM = 'sigterm';

export function buildRateLimitApp(settings: Settings, deps: AppDeps): RateLimitApp {
  const logger = deps.logger;
  const clock = deps.clock ?? systemClock;
  const random = deps.random ?? mathRandom;
  const stats = deps.stats ?? new StatsStore();
  stats.limitSeries({
    maxSeriesPerGroup: settings.statsMaxSeriesPerRule,
    onGroupFull: (group, max) =>
      logger.warn({ rule: group, max }, `rule ${group} reached STATS_MAX_SERIES_PER_RULE (${max}) per-value statistics; further values count into ${group}.overflow`),
  });

  const health = new HealthChecker({ [HEALTH_STORE]: false, [HEALTH_SIGTERM]: true });
  if (settings.healthyWithAtLeastOneConfigLoaded) health.set(HEALTH_CONFIG, false);

  const { store, ready: storeReady, quotaShare } = composeCounterStore(settings, { clock, random, stats, logger });
  trackStoreHealth(health, HEALTH_STORE, store, settings.kvstoreHealthCheckActiveConnection);

  const tracing = deps.tracing;
  const requestLimits = requestLimitsFrom(settings);
  const operator = operatorMonitorFor(settings, { clock, random, stats, requestLimits });
  const parts = { tracing, operator };
  const service = new RateLimitService({ store: composeServiceStore(store, parts).store, stats, clock, random, options: limiterOptionsFrom(settings) });
  service.onRulesChanged((rules: RuleSet) => {
    if (settings.healthyWithAtLeastOneConfigLoaded) health.set(HEALTH_CONFIG, rules.domainCount > 0);
  });

  // The wrappers around the decision, in compose.ts's declared order (DECISION_PATH).
  const { shouldRateLimit, wrapEncoded } = composeDecisionPath(service, parts);
  const healthSource = { isHealthy: () => health.isHealthy(), onChange: (cb: () => void) => health.onChange(() => cb()) };
  const rlqs = settings.rlqsEnabled ? buildRlqs(settings, service, quotaShare, { clock, stats, logger }) : undefined;
  const grpcTls = serverTlsOptions(settings);
  const grpc = createGrpcServer({
    shouldRateLimit,
    health: healthSource,
    onCall: callStatsRecorder(stats),
    logger: logger.child({ component: 'grpc' }),
    tls: grpcTls,
    maxConnectionAgeMs: settings.grpcMaxConnectionAgeMs,
    maxConnectionAgeGraceMs: settings.grpcMaxConnectionAgeGraceMs,
    limits: grpcLimitsOf(settings),
    requestLimits,
    rlqs,
    random,
    wrapShouldRateLimit: wrapEncoded,
  });
  const certReloader =
    grpcTls === undefined
      ? undefined
      : new CertificateReloader({
          certPath: settings.grpcServerTlsCert,
          keyPath: settings.grpcServerTlsKey,
          initial: { key: grpcTls.key as Buffer, cert: grpcTls.cert as Buffer },
          apply: (pair) => grpc.setTls({ ...grpcTls, key: pair.key, cert: pair.cert }),
          logger: logger.child({ component: 'tls' }),
        });
  const xds =
    settings.configType !== 'GRPC_XDS_SOTW' || deps.rulesFromPrimary === true
      ? undefined
      : createXdsRuleProvider({
          ...xdsConnectionOptions(settings),
          sink: xdsRuleSink(service, operator, clock),
          stats,
          logger: logger.child({ component: 'xds' }),
          scheduler: deps.xdsScheduler,
          random,
        });
  const http = createHttpServer({
    shouldRateLimit,
    health: healthSource,
    logger: logger.child({ component: 'http' }),
    maxBodyBytes: settings.httpMaxBodyBytes,
    requestLimits,
    timeouts: httpTimeoutsFrom(settings),
    maxConnections: settings.httpMaxConnections,
  });
  const debug = createDebugServer({
    rules: () => service.currentRuleSet(),
    stats,
    statsTotals: deps.statsTotals,
    logger: logger.child({ component: 'debug' }),
    timeouts: httpTimeoutsFrom(settings),
    maxConnections: settings.debugMaxConnections,
    access: debugAccessPolicyOf(settings),
    operator: operator === undefined ? undefined : new OperatorRoutes({ mode: settings.operatorPage === 'on' ? 'on' : 'loopback', monitor: operator, context: operatorContext() }),
    counters:
      operator === undefined
        ? undefined
        : new CountersRoutes({
            mode: settings.operatorPage === 'on' ? 'on' : 'loopback',
            resetEnabled: settings.countersResetEnabled,
            rules: () => service.currentRuleSet(),
            store,
            localCache: () => service.localCache,
            cacheKeyPrefix: settings.cacheKeyPrefix,
            clock,
            stats,
            logger: logger.child({ component: 'counters' }),
            requestLimits,
          }),
  });
  function operatorContext(): OperatorContext {
    const storeLabel = describeCounterStore(settings);
    return {
      store: () => ({ kind: store.kind, description: storeLabel, connected: store.isConnected() }),
      // The store component keeps upstream's name (`redis`) in /healthcheck; the page names the real store.
      health: () =>
        Object.entries(health.snapshot()).map(([component, healthy]) => ({ component, label: component === HEALTH_STORE ? `store (${storeLabel})` : component, healthy })),
      localCache: () => {
        const cache = service.localCache;
        if (cache === undefined) return undefined;
        cache.refreshGauges();
        return {
          entries: cache.size,
          budgetBytes: settings.localCacheSizeInBytes,
          hits: stats.gauge('ratelimit.localcache.hitCount').value(),
          misses: stats.gauge('ratelimit.localcache.missCount').value(),
        };
      },
      workers: () => (deps.worker === undefined ? { mode: 'single', count: 1 } : { mode: 'worker', id: deps.worker.id, count: deps.worker.count, ...supervision(deps.worker.status?.()) }),
    };
  }
  const fileProvider = new FileRuleProvider(
    fileProviderOptions(settings),
    { sink: service, stats, logger: logger.child({ component: 'rules' }) },
  );
  const rulesDirectory = fileProvider.directory;
  if (operator !== undefined) {
    fileProvider.onLoad((o) => {
      if (o.ok) operator.rules.loaded({ kind: 'file', directory: rulesDirectory, specs: specsOfFiles(o.sources), files: o.sources.length }, clock.now());
      else operator.rules.failed('file', o.error, clock.now(), o.file);
    });
    xds?.onSnapshot((snapshot) => operator.rules.loaded(sourcesOfSnapshot(snapshot), clock.now()));
  }
  const loadRules = (): Error | undefined => {
    const outcome = fileProvider.load();
    return outcome.ok ? undefined : outcome.error;
  };

  let sinks: StatsSinks | undefined;
  let gaugeTimer: NodeJS.Timeout | undefined;
  const start = async (): Promise<{ grpc: AddressInfo; http: AddressInfo; debug: AddressInfo }> => {
    if (xds === undefined && deps.rulesFromPrimary !== true) fileProvider.start();
    operator?.start();
    if (deps.statsSinks !== undefined) {
      sinks = await startStatsSinks(deps.statsSinks, { store: stats, logger });
      if (sinks.metricsAddress !== undefined) logger.info({ address: `${sinks.metricsAddress.address}:${sinks.metricsAddress.port}` }, 'metrics server listening');
      const cache = service.localCache;
      if (cache !== undefined) {
        gaugeTimer = setInterval(() => cache.refreshGauges(), Math.min(deps.statsSinks.flushIntervalMs, 10_000));
        gaugeTimer.unref();
      }
    }
    await storeReady();
    await debug.listen(settings.debugHost, settings.debugPort);
    const d = debug.address() as AddressInfo;
    logger.info({ address: `${d.address}:${d.port}` }, 'debug server listening');
    if (settings.grpcUds !== '') await grpc.listenUnix(settings.grpcUds);
    else await grpc.listen(settings.grpcHost, settings.grpcPort);
    certReloader?.start();
    await http.listen(settings.host, settings.port);
    // A unix socket has no port: it is reported as { address: <path>, family: 'unix', port: 0 }.
    const g = settings.grpcUds !== '' ? { address: settings.grpcUds, family: 'unix', port: 0 } : (grpc.address() as AddressInfo);
    const h = http.address() as AddressInfo;
    logger.info({ address: g.family === 'unix' ? `unix:${g.address}` : `${g.address}:${g.port}`, tls: grpcTls !== undefined, mtls: grpcTls?.requestClientCert === true }, 'gRPC server listening');
    logger.info({ address: `${h.address}:${h.port}` }, 'HTTP server listening');
    return { grpc: g, http: h, debug: d };
  };

  let stopping: Promise<void> | undefined;
  const drainAndClose = async (): Promise<void> => {
    health.set(HEALTH_SIGTERM, false);
    fileProvider.stop();
    xds?.stop();
    certReloader?.stop();
    const drainMs = settings.shutdownDrainDelayMs;
    if (drainMs > 0 && grpc.address() !== null) {
      logger.info({ drainDelayMs: drainMs }, 'health is unhealthy; listeners keep serving until the drain delay has passed');
      await delay(drainMs);
    }
    // Keep part of SHUTDOWN_TIMEOUT for the store, the last stats push and the trace flush.
    const timeoutMs = settings.shutdownTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    const graceMs = Math.max(0, timeoutMs - Math.min(3000, timeoutMs / 2));
    logger.info({ graceMs }, 'listeners stop accepting; waiting for in-flight requests');
    await Promise.all([grpc.close(graceMs), http.close(graceMs), debug.close()]);
    await store.close();
    operator?.stop();
    if (gaugeTimer !== undefined) clearInterval(gaugeTimer);
    service.localCache?.refreshGauges();
    await sinks?.stop();
    await tracing?.shutdown(Math.max(100, Math.min(5000, deadline - Date.now() - 100)));
  };
  const stop = (): Promise<void> => (stopping ??= drainAndClose());

  return { settings, logger, stats, health, store, service, grpc, http, debug, operator, fileProvider, rulesDirectory, xds, certReloader, loadRules, sinks: () => sinks, start, stop };
}

export interface ComposeOptions {
  logger: Logger;
  /** Worker mode: this process is one of WORKERS; the primary owns the rule source and the stats sinks. */
  workerRole?: WorkerRole | undefined;
  /** Worker mode: how many workers the primary runs (shown on the operator page). */
  workerCount?: number | undefined;
}

/** The app with the choice of where its first rules come from. */
export interface ComposedApp {
  readonly app: RateLimitApp;
  /**
   * Resolves once the first rules are in, as the rule source requires before listening: the rule
   * files are read at once; xDS waits for the first configuration event (unless
   * FORCE_START_WITHOUT_INITIAL_CONFIG); a worker waits for the primary's snapshot (rejects when
   * the primary is gone first).
   */
  readonly firstRules: () => Promise<void>;
  /** A stop before listening: ends whatever firstRules waits on (the xDS stream). */
  readonly abandonFirstRules: () => void;
}

/** Builds the process's app from the loaded settings: tracing and the rule source chosen here. */
export async function composeRateLimitApp(loaded: LoadedSettings, opts: ComposeOptions): Promise<ComposedApp> {
  const { settings } = loaded;
  const { logger, workerRole } = opts;
  let tracing: Tracing | undefined;
  if (settings.tracingEnabled) {
    // Loaded only when wanted: the OpenTelemetry SDK costs start-up time and memory.
    const { createTracing } = await import('./tracing/tracing.js');
    tracing = await createTracing(
      {
        protocol: settings.tracingExporterProtocol,
        serviceName: settings.tracingServiceName,
        serviceNamespace: settings.tracingServiceNamespace,
        serviceInstanceId: settings.tracingServiceInstanceId,
        samplingRate: settings.tracingSamplingRate,
        propagators: settings.tracingPropagators,
      },
      { logger: logger.child({ component: 'tracing' }) },
    );
  }
  const app = buildRateLimitApp(settings, {
    logger,
    ...(workerRole !== undefined
      ? { stats: workerRole.stats, rulesFromPrimary: true, statsTotals: () => workerRole.statsTotals(), worker: { id: workerRole.id, count: opts.workerCount ?? 1, status: () => workerRole.workersStatus() } }
      : { statsSinks: loaded.stats }),
    ...(tracing !== undefined ? { tracing } : {}),
  });
  if (workerRole !== undefined) {
    // The primary loaded and validated the rules; this worker compiles each snapshot it sends, the
    // current one before listening (also when it replaces a worker that died).
    const snapshots = new SnapshotRuleProvider({ sink: app.service, stats: app.stats, mergeDomainConfig: settings.mergeDomainConfig, logger: logger.child({ component: 'rules' }) });
    workerRole.onRules((snapshot) => {
      snapshots.apply(snapshot);
      // The primary sends good loads as snapshots and rejected ones as messages (below).
      if (snapshot !== undefined && snapshots.version === snapshot.version) app.operator?.rules.loaded(sourcesOfSnapshot(snapshot), Date.now(), 'primary');
    });
    workerRole.onRulesError((f) => app.operator?.rules.failed(`primary ${f.source}`, f.error, f.at, f.file));
    return { app, firstRules: () => workerRole.firstRules, abandonFirstRules: () => undefined };
  }
  const xds = app.xds;
  if (xds !== undefined) {
    const firstRules = async (): Promise<void> => {
      xds.start();
      if (settings.forceStartWithoutInitialConfig) return;
      logger.info({ server: settings.xdsServerUrl }, 'waiting for the first configuration from the xDS management server');
      await xds.firstConfigEvent;
    };
    return { app, firstRules, abandonFirstRules: () => xds.stop() };
  }
  return {
    app,
    firstRules: () => {
      app.loadRules();
      return Promise.resolve();
    },
    abandonFirstRules: () => undefined,
  };
}

/** What the operator page shows of the primary's state of the workers (nothing before its first word). */
function supervision(s: WorkersStatus | undefined): WorkerSupervision | Record<string, never> {
  if (s === undefined) return {};
  return {
    serving: s.serving,
    startFailures: s.startFailures,
    ...(s.failingSince !== undefined ? { failingSince: s.failingSince } : {}),
    ...(s.lastFailure !== undefined ? { lastFailure: s.lastFailure } : {}),
    ...(s.nextStartAt !== undefined ? { nextStartAt: s.nextStartAt } : {}),
  };
}
