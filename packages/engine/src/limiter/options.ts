// Limiter behaviour switches, parsed from settings by the composition root and passed in frozen.

export interface ResponseHeaderOptions {
  /** LIMIT_RESPONSE_HEADERS_ENABLED: add limit/remaining/reset headers to responses. */
  readonly enabled: boolean;
  /** LIMIT_LIMIT_HEADER, default `RateLimit-Limit`. */
  readonly limitHeader: string;
  /** LIMIT_REMAINING_HEADER, default `RateLimit-Remaining`. */
  readonly remainingHeader: string;
  /** LIMIT_RESET_HEADER, default `RateLimit-Reset`. */
  readonly resetHeader: string;
  /**
   * LIMIT_RESPONSE_POLICY_HEADERS_ENABLED (extension, default off): also add `RateLimit-Policy`
   * (every limit that applied) and `RateLimit` (the one that decides), in the syntax of
   * draft-ietf-httpapi-ratelimit-headers-11 (limiter/policy-headers.ts).
   */
  readonly policyHeaders?: boolean | undefined;
}

export interface LimiterOptions {
  /** CACHE_KEY_PREFIX, prepended to every counter key. */
  readonly cacheKeyPrefix: string;
  /** NEAR_LIMIT_RATIO (0..1, applied in float32 like upstream), default 0.8. */
  readonly nearLimitRatio: number;
  /** EXPIRATION_JITTER_MAX_SECONDS: counter TTL gets a random extra in [0, max); 0 disables; default 300. */
  readonly expirationJitterMaxSeconds: number;
  /** LOCAL_CACHE_SIZE_IN_BYTES: byte budget of the local over-limit cache; 0 disables it. */
  readonly localCacheSizeInBytes: number;
  /** STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: do not add to other counters when one would go over. */
  readonly stopCacheKeyIncrementWhenOverlimit: boolean;
  /** SHADOW_MODE: the overall code is never OVER_LIMIT (statuses and counting unchanged). */
  readonly shadowMode: boolean;
  /** QUOTA_MODE: every descriptor is a quota descriptor (docs/ratelimit.md, Settings). */
  readonly quotaMode: boolean;
  /** RESPONSE_DYNAMIC_METADATA: fill `dynamic_metadata` in responses. */
  readonly responseDynamicMetadata: boolean;
  readonly responseHeaders: ResponseHeaderOptions;
}

export const DEFAULT_LIMITER_OPTIONS: LimiterOptions = Object.freeze({
  cacheKeyPrefix: '',
  nearLimitRatio: 0.8,
  expirationJitterMaxSeconds: 300,
  localCacheSizeInBytes: 0,
  stopCacheKeyIncrementWhenOverlimit: false,
  shadowMode: false,
  quotaMode: false,
  responseDynamicMetadata: false,
  responseHeaders: Object.freeze({
    enabled: false,
    limitHeader: 'RateLimit-Limit',
    remainingHeader: 'RateLimit-Remaining',
    resetHeader: 'RateLimit-Reset',
  }),
});
