// @rls/rls-proto: RLS v3 / RLQS / gRPC health wire types, hand-coded protobuf and proto3-JSON
// codecs, and a grpc-js based client.
export * from './rls-messages.js';
export { ProtoDecodeError, isProtoDecodeError, type DecodeErrorCode } from './decode-error.js';
export {
  DEFAULT_REQUEST_LIMITS,
  RequestLimitError,
  isRequestLimitError,
  type RequestLimits,
  type RequestLimitName,
} from './request-limits.js';
export { decodeRateLimitRequest, encodeRateLimitRequest, decodeRateLimitResponse, encodeRateLimitResponse } from './rls-codec.js';
export {
  decodeHealthCheckRequest,
  encodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckResponse,
} from './health-codec.js';
export {
  JsonMappingError,
  parseRateLimitRequestJson,
  rateLimitRequestFromJson,
  rateLimitResponseToJson,
  encodeRateLimitResponseJson,
  formatDurationJson,
} from './rls-json.js';
export {
  createRateLimitClient,
  RateLimitRpcError,
  SHOULD_RATE_LIMIT_PATH,
  HEALTH_CHECK_PATH,
  HEALTH_WATCH_PATH,
  type RateLimitClient,
  type RateLimitClientOptions,
  type RateLimitClientTls,
  type CallOptions,
} from './rls-client.js';
export { PROTO_DIR, PROTO_FILES } from './proto-files.js';
export * from './rlqs-messages.js';
export {
  DEFAULT_RLQS_REPORT_LIMITS,
  RlqsLimitError,
  isRlqsLimitError,
  type RlqsReportLimits,
  type RlqsLimitName,
} from './rlqs-limits.js';
export {
  STREAM_RATE_LIMIT_QUOTAS_PATH,
  decodeRateLimitQuotaUsageReports,
  encodeRateLimitQuotaUsageReports,
  decodeRateLimitQuotaResponse,
  encodeRateLimitQuotaResponse,
} from './rlqs-codec.js';
export { bucketKey, bucketIdOfKey } from './bucket-id.js';
export {
  RATE_LIMIT_CONFIG_TYPE_URL,
  ADS_SERVICE_NAME,
  ADS_STREAM_PATH,
  encodeDiscoveryRequest,
  decodeDiscoveryRequest,
  encodeDiscoveryResponse,
  decodeDiscoveryResponse,
  encodeRateLimitConfig,
  decodeRateLimitConfig,
  packRateLimitConfig,
  type XdsNodeMsg,
  type RpcStatusMsg,
  type DiscoveryRequestMsg,
  type DiscoveryResponseMsg,
  type AnyMsg,
  type RateLimitConfigMsg,
  type QuotaBucketRuleMsg,
  type QuotaRuleMsg,
  type RateLimitConfigDescriptorMsg,
  type RateLimitPolicyMsg,
  type RateLimitConfigUnit,
} from './xds-codec.js';
