import type { RateLimitRequestMsg, RateLimitResponseMsg } from '@rls/rls-proto';

/** A request prepared by a decider, for that decider only (opaque to callers). */
export interface PreparedDecision {
  readonly request: RateLimitRequestMsg;
}

/**
 * Something that answers ShouldRateLimit: the remote `ratelimit` service over gRPC or the same
 * engine embedded in this process. Both speak the RLS message shapes, so the callers cannot tell
 * them apart (one engine, two deployments).
 */
export interface RateLimitDecider {
  readonly kind: 'remote' | 'embedded';
  /**
   * Rejects when no decision could be had (service down, timeout, no rules). `metadata` goes with
   * a remote call (the trace context); the embedded engine ignores it.
   */
  shouldRateLimit(req: RateLimitRequestMsg, metadata?: Readonly<Record<string, string>>): Promise<RateLimitResponseMsg>;
  /**
   * The decision at once, when it needs no I/O (the embedded engine on its memory store): the
   * response, a throw where `shouldRateLimit` would reject, or undefined (nothing counted) when
   * only `shouldRateLimit` can decide.
   */
  shouldRateLimitNow?(req: RateLimitRequestMsg): RateLimitResponseMsg | undefined;
  /**
   * A request to decide again and again with `shouldRateLimitPreparedNow` (the embedded engine
   * keeps its rule matches and counter keys): the same answers as `shouldRateLimitNow(req)`.
   */
  prepare?(req: RateLimitRequestMsg): PreparedDecision;
  shouldRateLimitPreparedNow?(prepared: PreparedDecision): RateLimitResponseMsg | undefined;
  close(): Promise<void>;
}
