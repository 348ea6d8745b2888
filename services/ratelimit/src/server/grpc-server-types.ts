// The types the server modules share: what a handler receives, the decision function in its two
// shapes (domain values and wire bytes), the gRPC server's options and interface. A leaf module:
// it imports no other server module, so the gRPC server, its transport, the call logic and the
// HTTP server can all depend on it without depending on each other.
import type { IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { PeerCertificate } from 'node:tls';
import type { DecidedResponse, MaybePromise, RandomSource, RateLimitRequest } from '@rls/engine';
import type { RequestLimits } from '@rls/rls-proto';
// Type only (no runtime import): the optional RLQS service the dispatcher hands that method to.
import type { RlqsService } from './rlqs-calls.js';

/** What a handler gets besides the request: aborted when the client cancels or the deadline passes. */
export interface CallContext {
  readonly signal: AbortSignal;
  /**
   * The request's headers (gRPC metadata or HTTP headers), for trace-context propagation. A
   * transport may build it on first read: reading it is the consumer's cost.
   */
  readonly headers?: IncomingHttpHeaders | undefined;
}

/**
 * The one ShouldRateLimit decision, on domain values (the engine's RateLimitService, possibly
 * wrapped by tracing). A plain RateLimitResponse is a DecidedResponse without provenance. The
 * response itself when every step answered at once, else a promise; a failure is thrown or
 * rejected as it came (the engine's maybe-promise.ts), and callers handle both.
 */
export type ShouldRateLimitFn = (req: RateLimitRequest, ctx: CallContext) => MaybePromise<DecidedResponse>;

/** A ShouldRateLimit answer on the wire: the encoded response and the response it encodes. */
export interface EncodedAnswer {
  /** The serialized RateLimitResponse after 5 bytes of headroom for the gRPC message prefix. */
  readonly body: Buffer;
  readonly response: DecidedResponse;
}

/**
 * ShouldRateLimit over the request message's bytes: decode, decide, encode. Throws or rejects
 * with a RequestDecodeFailure, a ResponseEncodeFailure or the decision's own error.
 */
export type EncodedShouldRateLimitFn = (payload: Buffer, ctx: CallContext) => MaybePromise<EncodedAnswer>;

/** Cross-cutting behaviour around the byte-level decision (e.g. a memo of answers), as `next => fn`. */
export type EncodedShouldRateLimitWrapper = (next: EncodedShouldRateLimitFn) => EncodedShouldRateLimitFn;

/** The request message could not be decoded (or broke a request bound); `reason` is the decoder's error. */
export class RequestDecodeFailure extends Error {
  constructor(readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
    this.name = 'RequestDecodeFailure';
  }
}

/** The decided response could not be encoded (a bug, answered INTERNAL). */
export class ResponseEncodeFailure extends Error {
  constructor(readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
    this.name = 'ResponseEncodeFailure';
  }
}

/** What the transports need to know about service health. The components live in health.ts. */
export interface HealthSource {
  /** True when every enabled health component is healthy. */
  isHealthy(): boolean;
  /** Registers a listener called whenever the aggregate may have changed. */
  onChange(cb: () => void): void;
}

/** The slice of a pino logger the transports use; pino's Logger satisfies it. */
export interface TransportLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The parsed GRPC_* limit settings (grpc-limits-settings.ts), as the gRPC server options carry them. */
export interface GrpcLimits {
  readonly maxConnections: number;
  readonly prefaceTimeoutMs: number;
  /** 0: never. */
  readonly idleTimeoutMs: number;
  readonly requestReadTimeoutMs: number;
  readonly maxHeaderListBytes: number;
  readonly streamWindowBytes: number;
  readonly connectionWindowBytes: number;
  readonly connectionBufferBytes: number;
  readonly processBufferBytes: number;
  readonly maxResetsPerSecond: number;
  readonly maxControlFramesPerSecond: number;
  /** Output bytes per second the process inflates for compressed messages beyond 16 KiB inflated. */
  readonly inflateBytesPerSecond: number;
  /** Open grpc.health.v1 Watch streams per connection. */
  readonly maxWatchesPerConnection: number;
  /** A connection with open streams silent this long gets a PING (0: never). */
  readonly keepaliveTimeMs: number;
  /** Without any frame back this long after that PING, the connection is closed. */
  readonly keepaliveTimeoutMs: number;
}

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

/** What the call logic (grpc-calls.ts) needs: the decision, health, logging, bounds. */
export interface GrpcDispatcherOptions {
  shouldRateLimit: ShouldRateLimitFn;
  /** Wraps the byte-level decision (the composition root's choice, e.g. the local answer memo). */
  wrapShouldRateLimit?: EncodedShouldRateLimitWrapper | undefined;
  health: HealthSource;
  /** Called once per unary call that reached its handler: `ratelimit_server.<method>.*` stats. */
  onCall?: ((method: string, ms: number) => void) | undefined;
  logger: TransportLogger;
  /** Largest accepted request message, in bytes (default 4 MiB, grpc-go's default). */
  maxReceiveBytes?: number | undefined;
  /** Open grpc.health.v1 Watch streams per connection; more are refused with RESOURCE_EXHAUSTED (the transport passes GRPC_MAX_WATCHES_PER_CONNECTION; default 8). */
  maxWatchesPerConnection?: number | undefined;
  /** Health service name that reflects the aggregate health (default "ratelimit"). */
  healthServiceName?: string | undefined;
  /** Descriptor/entry bounds enforced while decoding (limits-settings.ts; the decoder's defaults when absent). */
  requestLimits?: RequestLimits | undefined;
  /** StreamRateLimitQuotas (RLQS_ENABLED): served when given, UNIMPLEMENTED otherwise. */
  rlqs?: RlqsService | undefined;
}

export interface GrpcServerOptions extends Omit<GrpcDispatcherOptions, 'logger'> {
  logger?: TransportLogger | undefined;
  /** Serve TLS (ALPN h2) instead of cleartext HTTP/2. */
  tls?: GrpcTlsOptions | undefined;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection (default 1000). */
  maxConcurrentStreams?: number | undefined;
  /**
   * GRPC_MAX_CONNECTION_AGE: a connection older than this (±10 % jitter) is sent GOAWAY, so
   * clients reconnect and load spreads over new instances. 0 or absent: no limit.
   */
  maxConnectionAgeMs?: number | undefined;
  /** GRPC_MAX_CONNECTION_AGE_GRACE: after the GOAWAY, streams still open get this long, then the connection is closed. */
  maxConnectionAgeGraceMs?: number | undefined;
  /** Randomness of the age jitter (Math.random when absent). */
  random?: RandomSource | undefined;
  /**
   * Bounds on connections, time without progress, buffered request bytes and frame floods
   * (GRPC_MAX_CONNECTIONS and the settings beside it; DEFAULT_GRPC_LIMITS when absent).
   */
  limits?: GrpcLimits | undefined;
  /** Clock of the time limits (Date.now when absent). */
  now?: (() => number) | undefined;
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
