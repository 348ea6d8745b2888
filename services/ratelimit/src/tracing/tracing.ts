// OpenTelemetry tracing (docs/ratelimit.md, "Tracing"), built only when TRACING_ENABLED=true: main.ts imports
// this module lazily and the app wraps the service function and the counter store with it, so
// with tracing off there is no tracing code on the request path at all.
//
// Spans: `ShouldRateLimit Execution` (attribute `domain`) per call, continuing the caller's W3C
// `traceparent`/`tracestate` or B3 (`b3`, `X-B3-*`; @rls/tracing) context from gRPC metadata
// or HTTP headers (OTEL_PROPAGATORS picks which), and the counter-store round trip
// as its child (`Redis Pipeline Execution` as upstream names it for Redis, `Counter Store
// Execution` for other stores; attribute `pipeline length` = counters touched).
//
// Nothing is registered globally (no global tracer provider, propagator or context manager): the
// parent span travels from the service wrapper to the store wrapper in a private
// AsyncLocalStorage, so embedding applications keep their own OpenTelemetry set-up.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, SpanKind, trace, type Context, type TextMapGetter, type Tracer } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { decorateStore, type CounterStore, type MaybePromise } from '@rls/engine';
import type { Logger } from '../logger.js';
import type { CallContext, ShouldRateLimitFn } from '../server/grpc-server.js';
import { createTracerProvider, DEFAULT_PROPAGATORS, endSpanAround, propagatorFor, type PropagatorName, shutdownWithin } from '@rls/tracing';

export interface TracingOptions {
  readonly protocol: 'http' | 'grpc';
  readonly serviceName: string;
  readonly serviceNamespace: string;
  /** Empty: a random version 4 UUID. */
  readonly serviceInstanceId: string;
  readonly samplingRate: number;
  /** OTEL_PROPAGATORS: the incoming contexts continued, later ones winning (default: upstream's W3C, baggage, B3). */
  readonly propagators?: readonly PropagatorName[] | undefined;
}

export { DEFAULT_PROPAGATORS, propagatorFor } from '@rls/tracing';

export interface TracingDeps {
  readonly logger: Logger;
  /** Replaces the OTLP exporter (embedding, tests). */
  readonly exporter?: SpanExporter;
  /** Source of the default instance id (injected randomness). */
  readonly uuid?: () => string;
}

export interface Tracing {
  /** The resource attributes spans carry (service.name, .namespace, .instance.id). */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  traceShouldRateLimit(fn: ShouldRateLimitFn): ShouldRateLimitFn;
  traceStore(store: CounterStore): CounterStore;
  /**
   * Exports the spans still queued and stops the exporter; gives up after `timeoutMs` (default
   * 5 s, upstream's bound) so an unreachable collector cannot hold the shutdown.
   */
  shutdown(timeoutMs?: number): Promise<void>;
}

export const SHOULD_RATE_LIMIT_SPAN = 'ShouldRateLimit Execution';
export const REDIS_SPAN = 'Redis Pipeline Execution';
export const STORE_SPAN = 'Counter Store Execution';

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

export async function createTracing(opts: TracingOptions, deps: TracingDeps): Promise<Tracing> {
  const { provider, attributes } = await createTracerProvider(opts, deps);
  const tracer = provider.getTracer('ratelimit');
  const active = new AsyncLocalStorage<Context>();
  const propagators = opts.propagators ?? DEFAULT_PROPAGATORS;
  const propagator = propagatorFor(propagators);
  deps.logger.info({ protocol: opts.protocol, ...attributes, samplingRate: opts.samplingRate, propagators: propagators.join(',') }, 'tracing enabled');

  return {
    resourceAttributes: Object.freeze({ ...attributes }),
    traceShouldRateLimit(fn) {
      return (req, ctx: CallContext) => {
        const parent = ctx.headers !== undefined ? propagator.extract(ROOT_CONTEXT, ctx.headers, headerGetter) : ROOT_CONTEXT;
        const span = tracer.startSpan(SHOULD_RATE_LIMIT_SPAN, { kind: SpanKind.SERVER, attributes: { domain: req.domain } }, parent);
        return endSpanAround(span, () => active.run(trace.setSpan(parent, span), () => fn(req, ctx)));
      };
    },
    traceStore(store) {
      return tracedStore(store, tracer, active, store.kind === 'redis' ? REDIS_SPAN : STORE_SPAN);
    },
    async shutdown(timeoutMs = 5000) {
      await shutdownWithin(provider, deps.logger, timeoutMs);
    },
  };
}


/**
 * A CounterStore whose calls (increment, execute, get) are child spans of the active
 * ShouldRateLimit span, whether the store answers at once (the memory store: the span ends at
 * once) or later. Built with decorateStore: every other member is forwarded (`delete`, ...).
 */
function tracedStore(inner: CounterStore, tracer: Tracer, active: AsyncLocalStorage<Context>, spanName: string): CounterStore {
  const traced =
    <A extends readonly unknown[], T>(attribute: string, call: (items: A) => MaybePromise<T>) =>
    (items: A): MaybePromise<T> => {
      const parent = active.getStore();
      if (parent === undefined) return call(items);
      const span = tracer.startSpan(spanName, { kind: SpanKind.CLIENT, attributes: { [attribute]: items.length } }, parent);
      return endSpanAround(span, () => call(items));
    };
  return decorateStore(inner, {
    increment: (increment) => traced('pipeline length', increment),
    // Sliding windows and token buckets (CounterStore.execute) are traced like increments.
    execute: (execute) => traced('pipeline length', execute),
    get: (get) => traced('keys length', get),
  });
}
