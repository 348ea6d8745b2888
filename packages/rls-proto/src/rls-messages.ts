// TypeScript shapes of the RLS v3 messages as the hand-coded codecs produce and consume them.
// They are deliberately structurally identical to the rate limit service's domain types
// (services/ratelimit/src/domain.ts) so the service passes its objects straight through, while
// this package stays free of service imports (the quotes service uses it as a client).
// Wire-only extras (request_headers_to_add, raw_body, raw_value) are optional additions.

/** `RateLimitResponse.RateLimit.Unit` numbers (WEEK was appended as 7). */
export const RlsUnit = {
  UNKNOWN: 0,
  SECOND: 1,
  MINUTE: 2,
  HOUR: 3,
  DAY: 4,
  MONTH: 5,
  YEAR: 6,
  WEEK: 7,
} as const;
export type RlsUnitName = keyof typeof RlsUnit;

/** `RateLimitResponse.Code` numbers. */
export const RlsCode = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 } as const;
export type RlsCodeName = keyof typeof RlsCode;
export type RlsCodeNumber = (typeof RlsCode)[RlsCodeName];

export interface DescriptorEntryMsg {
  key: string;
  value: string;
}

/** `RateLimitDescriptor.RateLimitOverride`. `unit` is the raw enum number as sent. */
export interface LimitOverrideMsg {
  requestsPerUnit: number;
  unit: number;
}

export interface RequestDescriptorMsg {
  entries: DescriptorEntryMsg[];
  limit?: LimitOverrideMsg | undefined;
  /** Defined exactly when the `UInt64Value` wrapper was present on the wire (even holding 0). */
  hitsAddend?: number | undefined;
}

export interface RateLimitRequestMsg {
  domain: string;
  descriptors: RequestDescriptorMsg[];
  hitsAddend: number;
}

export interface CurrentLimitMsg {
  requestsPerUnit: number;
  unit: number;
  name: string;
}

export interface DescriptorStatusMsg {
  code: RlsCodeNumber;
  currentLimit?: CurrentLimitMsg | undefined;
  limitRemaining: number;
  /** `google.protobuf.Duration` in seconds (fractional when nanos are set); undefined when absent. */
  durationUntilReset?: number | undefined;
}

export interface HeaderValueMsg {
  key: string;
  value: string;
  /** `raw_value` (bytes); never set by the rate limit service. */
  rawValue?: Uint8Array | undefined;
}

/** A JSON value as carried in `google.protobuf.Struct`. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

export interface RateLimitResponseMsg {
  overallCode: RlsCodeNumber;
  statuses: DescriptorStatusMsg[];
  responseHeadersToAdd: HeaderValueMsg[];
  dynamicMetadata?: { [k: string]: JsonValue } | undefined;
  /** `request_headers_to_add`; never set by the rate limit service. */
  requestHeadersToAdd?: HeaderValueMsg[] | undefined;
  /** `raw_body`; never set by the rate limit service. */
  rawBody?: Uint8Array | undefined;
}

/** `grpc.health.v1.HealthCheckResponse.ServingStatus`. */
export const ServingStatus = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } as const;
export type ServingStatusName = keyof typeof ServingStatus;
export type ServingStatusNumber = (typeof ServingStatus)[ServingStatusName];

export interface HealthCheckRequestMsg {
  service: string;
}

export interface HealthCheckResponseMsg {
  status: number;
}

/** Wire enum number → `RlsCodeNumber`; numbers this version does not know read as UNKNOWN. */
export function toRlsCode(n: number): RlsCodeNumber {
  return n === 1 ? 1 : n === 2 ? 2 : 0;
}

const unitNames: readonly RlsUnitName[] = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK'];
const codeNames: readonly RlsCodeName[] = ['UNKNOWN', 'OK', 'OVER_LIMIT'];
const servingNames: readonly ServingStatusName[] = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

/** Name of a response unit number, or undefined for numbers outside the enum. */
export function rlsUnitName(n: number): RlsUnitName | undefined {
  return unitNames[n];
}

export function rlsCodeName(n: number): RlsCodeName | undefined {
  return codeNames[n];
}

export function servingStatusName(n: number): ServingStatusName | undefined {
  return servingNames[n];
}
