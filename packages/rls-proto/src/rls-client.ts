// Client of the rate limit service for Node callers (the quotes service, the CLI). It rides on
// @grpc/grpc-js for connection management, TLS and deadlines, and plugs in the hand-coded codecs
// as serializers, so no protobufjs runtime is involved on either side.
import { Buffer } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import { decodeRateLimitResponse, encodeRateLimitRequest } from './rls-codec.js';
import { decodeHealthCheckResponse, encodeHealthCheckRequest } from './health-codec.js';
import { servingStatusName, type RateLimitRequestMsg, type RateLimitResponseMsg, type ServingStatusName } from './rls-messages.js';

export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';
export const HEALTH_WATCH_PATH = '/grpc.health.v1.Health/Watch';

export interface RateLimitClientTls {
  /** CA bundle (PEM) used to verify the server; the system roots when absent. */
  ca?: Buffer | string | undefined;
  /** Client certificate chain and key (PEM) for mutual TLS. */
  cert?: Buffer | string | undefined;
  key?: Buffer | string | undefined;
  /** Name to verify in the server certificate (and to send as SNI/authority) instead of the host. */
  servername?: string | undefined;
}

export interface RateLimitClientOptions {
  /** `host:port`, `unix:/path`, or any other grpc-js target. */
  address: string;
  /** TLS settings; plaintext when absent. */
  tls?: RateLimitClientTls | undefined;
  /** Default per-call deadline in milliseconds (default 1000). */
  timeoutMs?: number | undefined;
  /** Extra grpc-js channel options (keepalive etc.). */
  channelOptions?: grpc.ChannelOptions | undefined;
}

export interface CallOptions {
  /** Deadline for this call, in milliseconds from now (overrides `timeoutMs`). */
  deadlineMs?: number | undefined;
  /** Cancels the call when aborted. */
  signal?: AbortSignal | undefined;
  /** Request metadata to send (e.g. W3C `traceparent`); lower-case ASCII names and values. */
  metadata?: Readonly<Record<string, string>> | undefined;
}

/** A failed call; `code` is the gRPC status code (e.g. 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED). */
export class RateLimitRpcError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.details = details;
    this.name = 'RateLimitRpcError';
  }
}

export interface RateLimitClient {
  shouldRateLimit(req: RateLimitRequestMsg, opts?: CallOptions): Promise<RateLimitResponseMsg>;
  /** grpc.health.v1 Check; resolves with the status name, rejects (e.g. NOT_FOUND=5) on call failure. */
  healthCheck(service?: string, opts?: CallOptions): Promise<ServingStatusName>;
  /** Resolves once the channel is connected; rejects after `timeoutMs`. */
  waitForReady(timeoutMs: number): Promise<void>;
  close(): void;
}

function pem(v: Buffer | string | undefined): Buffer | null {
  if (v === undefined) return null;
  return typeof v === 'string' ? Buffer.from(v) : v;
}

function credentialsFor(tls: RateLimitClientTls | undefined): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}

function toRpcError(err: grpc.ServiceError): RateLimitRpcError {
  return new RateLimitRpcError(err.code, err.details, err.message, { cause: err });
}

function encodeHealthRequest(service: string): Buffer {
  return encodeHealthCheckRequest({ service });
}

export function createRateLimitClient(opts: RateLimitClientOptions): RateLimitClient {
  const channelOptions: grpc.ChannelOptions = { ...opts.channelOptions };
  if (opts.tls?.servername !== undefined) {
    channelOptions['grpc.ssl_target_name_override'] = opts.tls.servername;
    channelOptions['grpc.default_authority'] = opts.tls.servername;
  }
  const client = new grpc.Client(opts.address, credentialsFor(opts.tls), channelOptions);
  const defaultTimeout = opts.timeoutMs ?? 1000;

  function unary<Req, Res>(path: string, ser: (r: Req) => Buffer, de: (b: Buffer) => Res, req: Req, call: CallOptions | undefined): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const signal = call?.signal;
      if (signal?.aborted === true) {
        reject(new RateLimitRpcError(grpc.status.CANCELLED, 'call aborted', '1 CANCELLED: call aborted', { cause: signal.reason }));
        return;
      }
      const deadline = Date.now() + (call?.deadlineMs ?? defaultTimeout);
      const onAbort = (): void => handle.cancel();
      const metadata = new grpc.Metadata();
      if (call?.metadata !== undefined) for (const [k, v] of Object.entries(call.metadata)) metadata.set(k, v);
      const handle = client.makeUnaryRequest(path, ser, de, req, metadata, { deadline }, (err, value) => {
        signal?.removeEventListener('abort', onAbort);
        if (err !== null) reject(toRpcError(err));
        else if (value === undefined) reject(new RateLimitRpcError(grpc.status.INTERNAL, 'empty response', '13 INTERNAL: empty response'));
        else resolve(value);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  return {
    shouldRateLimit(req, call) {
      return unary(SHOULD_RATE_LIMIT_PATH, (r: RateLimitRequestMsg) => encodeRateLimitRequest(r), decodeRateLimitResponse, req, call);
    },
    async healthCheck(service = '', call) {
      const res = await unary(HEALTH_CHECK_PATH, encodeHealthRequest, decodeHealthCheckResponse, service, call);
      return servingStatusName(res.status) ?? 'UNKNOWN';
    },
    waitForReady(timeoutMs) {
      return new Promise<void>((resolve, reject) => {
        client.waitForReady(Date.now() + timeoutMs, (err) => (err === undefined ? resolve() : reject(err)));
      });
    },
    close() {
      client.close();
    },
  };
}
