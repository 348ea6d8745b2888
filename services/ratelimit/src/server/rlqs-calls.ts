// StreamRateLimitQuotas (RLQS, issue 28) on the gRPC transport: one long-lived bidirectional
// stream per Envoy filter config. Each complete length-prefixed report is decoded as it arrives
// (its bytes leave the connection's receive budget at once, so flow control keeps granting window
// on a stream that never ends), handed to the QuotaBalancer, and the balancer pushes
// RateLimitQuotaResponse messages back at will. The stream ends with OK trailers when the client
// half-closes, with a status on a bad or excessive report, and with UNAVAILABLE on shutdown.
//
// Bounds held here (each a setting, docs/ratelimit.md "RLQS"): streams per connection, report
// size (the decoder's RlqsReportLimits), reports per second per stream, the bytes of actions
// queued for a client that does not read (the stream is reset past it), and the time a stream may
// stay open without its first report. Streams per process and buckets per stream and per domain
// are the balancer's.
import { RateLimitError, type BalancerStream, type Clock, type QuotaBalancer } from '@rls/engine';
import {
  decodeRateLimitQuotaUsageReports,
  encodeRateLimitQuotaResponse,
  isRlqsLimitError,
  isProtoDecodeError,
  type RateLimitQuotaResponseMsg,
  type RlqsReportLimits,
} from '@rls/rls-proto';
import type { GrpcCall } from './grpc-calls.js';
import { inflateSmall } from './grpc-inflate.js';
import { GrpcStatus } from './grpc-status.js';
import type { TransportLogger } from './grpc-server-types.js';

export interface RlqsServiceOptions {
  readonly balancer: QuotaBalancer;
  readonly clock: Clock;
  readonly reportLimits: RlqsReportLimits;
  /** RLQS_MAX_STREAMS_PER_CONNECTION: more are refused with RESOURCE_EXHAUSTED. */
  readonly maxStreamsPerConnection: number;
  /** RLQS_MAX_REPORTS_PER_SECOND: a stream sending more (over a one-second window) ends with RESOURCE_EXHAUSTED. */
  readonly maxReportsPerSecond: number;
  /** RLQS_STREAM_SEND_BUFFER: bytes of actions queued for a client that does not read; past it the stream is reset. */
  readonly sendBufferBytes: number;
  /** RLQS_FIRST_REPORT_TIMEOUT: a stream without a report for this long ends with DEADLINE_EXCEEDED (ms). */
  readonly firstReportTimeoutMs: number;
  /** How often the balancer ticks (ms): RLQS_TICK. */
  readonly tickMs: number;
  readonly logger: TransportLogger;
}

/** What the transport must do with a call: answer it with a status (it stays owned by the dispatcher). */
export type RlqsFail = (call: GrpcCall, code: number, message: string) => void;

interface RlqsCallState {
  readonly stream: BalancerStream;
  readonly connection: object;
  /** Chunks of a message not complete yet (joined once, when it is: no copy per chunk). */
  pending: Buffer[] | undefined;
  pendingBytes: number;
  /** Length prefix + message of the incomplete message once its prefix is in; -1 before. */
  pendingExpected: number;
  headersSent: boolean;
  reports: number;
  windowStart: number;
  firstReport: boolean;
  firstTimer: NodeJS.Timeout | undefined;
}

export class RlqsService {
  private readonly calls = new Map<GrpcCall, RlqsCallState>();
  private readonly perConnection = new WeakMap<object, number>();
  private readonly ticker: NodeJS.Timeout;
  private tickSoon = false;
  private fail: RlqsFail = () => undefined;

  constructor(private readonly opts: RlqsServiceOptions) {
    this.ticker = setInterval(() => this.tick(), opts.tickMs);
    this.ticker.unref();
  }

  /** The dispatcher's way to end a call with a status (set once by the dispatcher). */
  bindFail(fail: RlqsFail): void {
    this.fail = fail;
  }

  get streamCount(): number {
    return this.calls.size;
  }

  /** Report messages taken so far (tests wait on it before a tick). */
  get reportCount(): number {
    return this.reports;
  }

  private reports = 0;

  /** A new StreamRateLimitQuotas call; false when it was refused (the call got its status). */
  begin(call: GrpcCall): boolean {
    const conn = call.connectionKey;
    const open = this.perConnection.get(conn) ?? 0;
    if (open >= this.opts.maxStreamsPerConnection) {
      this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, `more than ${this.opts.maxStreamsPerConnection} RLQS streams on one connection (RLQS_MAX_STREAMS_PER_CONNECTION)`);
      return false;
    }
    let stream: BalancerStream;
    try {
      stream = this.opts.balancer.openStream((msg) => this.push(call, msg));
    } catch (err) {
      this.fail(call, GrpcStatus.RESOURCE_EXHAUSTED, `${errorText(err)} (RLQS_MAX_STREAMS)`);
      return false;
    }
    this.perConnection.set(conn, open + 1);
    const state: RlqsCallState = {
      stream,
      connection: conn,
      pending: undefined,
      pendingBytes: 0,
      pendingExpected: -1,
      headersSent: false,
      reports: 0,
      windowStart: this.opts.clock.now(),
      firstReport: false,
      firstTimer: undefined,
    };
    if (this.opts.firstReportTimeoutMs > 0) {
      state.firstTimer = setTimeout(() => {
        if (!state.firstReport) this.end(call, GrpcStatus.DEADLINE_EXCEEDED, `no RLQS report within ${this.opts.firstReportTimeoutMs} ms (RLQS_FIRST_REPORT_TIMEOUT)`);
      }, this.opts.firstReportTimeoutMs);
      state.firstTimer.unref();
    }
    this.calls.set(call, state);
    return true;
  }

  /** A DATA chunk: every complete message in it is taken now, and its bytes released. */
  onData(call: GrpcCall, chunk: Buffer): void {
    const state = this.calls.get(call);
    if (state === undefined || call.done) return;
    let buf = chunk;
    if (state.pending !== undefined) {
      // A message in pieces waits until it is whole (or at least its prefix is in), then is joined once.
      state.pending.push(chunk);
      state.pendingBytes += chunk.length;
      if (state.pendingExpected < 0 && state.pendingBytes >= 5) {
        // Fewer than 5 bytes were pending before this chunk: the join is small.
        const head = Buffer.concat(state.pending);
        state.pendingExpected = 5 + head.readUInt32BE(1);
        if (!this.fits(call, state.pendingExpected - 5)) return;
      }
      if (state.pendingExpected < 0 || state.pendingBytes < state.pendingExpected) return;
      buf = Buffer.concat(state.pending, state.pendingBytes);
      state.pending = undefined;
      state.pendingBytes = 0;
      state.pendingExpected = -1;
    }
    while (buf.length >= 5) {
      const len = buf.readUInt32BE(1);
      if (!this.fits(call, len)) return;
      if (buf.length < 5 + len) break;
      const flag = buf[0];
      const payload = buf.subarray(5, 5 + len);
      buf = buf.subarray(5 + len);
      call.releaseBytes(5 + len);
      if (!this.message(call, state, flag, payload)) return;
    }
    if (buf.length > 0) {
      state.pending = [buf];
      state.pendingBytes = buf.length;
      state.pendingExpected = buf.length >= 5 ? 5 + buf.readUInt32BE(1) : -1;
    }
  }

  /** False (the stream ended) for a message beyond RLQS_MAX_REPORT_BYTES, known from its length prefix. */
  private fits(call: GrpcCall, len: number): boolean {
    if (len <= this.opts.reportLimits.maxMessageBytes) return true;
    this.end(call, GrpcStatus.RESOURCE_EXHAUSTED, `grpc: received message larger than max (${len} vs. ${this.opts.reportLimits.maxMessageBytes}, RLQS_MAX_REPORT_BYTES)`);
    return false;
  }

  /** The client half-closed: the stream ends with OK (or INTERNAL inside a message). */
  onEnd(call: GrpcCall): void {
    const state = this.calls.get(call);
    if (state === undefined) return;
    if (state.pending !== undefined) this.end(call, GrpcStatus.INTERNAL, 'grpc: request ended inside a length-prefixed message');
    else this.end(call, GrpcStatus.OK, '');
  }

  /** The stream went away (RST_STREAM, connection loss): forget it. */
  onReset(call: GrpcCall): void {
    this.forget(call);
  }

  /** Shutdown: every stream ends with UNAVAILABLE (Envoy reconnects elsewhere); ticks stop. */
  endAll(): void {
    clearInterval(this.ticker);
    for (const call of [...this.calls.keys()]) this.end(call, GrpcStatus.UNAVAILABLE, 'server shutting down');
  }

  private message(call: GrpcCall, state: RlqsCallState, flag: number | undefined, payload: Buffer): boolean {
    let bytes = payload;
    if (flag === 1) {
      if (call.encoding !== 'gzip') {
        this.end(call, GrpcStatus.UNIMPLEMENTED, `grpc: compressed RLQS report without a supported grpc-encoding ("${call.encoding ?? ''}")`);
        return false;
      }
      // Reports inflate at once only within the small-message bound; larger compressed reports are refused.
      const r = inflateSmall(payload, this.opts.reportLimits.maxMessageBytes);
      if (r === undefined || r.out === undefined) {
        this.end(call, GrpcStatus.RESOURCE_EXHAUSTED, 'grpc: compressed RLQS report too large or corrupt (send large reports uncompressed)');
        return false;
      }
      bytes = r.out;
    } else if (flag !== 0) {
      this.end(call, GrpcStatus.INTERNAL, `grpc: invalid message flag ${String(flag)}`);
      return false;
    }
    const now = this.opts.clock.now();
    if (now - state.windowStart >= 1000) {
      state.windowStart = now;
      state.reports = 0;
    }
    if (++state.reports > this.opts.maxReportsPerSecond) {
      this.end(call, GrpcStatus.RESOURCE_EXHAUSTED, `more than ${this.opts.maxReportsPerSecond} RLQS reports per second on one stream (RLQS_MAX_REPORTS_PER_SECOND)`);
      return false;
    }
    try {
      const msg = decodeRateLimitQuotaUsageReports(bytes, this.opts.reportLimits);
      state.firstReport = true;
      this.reports++;
      if (this.opts.balancer.report(state.stream, msg) > 0) this.scheduleTick();
    } catch (err) {
      if (isRlqsLimitError(err)) this.end(call, err.limit === 'maxMessageBytes' ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INVALID_ARGUMENT, err.message);
      else if (isProtoDecodeError(err)) this.end(call, GrpcStatus.INTERNAL, `grpc: error unmarshalling request: ${errorText(err)}`);
      else if (err instanceof RateLimitError) this.end(call, err.code === 'resource_exhausted' ? GrpcStatus.RESOURCE_EXHAUSTED : GrpcStatus.INVALID_ARGUMENT, err.message);
      else {
        this.opts.logger.error({ err }, 'RLQS report failed');
        this.end(call, GrpcStatus.INTERNAL, 'internal error');
      }
      return false;
    }
    return true;
  }

  /** New watches get their assignments at the next turn rather than the next tick. */
  private scheduleTick(): void {
    if (this.tickSoon) return;
    this.tickSoon = true;
    setImmediate(() => {
      this.tickSoon = false;
      this.tick();
    });
  }

  private tick(): void {
    this.opts.balancer.tick().catch((err: unknown) => this.opts.logger.error({ err }, 'RLQS tick failed'));
  }

  private push(call: GrpcCall, msg: RateLimitQuotaResponseMsg): void {
    const state = this.calls.get(call);
    if (state === undefined || call.done) return;
    if (call.sendBacklog() > this.opts.sendBufferBytes) {
      // A client that does not read: reset, not buffered for (its grants stay reserved until they expire).
      this.opts.logger.debug({ backlog: call.sendBacklog() }, 'RLQS stream reset: the client does not read (RLQS_STREAM_SEND_BUFFER)');
      this.forget(call);
      call.cancelStream();
      return;
    }
    if (!state.headersSent) {
      if (!call.startStreaming()) return;
      state.headersSent = true;
    }
    const body = encodeRateLimitQuotaResponse(msg, 5);
    body[0] = 0;
    body.writeUInt32BE(body.length - 5, 1);
    call.sendMessage(body);
  }

  private end(call: GrpcCall, code: number, message: string): void {
    this.forget(call);
    this.fail(call, code, message);
  }

  private forget(call: GrpcCall): void {
    const state = this.calls.get(call);
    if (state === undefined) return;
    this.calls.delete(call);
    if (state.firstTimer !== undefined) clearTimeout(state.firstTimer);
    const open = (this.perConnection.get(state.connection) ?? 1) - 1;
    if (open > 0) this.perConnection.set(state.connection, open);
    else this.perConnection.delete(state.connection);
    this.opts.balancer.closeStream(state.stream);
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
