// The service's gRPC server. It serves exactly two services, as upstream does:
// envoy.service.ratelimit.v3.RateLimitService (ShouldRateLimit) and grpc.health.v1.Health
// (Check, Watch), with the hand-coded codecs of @rls/rls-proto. grpc-js is not used because its
// per-call machinery costs more than the whole rate limit decision.
//
// The call logic (method table, framing, compression, deadlines, cancellation, status mapping,
// health) lives in grpc-calls.ts and is shared by two HTTP/2 transports, chosen by
// GRPC_TRANSPORT:
// - `lean` (h2/): our own HTTP/2 server (RFC 9113 + HPACK) on net/tls sockets, carrying only what
//   gRPC needs; several times less CPU per request than node:http2's JS layer.
// - `node`: node:http2 (nghttp2), the reference implementation, kept as an escape hatch.
import type { AddressInfo } from 'node:net';
import type { PeerCertificate } from 'node:tls';
import type { GrpcLimits } from './grpc-limits-settings.js';
import { createNodeGrpcServer } from './grpc-node-transport.js';
import { createLeanGrpcServer } from './h2/lean-grpc-server.js';
import type { HealthSource } from './health-source.js';
import type { RequestLimits } from '@rls/rls-proto';
import type { AnswerMemo } from './local-answer-memo.js';
import type { TransportLogger } from './transport-logger.js';

export type { CallContext, ShouldRateLimitFn } from './grpc-calls.js';
import type { ShouldRateLimitFn } from './grpc-calls.js';

export interface GrpcTlsOptions {
  /** PEM private key and certificate chain of the server. */
  key: string | Buffer;
  cert: string | Buffer;
  /** PEM CA bundle that client certificates must chain to (mutual TLS). */
  ca?: string | Buffer | undefined;
  /** Ask for a client certificate and reject handshakes without a valid one. */
  requestClientCert?: boolean | undefined;
  /**
   * Further check of a CA-verified client certificate (e.g. the required SAN): returns why the
   * connection is refused, or undefined. A refused connection is destroyed before any stream.
   */
  verifyClient?: ((cert: PeerCertificate) => string | undefined) | undefined;
}

/** Injected randomness for the connection-age jitter: a uniform integer in [0, maxExclusive). */
export interface GrpcRandom {
  int(maxExclusive: number): number;
}

/** GRPC_TRANSPORT: which HTTP/2 implementation carries the gRPC calls. */
export type GrpcTransport = 'lean' | 'node';

export const DEFAULT_GRPC_TRANSPORT: GrpcTransport = 'lean';

export interface GrpcServerOptions {
  shouldRateLimit: ShouldRateLimitFn;
  health: HealthSource;
  /** Called once per unary call that reached its handler: `ratelimit_server.<method>.*` stats. */
  onCall?: ((method: string, ms: number) => void) | undefined;
  logger?: TransportLogger | undefined;
  /** HTTP/2 implementation (default DEFAULT_GRPC_TRANSPORT). */
  transport?: GrpcTransport | undefined;
  /** Serve TLS (ALPN h2) instead of cleartext HTTP/2. */
  tls?: GrpcTlsOptions | undefined;
  /** Largest accepted request message, in bytes (default 4 MiB, grpc-go's default). */
  maxReceiveBytes?: number | undefined;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection (default 1000). */
  maxConcurrentStreams?: number | undefined;
  /** Health service name that reflects the aggregate health (default "ratelimit"). */
  healthServiceName?: string | undefined;
  /**
   * GRPC_MAX_CONNECTION_AGE: a connection older than this (±10 % jitter) is sent GOAWAY, so
   * clients reconnect and load spreads over new instances. 0 or absent: no limit.
   */
  maxConnectionAgeMs?: number | undefined;
  /** GRPC_MAX_CONNECTION_AGE_GRACE: after the GOAWAY, streams still open get this long, then the connection is closed. */
  maxConnectionAgeGraceMs?: number | undefined;
  /** Randomness of the age jitter (Math.random when absent). */
  random?: GrpcRandom | undefined;
  /** Encoded answers repeated without decoding (the local over-limit cache's). */
  answerMemo?: AnswerMemo | undefined;
  /**
   * Bounds on connections, time without progress, buffered request bytes and frame floods
   * (GRPC_MAX_CONNECTIONS and the settings beside it; DEFAULT_GRPC_LIMITS when absent).
   */
  limits?: GrpcLimits | undefined;
  /** Clock of the time limits (Date.now when absent). */
  now?: (() => number) | undefined;
  /** Descriptor/entry bounds enforced while decoding ShouldRateLimit requests. */
  requestLimits?: RequestLimits | undefined;
}

export interface GrpcServer {
  listen(host: string, port: number): Promise<void>;
  listenUnix(path: string): Promise<void>;
  address(): AddressInfo | string | null;
  /** Replaces the TLS key/certificate for new connections (certificate hot reload). */
  setTls(tls: GrpcTlsOptions): void;
  /** Open connections (HTTP/2 sessions). */
  connectionCount(): number;
  /**
   * Graceful stop: refuse new connections, send GOAWAY, let in-flight calls finish, end health
   * watches; connections still open after `graceMs` (default 10 s) are destroyed.
   */
  close(graceMs?: number): Promise<void>;
}

export function createGrpcServer(opts: GrpcServerOptions): GrpcServer {
  return (opts.transport ?? DEFAULT_GRPC_TRANSPORT) === 'node' ? createNodeGrpcServer(opts) : createLeanGrpcServer(opts);
}
