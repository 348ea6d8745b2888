// TypeScript shapes of the Rate Limit Quota Service (RLQS) messages as the hand-coded codecs
// (rlqs-codec.ts) produce and consume them. Durations are seconds (fractional when nanos are set),
// as in rls-messages.ts; uint64 counts are JS numbers clamped at 2^53-1.

/** One entry of a `BucketId.bucket` map. */
export interface BucketEntryMsg {
  key: string;
  value: string;
}

/**
 * `BucketId`: the map's entries. The decoder keeps one entry per key (the last value wins, at the
 * place of the key's first appearance, as protobuf map semantics and protobufjs have it); the order
 * carries no meaning, see bucket-id.ts for the canonical key.
 */
export type BucketIdMsg = BucketEntryMsg[];

/** `RateLimitQuotaUsageReports.BucketQuotaUsage`. */
export interface BucketQuotaUsageMsg {
  /** Undefined when the field was absent (the server refuses such a usage). */
  bucketId: BucketIdMsg | undefined;
  /** `time_elapsed` in seconds; undefined when absent. */
  timeElapsed: number | undefined;
  numRequestsAllowed: number;
  numRequestsDenied: number;
}

/** `RateLimitQuotaUsageReports`. */
export interface RateLimitQuotaUsageReportsMsg {
  domain: string;
  bucketQuotaUsages: BucketQuotaUsageMsg[];
}

/** `RateLimitStrategy.BlanketRule` numbers. */
export const BlanketRule = { ALLOW_ALL: 0, DENY_ALL: 1 } as const;

/** `envoy.type.v3.TokenBucket`. */
export interface TokenBucketMsg {
  maxTokens: number;
  /** The `UInt32Value` wrapper's value; undefined when the wrapper is absent (one token per fill). */
  tokensPerFill: number | undefined;
  /** `fill_interval` in seconds; undefined when absent. */
  fillInterval: number | undefined;
}

/** `envoy.type.v3.RateLimitStrategy`: which member of the `strategy` oneof is set. */
export type RateLimitStrategyMsg =
  /** `blanketRule` is the raw enum number (0 ALLOW_ALL, 1 DENY_ALL; others as sent). */
  | { kind: 'blanket_rule'; blanketRule: number }
  /** `timeUnit` is the raw `envoy.type.v3.RateLimitUnit` number. */
  | { kind: 'requests_per_time_unit'; requestsPerTimeUnit: number; timeUnit: number }
  | { kind: 'token_bucket'; tokenBucket: TokenBucketMsg }
  /** The oneof is empty (the message was present with no strategy set). */
  | { kind: 'none' };

/** `BucketAction.QuotaAssignmentAction`. */
export interface QuotaAssignmentActionMsg {
  kind: 'quota_assignment';
  /** Seconds; undefined when absent (the assignment never expires), 0 expires at once. */
  assignmentTimeToLive: number | undefined;
  /** Undefined when absent (allow all). */
  rateLimitStrategy: RateLimitStrategyMsg | undefined;
}

/** `BucketAction.AbandonAction`. */
export interface AbandonActionMsg {
  kind: 'abandon';
}

/** `RateLimitQuotaResponse.BucketAction`. */
export interface BucketActionMsg {
  bucketId: BucketIdMsg | undefined;
  /** The `bucket_action` oneof; undefined when neither member is set. */
  action: QuotaAssignmentActionMsg | AbandonActionMsg | undefined;
}

/** `RateLimitQuotaResponse`. */
export interface RateLimitQuotaResponseMsg {
  bucketAction: BucketActionMsg[];
}
