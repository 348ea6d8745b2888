import type { RateLimitRequestMsg, RateLimitResponseMsg } from '@rls/rls-proto';
import type { MaybePromise } from '../maybe-promise.js';

/** A request prepared by a decider, for that decider only (opaque to callers). */
export interface PreparedDecision {
  readonly request: RateLimitRequestMsg;
}

/** The request message of a plain or prepared request. */
export function requestOf(req: RateLimitRequestMsg | PreparedDecision): RateLimitRequestMsg {
  return 'request' in req ? req.request : req;
}

/**
 * Something that answers ShouldRateLimit: the remote `ratelimit` service over gRPC or the same
 * engine embedded in this process. Both speak the RLS message shapes, so the callers cannot tell
 * them apart (one engine, two deployments).
 */
export interface RateLimitDecider {
  readonly kind: 'remote' | 'embedded';
  /**
   * The decision: the response at once when it needs no I/O (the embedded engine on its memory
   * store), else a promise (the remote service). No decision (service down, timeout, no rules)
   * is a throw or a rejection. `req` may be a request this decider prepared (`prepare`), so work
   * kept between calls is reused. `metadata` goes with a remote call (the trace context); the
   * embedded engine ignores it.
   */
  shouldRateLimit(req: RateLimitRequestMsg | PreparedDecision, metadata?: Readonly<Record<string, string>>): MaybePromise<RateLimitResponseMsg>;
  /**
   * A request to decide again and again (the embedded engine keeps its rule matches and counter
   * keys); `shouldRateLimit(prepare(req))` answers exactly as `shouldRateLimit(req)`. Deciders
   * that keep nothing have no `prepare`.
   */
  prepare?(req: RateLimitRequestMsg): PreparedDecision;
  close(): Promise<void>;
}
