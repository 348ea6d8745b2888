import type { RateLimitRequestMsg, RateLimitResponseMsg } from '@rls/rls-proto';
import type { RateLimitDecider } from '../ratelimit/decider.js';

export type ShouldRateLimitCall = (req: RateLimitRequestMsg, metadata?: Readonly<Record<string, string>>) => Promise<RateLimitResponseMsg>;

/**
 * `decider` with its asynchronous call (the one that does I/O) replaced by `wrap(call)`; the
 * synchronous answers of the embedded engine, `prepare` and `close` go to `decider` itself.
 * The metrics time the call through it, the tracing opens a span and injects the trace context.
 */
export function wrapDeciderCall(decider: RateLimitDecider, wrap: (call: ShouldRateLimitCall) => ShouldRateLimitCall): RateLimitDecider {
  const call = wrap((req, metadata) => decider.shouldRateLimit(req, metadata));
  const wrapped: RateLimitDecider = {
    kind: decider.kind,
    shouldRateLimit: call,
    close: () => decider.close(),
  };
  if (decider.shouldRateLimitNow !== undefined) wrapped.shouldRateLimitNow = (req) => decider.shouldRateLimitNow!(req);
  if (decider.prepare !== undefined) wrapped.prepare = (req) => decider.prepare!(req);
  if (decider.shouldRateLimitPreparedNow !== undefined) wrapped.shouldRateLimitPreparedNow = (p) => decider.shouldRateLimitPreparedNow!(p);
  return wrapped;
}
