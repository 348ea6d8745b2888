// OpenTelemetry tracing of the quotes service (docs/quotes.md, "Tracing"), built only when
// TRACING_ENABLED=true: compose.ts imports this module lazily, so with tracing off no tracing code
// runs at all.
//
// Spans: one SERVER span per HTTP request (`GET /api/v2/crypto`: method and route template),
// continuing the caller's W3C or B3 context (OTEL_PROPAGATORS); as its children the rate limit
// call (`ShouldRateLimit`, CLIENT; to a remote ratelimit service the context goes along as W3C
// `traceparent` gRPC metadata, so its span joins the same trace) and the store calls
// (`store <repository>.<method>`). The market refresh runs on a timer, outside any request: each
// refresh of the tickers and of the FX rates is a root span (`Market Refresh`).
//
// Nothing is registered globally (no global tracer provider, propagator or context manager): the
// request's context travels in a private AsyncLocalStorage entered in the onRequest hook.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { createTracerProvider, endSpanAround, endSpanWith, propagatorFor, type PropagatorName, shutdownWithin } from '@rls/tracing';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { requestOf, type RateLimitDecider } from '../ratelimit/decider.js';
import type { FxSource, MarketSource } from '../domain/market.js';
import type { Store } from '../domain/repositories.js';
import { wrapDeciderCall } from './decider-wrap.js';

export interface TracingOptions {
  readonly protocol: 'http' | 'grpc';
  readonly serviceName: string;
  readonly serviceNamespace: string;
  /** Empty: a random version 4 UUID. */
  readonly serviceInstanceId: string;
  readonly samplingRate: number;
  readonly propagators: readonly PropagatorName[];
}

export interface TracingDeps {
  readonly logger: Logger;
  /** Replaces the OTLP exporter (tests). */
  readonly exporter?: SpanExporter;
}

export const RATE_LIMIT_SPAN = 'ShouldRateLimit';
export const MARKET_REFRESH_SPAN = 'Market Refresh';

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};
const recordSetter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};


export interface QuotesTracing {
  /** Opens and ends a span per request of `app` (call before the app is ready). */
  instrument(app: FastifyInstance): void;
  /** The decider with a span per call, its context injected into a remote call's metadata. */
  traceDecider(decider: RateLimitDecider): RateLimitDecider;
  /** The store with a span per repository call made within a request. */
  traceStore(store: Store): Store;
  /** The sources with a root span per refresh (tickers, FX rates). */
  traceMarket(market: MarketSource): MarketSource;
  traceFx(fx: FxSource): FxSource;
  /** Exports the queued spans; gives up after `timeoutMs` (default 5 s) so a dead collector cannot hold the shutdown. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** A proxy of `target` whose `methods` run `around` each call (other properties untouched; `instanceof` still holds). */
function aroundMethods<T extends object>(target: T, methods: ReadonlySet<PropertyKey> | 'all', around: (name: string, call: () => unknown) => unknown): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v: unknown = Reflect.get(t, prop, receiver);
      if (typeof v !== 'function' || (methods !== 'all' && !methods.has(prop)) || typeof prop !== 'string') return v;
      const fn = v as (...args: unknown[]) => unknown;
      return (...args: unknown[]) => around(prop, () => fn.apply(t, args));
    },
  });
}

export async function createQuotesTracing(opts: TracingOptions, deps: TracingDeps): Promise<QuotesTracing> {
  const { provider, attributes } = await createTracerProvider(opts, deps);
  const tracer = provider.getTracer('quotes');
  const active = new AsyncLocalStorage<Context>();
  const propagator = propagatorFor(opts.propagators);
  deps.logger.info({ protocol: opts.protocol, ...attributes, samplingRate: opts.samplingRate, propagators: opts.propagators.join(',') }, 'tracing enabled');

  /** A child span of the request's, around `call` (a promise, or a value ended at once); no request, no span. */
  const child = (name: string, kind: SpanKind, attrs: Record<string, string | number>, call: () => unknown): unknown => {
    const parent = active.getStore();
    if (parent === undefined) return call();
    return endSpanAround(tracer.startSpan(name, { kind, attributes: attrs }, parent), call);
  };

  const refreshSpan = (source: string, call: () => unknown): unknown => {
    const span = tracer.startSpan(MARKET_REFRESH_SPAN, { kind: SpanKind.INTERNAL, attributes: { 'market.source': source } }, ROOT_CONTEXT);
    try {
      const out = call();
      if (out instanceof Promise) return endSpanWith(span, out);
      span.end();
      return out;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      span.end();
      throw err;
    }
  };

  return {
    instrument(app) {
      app.addHook('onRequest', (request, reply, done) => {
        const parent = propagator.extract(ROOT_CONTEXT, request.headers, headerGetter);
        // The route template, never the raw path (bounded span names; tokens travel in queries).
        const route = request.routeOptions.url ?? 'unmatched';
        const span = tracer.startSpan(`${request.method} ${route}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route } }, parent);
        // Ended when the response is over (written, or the client gone), whoever wrote it (a
        // hijacked reply included): the span lives in this closure, not on the request.
        const res = reply.raw;
        res.once('close', () => {
          span.setAttribute('http.response.status_code', res.statusCode);
          if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        });
        active.run(trace.setSpan(parent, span), done);
      });
    },
    traceDecider(decider) {
      return wrapDeciderCall(decider, (call) => (req, metadata) => {
        const parent = active.getStore();
        if (parent === undefined) return call(req, metadata);
        const span = tracer.startSpan(RATE_LIMIT_SPAN, { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'grpc', 'rpc.service': 'envoy.service.ratelimit.v3.RateLimitService', domain: requestOf(req).domain, decider: decider.kind } }, parent);
        const carrier: Record<string, string> = { ...metadata };
        propagator.inject(trace.setSpan(parent, span), carrier, recordSetter);
        let answer;
        try {
          answer = call(req, carrier);
        } catch (err) {
          answer = Promise.reject(err as Error);
        }
        return endSpanWith(span, Promise.resolve(answer));
      });
    },
    traceStore(store) {
      const repos = ['tokens', 'usage', 'candles', 'fxRates', 'backfill', 'users', 'sessions', 'dailyUsage'] as const;
      const wrapped: Record<string, unknown> = {};
      for (const name of repos) {
        wrapped[name] = aroundMethods(store[name], 'all', (method, call) => child(`store ${name}.${method}`, SpanKind.CLIENT, { 'db.system': store.kind }, call));
      }
      return new Proxy(store, { get: (t, prop, receiver) => (typeof prop === 'string' && prop in wrapped ? wrapped[prop] : Reflect.get(t, prop, receiver) as unknown) });
    },
    traceMarket(market) {
      return aroundMethods(market, new Set(['tickers']), (_m, call) => refreshSpan('tickers', call));
    },
    traceFx(fx) {
      return aroundMethods(fx, new Set(['latest']), (_m, call) => refreshSpan('fx', call));
    },
    async shutdown(timeoutMs = 5000) {
      await shutdownWithin(provider, deps.logger, timeoutMs);
    },
  };
}
