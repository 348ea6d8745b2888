// The quotes service's Prometheus metrics (docs/quotes.md, "Observability"), on prom-client.
//
// Cost on the request path: one onResponse hook (request-stats.ts: array increments, no label
// hashing). Everything else is read at scrape time from counters
// the components keep anyway (the rate limit gate, the monthly quota, the streams, the caches, the
// upstream counters, the fast path), so no request pays for it.
//
// What a client controls and which bound holds it: the path, the method, the Host and every header
// are the client's. Labels are taken only from what the server chose: the route template of the
// matched route (fastify's routeOptions.url, e.g. `/api/v3/coins/:id`; anything unmatched is
// `unmatched`), the method from a fixed list (anything else `other`), the status class (1xx–5xx).
// Upstream names come from the settings (exchange ids, `ptax`, `ecb`), never from a request. So
// the number of series is fixed by the routes and the settings, whatever the traffic.
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { MonthlyQuota } from '../accounts/monthly-quota.js';
import type { FastQuotePath } from '../api/fast-quote.js';
import type { Store } from '../domain/repositories.js';
import type { HistoryService } from '../history/history-service.js';
import type { UpstreamCounters } from '../market/retry.js';
import type { RateLimitGate } from '../ratelimit/rate-limit-gate.js';
import type { QuoteService } from '../service/quote-service.js';
import type { QuoteStreamHub } from '../stream/quote-stream-hub.js';
import type { RateLimitDecider } from '../ratelimit/decider.js';
import type { MarketSnapshot, MarketSnapshots } from '../market/market-snapshots.js';
import { wrapDeciderCall } from './decider-wrap.js';
import { RequestStats } from './request-stats.js';

/** The label of requests that matched no route (404s, probes of random paths). */
export const UNMATCHED_ROUTE = 'unmatched';
const METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
/** The route of the cached-quote fast path (api/fast-quote.ts), which bypasses fastify's routing. */
const FAST_ROUTE = '/api/v2/crypto';


/** The services whose counters and caches are read at scrape time (the composition root's services fit). */
export interface MetricsServices {
  fastPath: Pick<FastQuotePath, 'counts'> | undefined;
  rateLimit: RateLimitGate | undefined;
  monthlyQuota: MonthlyQuota;
  snapshots: MarketSnapshots;
  counters: UpstreamCounters;
  streams: QuoteStreamHub;
  quoteService: QuoteService;
  history: HistoryService;
  store: Store;
}

/** Collaborators read at scrape time; each may be absent (no rate limiter, no replicas, ...). */
export interface MetricsSources {
  services: MetricsServices;
  /** Whether this process runs the ingestion now (the ingest lease holder, or the only process). */
  ingesting: () => boolean;
  clock: { now: () => number };
}

/**
 * Every metric of the service in one registry. Build it in the composition root, pass
 * `wrapDecider` to the rate limit gate's construction, then `instrument` the app once it is built.
 */
export class QuotesMetrics {
  readonly registry = new Registry();
  private readonly requests = new RequestStats();
  private readonly deciderSeconds: Histogram<'decider' | 'outcome'>;
  private readonly deciderErrors: Counter<'decider'>;
  /** Adds the fast path's counts at scrape time (set by `instrument`). */
  private collectFastPath: () => void = () => undefined;

  constructor() {
    const registry = this.registry;
    collectDefaultMetrics({ register: registry });
    this.requests.register(
      registry,
      'quotes_http_requests_total',
      'HTTP requests answered, by route template, method and status class (the cached-quote fast path included).',
      'quotes_http_request_duration_seconds',
      'Time from the request to its response, by route template and method (requests answered by the cached-quote fast path are counted in quotes_http_requests_total only).',
      () => this.collectFastPath(),
    );
    this.deciderSeconds = new Histogram({ name: 'quotes_ratelimit_decider_duration_seconds', help: 'Duration of ShouldRateLimit calls to the remote rate limit service (gRPC), by outcome (ok, error).', labelNames: ['decider', 'outcome'], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1], registers: [registry] });
    this.deciderErrors = new Counter({ name: 'quotes_ratelimit_decider_errors_total', help: 'ShouldRateLimit calls to the remote rate limit service that got no decision (service down, deadline, error); the failure mode applied.', labelNames: ['decider'], registers: [registry] });
  }

  /**
   * The remote decider with its calls timed. The embedded engine is returned as it is: it answers
   * synchronously without I/O, and its failures are counted by the gate (quotes_limiter_decisions_total).
   */
  wrapDecider(decider: RateLimitDecider): RateLimitDecider {
    if (decider.kind !== 'remote') return decider;
    const seconds = this.deciderSeconds;
    const errors = this.deciderErrors;
    const kind = decider.kind;
    errors.inc({ decider: kind }, 0);
    return wrapDeciderCall(decider, (call) => (req, metadata) => {
      const t0 = performance.now();
      return Promise.resolve(call(req, metadata)).then(
        (res) => {
          seconds.observe({ decider: kind, outcome: 'ok' }, (performance.now() - t0) / 1000);
          return res;
        },
        (err: unknown) => {
          seconds.observe({ decider: kind, outcome: 'error' }, (performance.now() - t0) / 1000);
          errors.inc({ decider: kind });
          throw err;
        },
      );
    });
  }

  /** Counts every response of `app` and registers the scrape-time metrics of its components. */
  instrument(app: FastifyInstance, sources: MetricsSources): void {
    const requests = this.requests;
    app.addHook('onResponse', (request, reply, done) => {
      requests.record(request.routeOptions.url ?? UNMATCHED_ROUTE, METHODS.has(request.method) ? request.method : 'other', reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
    this.registerComponents(sources);
  }

  private registerComponents(src: MetricsSources): void {
    const { services } = src;
    const registry = this.registry;
    const reg = [registry];
    // The pre-router keeps plain counts by status class; their growth since the last scrape is added here.
    const fastSeen = [0, 0, 0, 0, 0, 0];
    const requests = this.requests;
    this.collectFastPath = (): void => {
      const fast = services.fastPath;
      if (fast === undefined) return;
      for (let c = 1; c <= 5; c++) {
        const n = fast.counts[c]!;
        requests.add(FAST_ROUTE, 'GET', c, n - fastSeen[c]!);
        fastSeen[c] = n;
      }
    };

    // Limiters: decisions by limiter and outcome.
    const gate = services.rateLimit;
    const monthly = services.monthlyQuota;
    new Counter({
      name: 'quotes_limiter_decisions_total',
      help: 'Limiter decisions: burst limits (rate limit service) admitted, refused (429), failed_open (no decision, admitted), failed_closed (no decision, 503); monthly quota refused (402).',
      labelNames: ['limiter', 'decision'],
      registers: reg,
      collect() {
        this.reset();
        if (gate !== undefined) {
          const c = gate.counters;
          this.inc({ limiter: 'burst', decision: 'admitted' }, Math.max(0, c.calls - c.overLimit - c.failures));
          this.inc({ limiter: 'burst', decision: 'refused' }, c.overLimit);
          this.inc({ limiter: 'burst', decision: 'failed_open' }, c.failedOpen);
          this.inc({ limiter: 'burst', decision: 'failed_closed' }, c.failedClosed);
        }
        this.inc({ limiter: 'monthly', decision: 'refused' }, monthly.refused);
      },
    });
    new Gauge({
      name: 'quotes_ratelimit_enabled',
      help: 'Burst limits through a rate limit decider: 1 on, 0 off (RATELIMIT_ENABLED); label decider is remote or embedded.',
      labelNames: ['decider'],
      registers: reg,
      collect() {
        this.reset();
        this.set({ decider: gate?.decider.kind ?? 'none' }, gate === undefined ? 0 : 1);
      },
    });

    // Ingestion.
    new Gauge({ name: 'quotes_ingest_leader', help: '1 when this replica runs the market ingestion (holds the ingest lease, or is the only process), else 0.', registers: reg, collect() { this.set(src.ingesting() ? 1 : 0); } });
    const refreshed = { tickers: -Infinity, fx: -Infinity };
    let last: MarketSnapshot | undefined;
    const noteSnapshot = (snap: MarketSnapshot): void => {
      if (last === undefined || snap.tickers !== last.tickers) refreshed.tickers = snap.fetchedAt;
      if (last === undefined || snap.fx !== last.fx) refreshed.fx = snap.fetchedAt;
      last = snap;
    };
    const held = services.snapshots.held();
    if (held.version > 0) noteSnapshot(held);
    services.snapshots.onSnapshot(noteSnapshot);
    new Gauge({
      name: 'quotes_market_refresh_age_seconds',
      help: 'Seconds since the last successful refresh of each market data source (tickers, fx) served by this replica; absent before the first.',
      labelNames: ['source'],
      registers: reg,
      collect() {
        this.reset();
        const now = src.clock.now();
        for (const source of ['tickers', 'fx'] as const) {
          const at = refreshed[source];
          if (Number.isFinite(at)) this.set({ source }, Math.max(0, (now - at) / 1000));
        }
      },
    });
    new Gauge({ name: 'quotes_market_snapshot_version', help: 'Version of the market snapshot served (increments on every successful refresh).', registers: reg, collect() { this.set(services.snapshots.latestVersion()); } });
    const upstreamCounter = (kind: 'requests' | 'failures', help: string): void => {
      new Counter({
        name: `quotes_upstream_${kind}_total`,
        help,
        labelNames: ['upstream'],
        registers: reg,
        collect() {
          this.reset();
          const suffix = `.${kind}`;
          for (const [key, n] of Object.entries(services.counters.snapshot())) {
            if (key.endsWith(suffix)) this.inc({ upstream: key.slice(0, -suffix.length) }, n);
          }
        },
      });
    };
    upstreamCounter('requests', 'Requests to market and FX upstreams (exchanges, ptax, ecb, supply), tries included; names come from the settings.');
    upstreamCounter('failures', 'Upstream requests that failed (network, timeout, HTTP status, bad body).');

    // Streams.
    const streams = services.streams;
    new Gauge({ name: 'quotes_streams_open', help: 'Live-price streams (Server-Sent Events) open now.', registers: reg, collect() { this.set(streams.stats().open); } });
    new Counter({ name: 'quotes_stream_events_sent_total', help: 'Quote events written to live-price streams.', registers: reg, collect() { this.reset(); this.inc(streams.stats().eventsSent); } });
    new Counter({
      name: 'quotes_streams_closed_total',
      help: 'Live-price streams closed, by reason (client, stalled, lifetime, charge-refused, revoked, plan-changed, shutdown).',
      labelNames: ['reason'],
      registers: reg,
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(streams.stats().closed)) this.inc({ reason }, n);
      },
    });

    // Caches (each bounded in bytes by a setting).
    const caches = {
      quotes: services.quoteService.cache,
      history_answers: services.quoteService.historyAnswers,
      history_blocks: services.history.cache,
    };
    const perCache = (name: string, help: string, read: (c: { hits: number; misses: number; bytes: number; maxBytes: number }) => number, type: 'counter' | 'gauge'): void => {
      const config = {
        name,
        help,
        labelNames: ['cache'] as const,
        registers: reg,
      };
      if (type === 'counter') {
        new Counter({
          ...config,
          collect() {
            this.reset();
            for (const [cache, c] of Object.entries(caches)) this.inc({ cache }, read(c));
          },
        });
      } else {
        new Gauge({
          ...config,
          collect() {
            for (const [cache, c] of Object.entries(caches)) this.set({ cache }, read(c));
          },
        });
      }
    };
    perCache('quotes_cache_hits_total', 'Cache lookups answered from the cache (quotes, history_answers, history_blocks).', (c) => c.hits, 'counter');
    perCache('quotes_cache_misses_total', 'Cache lookups that missed.', (c) => c.misses, 'counter');
    perCache('quotes_cache_bytes', 'Bytes held by each cache.', (c) => c.bytes, 'gauge');
    perCache('quotes_cache_max_bytes', 'Bound of each cache in bytes (its setting).', (c) => c.maxBytes, 'gauge');

    // History production (QUOTES_HISTORY_CONCURRENCY / QUOTES_HISTORY_QUEUE).
    const slots = services.quoteService.historySlots;
    new Gauge({ name: 'quotes_history_in_production', help: 'Large history answers being produced now.', registers: reg, collect() { this.set(slots.inUse); } });
    new Gauge({ name: 'quotes_history_queued', help: 'Large history answers waiting for a production slot.', registers: reg, collect() { this.set(slots.queued); } });
    new Gauge({ name: 'quotes_history_queue_limit', help: 'Bounds of the history production: concurrency and queue (settings).', labelNames: ['bound'], registers: reg, collect() { this.set({ bound: 'concurrency' }, slots.maxActive); this.set({ bound: 'queue' }, slots.maxWaiting); } });

    // Database pool (PostgreSQL; SQLite and memory have none and export only the kind).
    const store = services.store;
    new Gauge({ name: 'quotes_store_info', help: 'The configured store: 1 with label kind (sqlite, postgres, memory).', labelNames: ['kind'], registers: reg, collect() { this.set({ kind: store.kind }, 1); } });
    const pool = store.poolStats;
    if (pool !== undefined) {
      new Gauge({ name: 'quotes_db_pool_connections', help: 'Connections of the database pool, by state (idle, used).', labelNames: ['state'], registers: reg, collect() { const p = pool(); this.set({ state: 'idle' }, p.idle); this.set({ state: 'used' }, Math.max(0, p.total - p.idle)); } });
      new Gauge({ name: 'quotes_db_pool_waiting', help: 'Queries waiting for a pool connection.', registers: reg, collect() { this.set(pool().waiting); } });
    }
  }

  /** The text exposition of every metric (prom-client's content type). */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
