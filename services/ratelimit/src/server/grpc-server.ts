// The service's gRPC server. It serves exactly two services, as upstream does:
// envoy.service.ratelimit.v3.RateLimitService (ShouldRateLimit) and grpc.health.v1.Health
// (Check, Watch), with the hand-coded codecs of @rls/rls-proto. grpc-js is not used because its
// per-call machinery costs more than the whole rate limit decision.
//
// The call logic (method table, framing, compression, deadlines, cancellation, status mapping,
// health) lives in grpc-calls.ts; the HTTP/2 transport under it is our own (h2/: RFC 9113 + HPACK
// on net/tls sockets, carrying only what gRPC needs), several times less CPU per request than
// node:http2's JS layer and hardened against hostile clients (grpc-limits-settings.ts). The
// node:http2 transport that used to sit beside it as an escape hatch was removed (issue 13): the
// lean one passes every interop and conformance suite. The shared types are in grpc-server-types.ts.
import { createLeanGrpcServer } from './h2/lean-grpc-server.js';
import type { GrpcServer, GrpcServerOptions } from './grpc-server-types.js';

export type { CallContext, GrpcServer, GrpcServerOptions, GrpcTlsOptions, ShouldRateLimitFn } from './grpc-server-types.js';

export function createGrpcServer(opts: GrpcServerOptions): GrpcServer {
  return createLeanGrpcServer(opts);
}
