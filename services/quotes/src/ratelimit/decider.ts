import type { RateLimitRequestMsg, RateLimitResponseMsg } from '@rls/rls-proto';

/**
 * Something that answers ShouldRateLimit: the remote `ratelimit` service over gRPC or the same
 * engine embedded in this process. Both speak the RLS message shapes, so the callers cannot tell
 * them apart (one engine, two deployments).
 */
export interface RateLimitDecider {
  readonly kind: 'remote' | 'embedded';
  /** Rejects when no decision could be had (service down, timeout, no rules). */
  shouldRateLimit(req: RateLimitRequestMsg): Promise<RateLimitResponseMsg>;
  /**
   * The decision at once, when it needs no I/O (the embedded engine on its memory store): the
   * response, a throw where `shouldRateLimit` would reject, or undefined (nothing counted) when
   * only `shouldRateLimit` can decide.
   */
  shouldRateLimitNow?(req: RateLimitRequestMsg): RateLimitResponseMsg | undefined;
  close(): Promise<void>;
}
