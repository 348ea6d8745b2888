// gRPC status codes and the one place where service errors become gRPC statuses.
import { isRateLimitError } from '@rls/engine';

export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

export interface StatusAndMessage {
  code: number;
  message: string;
}

/**
 * Maps an error thrown by the ShouldRateLimit service function to a gRPC status.
 *
 * Upstream answers every service error with UNKNOWN (2). We are more precise on purpose:
 * - invalid_request ⇒ INVALID_ARGUMENT: the caller sent something it must fix; retrying the same
 *   request cannot succeed, and gRPC clients do not retry it.
 * - no_config and store_unavailable ⇒ UNAVAILABLE: these are transient conditions of this
 *   instance (rules not loaded yet, counter store down or slow). UNAVAILABLE is the status that
 *   Envoy's retry policies ("unavailable"/"retriable-status-codes") and gRPC client retry
 *   configurations treat as safe to retry, possibly on another instance; Envoy's
 *   failure_mode_deny still decides what happens to the proxied request when it persists.
 * - anything else ⇒ INTERNAL: a bug on our side, with a generic message so internals do not leak.
 * The message of a RateLimitError is passed on as upstream passes its error text.
 */
export function statusForServiceError(err: unknown): StatusAndMessage {
  if (isRateLimitError(err)) {
    switch (err.code) {
      case 'invalid_request':
        return { code: GrpcStatus.INVALID_ARGUMENT, message: err.message };
      case 'no_config':
      case 'store_unavailable':
        return { code: GrpcStatus.UNAVAILABLE, message: err.message };
      default:
        return { code: GrpcStatus.INTERNAL, message: err.message };
    }
  }
  return { code: GrpcStatus.INTERNAL, message: 'internal error' };
}
