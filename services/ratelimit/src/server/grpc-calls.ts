// The gRPC call logic, apart from the HTTP/2 transport that carries it (h2/): the method table,
// request-header checks, request-message framing and size limits, identity/gzip decoding,
// dispatch to ShouldRateLimit and grpc.health.v1, deadlines, cancellation, the mapping of service
// errors to statuses, and the health Watch streams.
// A transport only moves bytes: it subclasses GrpcCall with the five write operations and feeds
// the dispatcher the request headers, the DATA bytes, the end of the request and resets.
import type { IncomingHttpHeaders } from 'node:http2';
import { performance } from 'node:perf_hooks';
import {
  decodeHealthCheckRequest,
  decodeRateLimitRequest,
  encodeHealthCheckResponse,
  encodeRateLimitResponse,
  HEALTH_CHECK_PATH,
  HEALTH_WATCH_PATH,
  isProtoDecodeError,
  isRequestLimitError,
  ServingStatus,
  SHOULD_RATE_LIMIT_PATH,
  STREAM_RATE_LIMIT_QUOTAS_PATH,
  type RequestLimits,
} from '@rls/rls-proto';
import {
  INFLATE_CORRUPT,
  INFLATE_OK,
  INFLATE_OVER_BUDGET,
  INFLATE_TOO_LARGE,
  INFLATER_BYTES,
  inflateSmall,
  inflateStreaming,
  paceCost,
  type InflateLane,
  type InflateResult,
  type Inflation,
} from './grpc-inflate.js';
import { isPromise, type MaybePromise } from '@rls/engine';
import { isGrpcContentType, parseGrpcTimeout } from './grpc-protocol.js';
import {
  RequestDecodeFailure,
  ResponseEncodeFailure,
  type CallContext,
  type EncodedAnswer,
  type EncodedShouldRateLimitFn,
  type GrpcDispatcherOptions,
  type HealthSource,
  type ShouldRateLimitFn,
  type TransportLogger,
} from './grpc-server-types.js';
import { GrpcStatus, statusForServiceError } from './grpc-status.js';
import { RATELIMIT_HEALTH_SERVICE, servingStatusOf } from './health-source.js';
import type { RlqsService } from './rlqs-calls.js';

export const DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024;
/** GRPC_MAX_WATCHES_PER_CONNECTION's default (grpc-limits-settings.ts). */
export const DEFAULT_MAX_WATCHES_PER_CONNECTION = 8;
export const MAX_TIMER_MS = 2_147_483_647;

export const KIND_NONE = -1;
export const KIND_RLS = 0;
export const KIND_CHECK = 1;
export const KIND_WATCH = 2;
/** StreamRateLimitQuotas (rlqs-calls.ts): messages both ways on one long-lived stream. */
export const KIND_RLQS = 3;

const EMPTY = Buffer.alloc(0);

/** A compressed message on the streaming path: the request bytes it holds, and its inflation once started. */
interface Inflating {
  held: number;
  inflation: Inflation | undefined;
}

/**
 * One gRPC call on some transport. It is also the handler's CallContext; the AbortController is
 * made only when the handler reads `signal`.
 */
export abstract class GrpcCall implements CallContext {
  kind = KIND_NONE;
  encoding: string | undefined = undefined;
  start = 0;
  first: Buffer | undefined = undefined;
  chunks: Buffer[] | undefined = undefined;
  received = 0;
  /** Frame length (prefix + message) once the prefix has arrived; -1 before. */
  expected = -1;
  /** A final status was sent, or the stream went away: nothing more may be written. */
  done = false;
  /** The client finished sending the request. */
  ended = false;
  timer: NodeJS.Timeout | undefined = undefined;
  controller: AbortController | undefined = undefined;
  /** Health Watch: requested service and the last status sent. */
  service = '';
  lastStatus = -1;
  /** A compressed message too large to inflate at once, from when it waits for its turn until it is decoded. */
  inflating: Inflating | undefined = undefined;

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  abstract get headers(): IncomingHttpHeaders | undefined;

  abort(reason: string): void {
    this.controller?.abort(new Error(reason));
  }

  /** Response headers, one message (with 5 bytes of headroom for the prefix) and OK trailers. */
  abstract sendUnary(body: Buffer): void;
  /**
   * A final non-OK status: trailers-only (with `httpStatus`) when no headers were sent, else
   * trailers. `acceptEncoding` adds grpc-accept-encoding (unsupported compression).
   */
  abstract sendStatus(httpStatus: number, code: number, message: string, acceptEncoding: boolean): void;
  /** Server streaming: response headers now, messages later. False when the stream is gone. */
  abstract startStreaming(): boolean;
  /** Server streaming: one more message (with 5 bytes of headroom). */
  abstract sendMessage(body: Buffer): void;
  /**
   * The response is complete but the client may still be sending: discard what arrives and
   * reset the stream with NO_ERROR once our frames are out (RFC 9113 §8.1).
   */
  abstract stopReading(): void;
  /**
   * Counts `n` more request bytes this call holds after its DATA was consumed (a compressed
   * message, and what it inflates to) against the connection's and the process's receive
   * budgets. Undefined when they are held, else the refusal, naming the budget.
   */
  abstract holdBytes(n: number): string | undefined;
  /** Gives back bytes taken with holdBytes. */
  abstract releaseBytes(n: number): void;
  /** The queue of this call's connection for streaming inflations (the process runs them one at a time, paced). */
  abstract get inflateLane(): InflateLane;
  /** Identifies the call's connection (per-connection limits). */
  abstract get connectionKey(): object;
  /** Response bytes queued for this call beyond the peer's flow-control window (long-lived streams bound it). */
  sendBacklog(): number {
    return 0;
  }
  /** Resets the stream (RST_STREAM CANCEL) without a status: for a peer that does not read. */
  cancelStream(): void {
    this.done = true;
  }
  /** True for calls whose request is a stream of messages (not held to the request read time). */
  get clientStreaming(): boolean {
    return this.kind === KIND_RLQS;
  }
}

/**
 * The byte-level ShouldRateLimit every call goes through: decode the request message, ask the
 * decision function, encode its response (with 5 bytes of headroom for the prefix).
 */
export function encodedShouldRateLimit(decide: ShouldRateLimitFn, limits: RequestLimits | undefined): EncodedShouldRateLimitFn {
  return (payload, ctx) => {
    let req;
    try {
      req = decodeRateLimitRequest(payload, limits);
    } catch (err) {
      throw new RequestDecodeFailure(err);
    }
    // Answered at once: encoded at once, so the call stays synchronous (a throw reaches the dispatcher as one).
    const response = decide(req, ctx);
    return isPromise(response) ? response.then(encodeAnswer) : encodeAnswer(response);
  };
}

function encodeAnswer(response: EncodedAnswer['response']): EncodedAnswer {
  try {
    return { body: encodeRateLimitResponse(response, 5), response };
  } catch (err) {
    throw new ResponseEncodeFailure(err);
  }
}

/** Writes the gRPC length prefix (uncompressed) into the 5 bytes of headroom. */
export function writeGrpcPrefix(body: Buffer): Buffer {
  body[0] = 0;
  body.writeUInt32BE(body.length - 5, 1);
  return body;
}

function onDeadline(call: GrpcCall, d: GrpcDispatcher): void {
  call.timer = undefined;
  if (call.done) return;
  call.abort('deadline exceeded');
  d.fail(call, GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded');
}

export class GrpcDispatcher {
  readonly logger: TransportLogger;
  readonly maxReceive: number;
  readonly watchers = new Set<GrpcCall>();
  /** Open Watch streams per connection (GRPC_MAX_WATCHES_PER_CONNECTION). */
  private readonly watchesOf = new WeakMap<object, number>();
  private readonly maxWatches: number;
  private readonly shouldRateLimit: EncodedShouldRateLimitFn;
  private readonly health: HealthSource;
  private readonly onCall: ((method: string, ms: number) => void) | undefined;
  private readonly healthService: string;

  constructor(opts: GrpcDispatcherOptions) {
    const plain = encodedShouldRateLimit(opts.shouldRateLimit, opts.requestLimits);
    this.shouldRateLimit = opts.wrapShouldRateLimit !== undefined ? opts.wrapShouldRateLimit(plain) : plain;
    this.health = opts.health;
    this.onCall = opts.onCall;
    this.logger = opts.logger;
    this.maxReceive = opts.maxReceiveBytes ?? DEFAULT_MAX_RECEIVE;
    this.healthService = opts.healthServiceName ?? RATELIMIT_HEALTH_SERVICE;
    this.maxWatches = opts.maxWatchesPerConnection ?? DEFAULT_MAX_WATCHES_PER_CONNECTION;
    this.health.onChange(() => this.onHealthChange());
    this.rlqs = opts.rlqs;
    this.rlqs?.bindFail((call, code, message) => this.fail(call, code, message));
  }

  /** StreamRateLimitQuotas, when RLQS is enabled (RLQS_ENABLED); UNIMPLEMENTED otherwise. */
  private readonly rlqs: RlqsService | undefined;

  /**
   * Checks the request headers and prepares the call. Returns false when the call was answered
   * already (bad method, content type or path, malformed or expired timeout); the transport then
   * stops feeding it.
   */
  begin(
    call: GrpcCall,
    method: string | undefined,
    path: string | undefined,
    contentType: string | undefined,
    timeout: string | string[] | undefined,
    encoding: string | string[] | undefined,
  ): boolean {
    if (method !== 'POST') {
      this.refuse(call, 405, GrpcStatus.UNIMPLEMENTED, 'grpc: method must be POST');
      return false;
    }
    if (!isGrpcContentType(contentType)) {
      this.refuse(call, 415, GrpcStatus.INTERNAL, `grpc: invalid gRPC request content-type "${contentType ?? ''}"`);
      return false;
    }
    const kind =
      path === SHOULD_RATE_LIMIT_PATH
        ? KIND_RLS
        : path === HEALTH_CHECK_PATH
          ? KIND_CHECK
          : path === HEALTH_WATCH_PATH
            ? KIND_WATCH
            : path === STREAM_RATE_LIMIT_QUOTAS_PATH && this.rlqs !== undefined
              ? KIND_RLQS
              : KIND_NONE;
    if (kind === KIND_NONE) {
      this.refuse(call, 200, GrpcStatus.UNIMPLEMENTED, unknownMethodMessage(path));
      return false;
    }
    call.kind = kind;
    call.start = performance.now();
    call.encoding = typeof encoding === 'string' ? encoding : undefined;
    if (timeout !== undefined) {
      const timeoutMs = parseGrpcTimeout(timeout);
      if (timeoutMs === undefined) return true;
      if (Number.isNaN(timeoutMs)) {
        this.fail(call, GrpcStatus.INTERNAL, `grpc: malformed grpc-timeout "${String(timeout)}"`);
        return false;
      }
      if (timeoutMs <= 0) {
        this.fail(call, GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded');
        return false;
      }
      if (timeoutMs <= MAX_TIMER_MS) call.timer = setTimeout(onDeadline, timeoutMs, call, this);
    }
    if (kind === KIND_RLQS) return this.rlqs!.begin(call);
    return true;
  }

  /** A request DATA chunk. The chunk is kept: the transport must not reuse its memory. */
  onData(call: GrpcCall, chunk: Buffer): void {
    if (call.done || chunk.length === 0) return;
    if (call.kind === KIND_RLQS) {
      this.rlqs!.onData(call, chunk);
      return;
    }
    if (call.first === undefined) call.first = chunk;
    else (call.chunks ??= [call.first]).push(chunk);
    call.received += chunk.length;
    if (call.expected < 0 && call.received >= 5) {
      const head = call.first.length >= 5 ? call.first : Buffer.concat(call.chunks ?? [call.first]);
      const len = head.readUInt32BE(1);
      if (len > this.maxReceive) {
        this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, `grpc: received message larger than max (${len} vs. ${this.maxReceive})`);
        return;
      }
      call.expected = 5 + len;
    }
    if (call.expected >= 0 && call.received > call.expected) {
      this.fail(call, GrpcStatus.INTERNAL, 'grpc: more than one request message on a unary or server-streaming call');
    }
  }

  /** The client ended its half of the stream. */
  onEnd(call: GrpcCall): void {
    call.ended = true;
    if (call.kind === KIND_RLQS) {
      if (!call.done) this.rlqs!.onEnd(call);
      return;
    }
    if (!call.done && call.kind !== KIND_NONE) this.onRequestComplete(call);
  }

  /** The stream went away (RST_STREAM, connection loss) before or after the answer. */
  onReset(call: GrpcCall): void {
    if (call.kind === KIND_WATCH) this.dropWatch(call);
    if (call.kind === KIND_RLQS) this.rlqs!.onReset(call);
    if (call.done) return;
    // The client cancelled or the connection dropped: tell the handler so it stops waiting.
    call.done = true;
    call.inflating?.inflation?.cancel();
    if (call.timer !== undefined) clearTimeout(call.timer);
    call.abort('client cancelled the call');
  }

  private refuse(call: GrpcCall, httpStatus: number, code: number, message: string): void {
    call.done = true;
    call.sendStatus(httpStatus, code, message, false);
    if (!call.ended) call.stopReading();
  }

  private onRequestComplete(call: GrpcCall): void {
    const total = call.received;
    if (total === 0) {
      this.fail(call, GrpcStatus.INTERNAL, 'grpc: no request message received');
      return;
    }
    if (total < 5 || total !== call.expected) {
      this.fail(call, GrpcStatus.INTERNAL, 'grpc: request ended inside a length-prefixed message');
      return;
    }
    const body = call.chunks === undefined ? (call.first ?? EMPTY) : Buffer.concat(call.chunks, total);
    call.first = undefined;
    call.chunks = undefined;
    const flag = body[0];
    const payload = body.subarray(5);
    if (flag === 0) {
      this.dispatch(call, payload);
    } else if (flag === 1) {
      this.decompress(call, payload);
    } else {
      this.fail(call, GrpcStatus.INTERNAL, `grpc: invalid message flag ${String(flag)}`);
    }
  }

  private decompress(call: GrpcCall, payload: Buffer): void {
    const enc = call.encoding;
    if (enc === undefined || enc === 'identity') {
      this.fail(call, GrpcStatus.INTERNAL, 'grpc: compressed flag set on a message without grpc-encoding');
      return;
    }
    if (enc !== 'gzip') {
      this.fail(call, GrpcStatus.UNIMPLEMENTED, `grpc: Decompressor is not installed for grpc-encoding "${enc}"`, true);
      return;
    }
    const small = inflateSmall(payload, this.maxReceive);
    if (small !== undefined) this.inflated(call, small);
    else this.inflateLarge(call, payload);
  }

  /**
   * A message that inflates to more than a small one: its compressed bytes stay counted while it
   * waits its turn (its connection's lane, then the process's paced scheduler), then its
   * inflation and output are counted chunk by chunk.
   */
  private inflateLarge(call: GrpcCall, payload: Buffer): void {
    const refused = call.holdBytes(payload.length);
    if (refused !== undefined) {
      this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, refused);
      return;
    }
    const state: Inflating = { held: payload.length, inflation: undefined };
    call.inflating = state;
    call.inflateLane.enter((next) => this.runInflation(call, payload, state, next));
  }

  private runInflation(call: GrpcCall, payload: Buffer, state: Inflating, next: (inflatedBytes: number) => void): void {
    if (call.done) {
      this.endInflation(call, state);
      next(0);
      return;
    }
    const refused = call.holdBytes(INFLATER_BYTES);
    if (refused !== undefined) {
      this.endInflation(call, state);
      this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, refused);
      next(0);
      return;
    }
    state.held += INFLATER_BYTES;
    let inflated = 0;
    state.inflation = inflateStreaming(
      payload,
      this.maxReceive,
      (n) => {
        inflated += n;
        const no = call.holdBytes(n);
        if (no === undefined) state.held += n;
        return no;
      },
      (r) => {
        state.inflation = undefined;
        // Decoding is synchronous: once dispatched, the inflated bytes are no longer held.
        if (!call.done) this.inflated(call, r);
        this.endInflation(call, state);
        next(paceCost(inflated));
      },
    );
  }

  private endInflation(call: GrpcCall, state: Inflating): void {
    if (call.inflating === state) call.inflating = undefined;
    call.releaseBytes(state.held);
    state.held = 0;
  }

  private inflated(call: GrpcCall, r: InflateResult): void {
    switch (r.code) {
      case INFLATE_OK:
        this.dispatch(call, r.out ?? EMPTY);
        return;
      case INFLATE_TOO_LARGE:
        this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, `grpc: decompressed message larger than max (${this.maxReceive})`);
        return;
      case INFLATE_OVER_BUDGET:
        this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, r.reason ?? 'grpc: no receive budget left to decompress the request');
        return;
      case INFLATE_CORRUPT:
        this.fail(call, GrpcStatus.INTERNAL, `grpc: failed to decompress the request: ${r.reason ?? ''}`);
        return;
      default:
        return; // cancelled: the call ended already
    }
  }

  private dispatch(call: GrpcCall, payload: Buffer): void {
    switch (call.kind) {
      case KIND_RLS: {
        let answer: MaybePromise<EncodedAnswer>;
        try {
          answer = this.shouldRateLimit(payload, call);
        } catch (err) {
          this.failShouldRateLimit(call, err);
          return;
        }
        if (isPromise(answer)) answer.then((a) => this.answered(call, a), (err: unknown) => this.failShouldRateLimit(call, err));
        else this.answered(call, answer);
        return;
      }
      case KIND_CHECK: {
        let service: string;
        try {
          service = decodeHealthCheckRequest(payload).service;
        } catch (err) {
          this.failDecode(call, err);
          return;
        }
        const status = servingStatusOf(service, this.health, this.healthService);
        if (status === undefined) this.fail(call, GrpcStatus.NOT_FOUND, 'unknown service');
        else this.respond(call, encodeHealthCheckResponse({ status }, 5));
        this.onCall?.('Check', performance.now() - call.start);
        return;
      }
      default:
        this.startWatch(call, payload);
    }
  }

  private failDecode(call: GrpcCall, err: unknown): void {
    // A request beyond the configured bounds is the caller's to fix, not a malformed message.
    if (isRequestLimitError(err)) {
      this.fail(call, GrpcStatus.INVALID_ARGUMENT, err.message);
      return;
    }
    if (!isProtoDecodeError(err)) this.logger.error({ err }, 'grpc request decoding failed');
    const detail = err instanceof Error ? err.message : String(err);
    this.fail(call, GrpcStatus.INTERNAL, `grpc: error unmarshalling request: ${detail}`);
  }

  private answered(call: GrpcCall, answer: EncodedAnswer): void {
    this.respond(call, answer.body);
    this.onCall?.('ShouldRateLimit', performance.now() - call.start);
  }

  /** Every failure becomes a status on the stream; only decisions that ran are counted as calls. */
  private failShouldRateLimit(call: GrpcCall, err: unknown): void {
    if (err instanceof RequestDecodeFailure) {
      this.failDecode(call, err.reason);
      return;
    }
    if (err instanceof ResponseEncodeFailure) {
      this.logger.error({ err: err.reason }, 'RateLimitResponse encoding failed');
      this.fail(call, GrpcStatus.INTERNAL, 'internal error');
      return;
    }
    const st = statusForServiceError(err);
    if (st.code === GrpcStatus.INTERNAL) this.logger.error({ err }, 'ShouldRateLimit failed');
    this.fail(call, st.code, st.message);
    this.onCall?.('ShouldRateLimit', performance.now() - call.start);
  }

  private respond(call: GrpcCall, body: Buffer): void {
    if (call.done) return;
    call.done = true;
    if (call.timer !== undefined) clearTimeout(call.timer);
    try {
      call.sendUnary(writeGrpcPrefix(body));
    } catch (err) {
      this.logger.debug({ err }, 'grpc response write failed');
    }
  }

  /** Ends a call with a non-OK status: trailers-only when nothing was sent yet. */
  fail(call: GrpcCall, code: number, message: string, acceptEncoding = false): void {
    if (call.done) return;
    call.done = true;
    call.inflating?.inflation?.cancel();
    if (call.timer !== undefined) clearTimeout(call.timer);
    if (call.kind === KIND_WATCH) this.dropWatch(call);
    try {
      call.sendStatus(200, code, message, acceptEncoding);
    } catch (err) {
      this.logger.debug({ err }, 'grpc status write failed');
    }
    if (!call.ended) call.stopReading();
  }

  // ---- grpc.health.v1.Health/Watch ----

  private startWatch(call: GrpcCall, payload: Buffer): void {
    try {
      call.service = decodeHealthCheckRequest(payload).service;
    } catch (err) {
      this.failDecode(call, err);
      return;
    }
    // A Watch stays open for good and each health change writes to every one: their number per
    // connection is bounded, so connections × this bounds their memory and the work per change.
    const key = call.connectionKey;
    const open = this.watchesOf.get(key) ?? 0;
    if (open >= this.maxWatches) {
      this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, `grpc: more than ${this.maxWatches} health Watch streams on one connection (GRPC_MAX_WATCHES_PER_CONNECTION)`);
      return;
    }
    try {
      if (!call.startStreaming()) return;
    } catch (err) {
      this.logger.debug({ err }, 'grpc watch start failed');
      return;
    }
    this.watchesOf.set(key, open + 1);
    this.watchers.add(call);
    this.pushWatch(call);
  }

  private dropWatch(call: GrpcCall): void {
    if (!this.watchers.delete(call)) return;
    const key = call.connectionKey;
    const open = (this.watchesOf.get(key) ?? 1) - 1;
    if (open > 0) this.watchesOf.set(key, open);
    else this.watchesOf.delete(key);
  }

  private pushWatch(call: GrpcCall): void {
    // Unknown names get SERVICE_UNKNOWN and stay open, as grpc-go's health server does.
    const status = servingStatusOf(call.service, this.health, this.healthService) ?? ServingStatus.SERVICE_UNKNOWN;
    if (status === call.lastStatus) return;
    call.lastStatus = status;
    call.sendMessage(writeGrpcPrefix(encodeHealthCheckResponse({ status }, 5)));
  }

  private onHealthChange(): void {
    for (const call of this.watchers) {
      try {
        this.pushWatch(call);
      } catch (err) {
        this.logger.debug({ err }, 'grpc watch update failed');
      }
    }
  }

  /** Shutdown: every open Watch ends with UNAVAILABLE. */
  endWatches(): void {
    this.rlqs?.endAll();
    for (const call of [...this.watchers]) this.fail(call, GrpcStatus.UNAVAILABLE, 'server shutting down');
    this.watchers.clear();
  }
}

export function unknownMethodMessage(path: string | undefined): string {
  const p = path ?? '';
  const slash = p.lastIndexOf('/');
  const service = p.slice(1, slash > 0 ? slash : p.length);
  const method = slash > 0 ? p.slice(slash + 1) : '';
  if (service === 'envoy.service.ratelimit.v3.RateLimitService' || service === 'grpc.health.v1.Health') {
    return `unknown method ${method} for service ${service}`;
  }
  return `unknown service ${service}`;
}
