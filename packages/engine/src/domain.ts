// Wire-independent request/response types of ShouldRateLimit. The gRPC and JSON transports
// convert to and from these at the edge, so wire types stay in @rls/rls-proto; everything inside the service speaks these.

import { RlsCode, RlsUnit } from '@rls/rls-proto';

/** Units with the numbers of `RateLimitResponse.RateLimit.Unit` (WEEK was appended as 7); the wire package owns them. */
export const Unit = RlsUnit;
export type UnitName = keyof typeof Unit;
export type UnitNumber = (typeof Unit)[UnitName];

/** Response codes with their wire numbers. */
export const Code = RlsCode;
export type CodeNumber = (typeof Code)[keyof typeof Code];

export interface DescriptorEntry {
  key: string;
  value: string;
}

/** `RateLimitDescriptor.RateLimitOverride`: a limit carried by the request itself. */
export interface LimitOverride {
  requestsPerUnit: number;
  /** Raw unit number as sent by the client (may be UNKNOWN or out of range; validated by the service). */
  unit: number;
}

export interface RequestDescriptor {
  entries: DescriptorEntry[];
  limit?: LimitOverride | undefined;
  /** Present (even when 0) only when the client set the `UInt64Value` wrapper. */
  hitsAddend?: number | undefined;
}

export interface RateLimitRequest {
  domain: string;
  descriptors: RequestDescriptor[];
  /** Request-level addend; 0 means 1. */
  hitsAddend: number;
}

export interface CurrentLimit {
  requestsPerUnit: number;
  unit: number;
  /** The rule's `rate_limit.name`; empty for overrides and unnamed rules. */
  name: string;
}

export interface DescriptorStatus {
  code: CodeNumber;
  currentLimit?: CurrentLimit | undefined;
  limitRemaining: number;
  /** Whole seconds; set whenever currentLimit is set. */
  durationUntilReset?: number | undefined;
}

export interface HeaderValue {
  key: string;
  value: string;
}

/** A JSON value as carried in `google.protobuf.Struct`. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

export interface RateLimitResponse {
  overallCode: CodeNumber;
  statuses: DescriptorStatus[];
  responseHeadersToAdd: HeaderValue[];
  /** Filled only with RESPONSE_DYNAMIC_METADATA. */
  dynamicMetadata?: { [k: string]: JsonValue } | undefined;
}

/** Largest uint32: limitRemaining of an unlimited rule. */
export const MAX_UINT32 = 4294967295;
