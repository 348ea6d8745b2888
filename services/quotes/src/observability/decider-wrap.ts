import type { RateLimitRequestMsg, RateLimitResponseMsg } from '@rls/rls-proto';
import type { MaybePromise } from '../maybe-promise.js';
import type { PreparedDecision, RateLimitDecider } from '../ratelimit/decider.js';

export type ShouldRateLimitCall = (req: RateLimitRequestMsg | PreparedDecision, metadata?: Readonly<Record<string, string>>) => MaybePromise<RateLimitResponseMsg>;

/**
 * `decider` with its decision call replaced by `wrap(call)`; `prepare` and `close` go to
 * `decider` itself. The metrics time the call through it, the tracing opens a span and injects
 * the trace context. A wrapper that needs the outcome of a synchronous answer wraps it with
 * `Promise.resolve` itself; one that has nothing to do returns `call`'s answer as it is.
 */
export function wrapDeciderCall(decider: RateLimitDecider, wrap: (call: ShouldRateLimitCall) => ShouldRateLimitCall): RateLimitDecider {
  const call = wrap((req, metadata) => decider.shouldRateLimit(req, metadata));
  const wrapped: RateLimitDecider = {
    kind: decider.kind,
    shouldRateLimit: call,
    close: () => decider.close(),
  };
  if (decider.prepare !== undefined) wrapped.prepare = (req) => decider.prepare!(req);
  return wrapped;
}
