// One server-side HTTP/2 connection (RFC 9113) on a net or tls socket: the preface and SETTINGS
// exchange, frame parsing, header blocks (with CONTINUATION and padding) through the HPACK
// decoder, the stream state machine, flow control in both directions, PING, RST_STREAM, GOAWAY
// and the error handling of §5.4 (connection errors end with GOAWAY, stream errors with
// RST_STREAM; a peer can never crash the process). No server push, no priorities.
//
// Output: every frame is written into a per-connection slab; the bytes written during one
// event-loop turn (all the responses answered by one Redis reply, say) go out in one
// socket.write on process.nextTick.
import type { Socket } from 'node:net';
import type { TransportLogger } from '../transport-logger.js';
import {
  CANCEL,
  CONTINUATION,
  DATA,
  DEFAULT_MAX_FRAME,
  DEFAULT_WINDOW,
  ENHANCE_YOUR_CALM,
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FLAG_PADDED,
  FLAG_PRIORITY,
  FLOW_CONTROL_ERROR,
  FRAME_HEADER,
  FRAME_SIZE_ERROR,
  GOAWAY,
  HEADERS,
  INTERNAL_ERROR,
  MAX_WINDOW,
  NO_ERROR,
  PING,
  PREFACE,
  PRIORITY,
  PROTOCOL_ERROR,
  PUSH_PROMISE,
  REFUSED_STREAM,
  RST_STREAM,
  SETTINGS,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_HEADER_TABLE_SIZE,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  SETTINGS_MAX_FRAME_SIZE,
  SETTINGS_MAX_HEADER_LIST_SIZE,
  STREAM_CLOSED,
  COMPRESSION_ERROR,
  WINDOW_UPDATE,
  settingsPayload,
  writeFrameHeader,
} from './frames.js';
import { FIELDS_MALFORMED, FIELDS_TOO_LARGE, HpackDecoder, HpackError, type DecodedBlock } from './hpack-decoder.js';
import { ResponseBlockEncoder } from './hpack-encoder.js';
import { copyBytes } from './bytes.js';
import type { CoarseClock, ReceiveBudget } from './receive-budget.js';

/** Protocol state of one stream; the handler's stream objects carry these fields. */
export interface H2Stream {
  readonly id: number;
  /** Request fields, flat [name, value, ...] as decoded; read only (streams whose header blocks repeat share one array). */
  readonly fields: readonly string[];
  /** What the peer lets us send on this stream. */
  sendWindow: number;
  /** What we let the peer send, and how much of it was consumed but not yet re-granted. */
  recvWindow: number;
  recvUnacked: number;
  /** Request bytes of this stream held by the handler until its message is complete (connection budget). */
  recvBuffered: number;
  /** The coarse clock when its HEADERS arrived (GRPC_REQUEST_READ_TIMEOUT). */
  openedAt: number;
  headersSent: boolean;
  /** We sent (or queued, behind flow control) END_STREAM. */
  localClosed: boolean;
  /** The peer sent END_STREAM. */
  remoteClosed: boolean;
  closed: boolean;
  /** DATA waiting for flow-control window, and the trailer block to send after it. */
  pendingData: Buffer | undefined;
  pendingTrailers: Buffer | undefined;
  /** Reset with NO_ERROR once the queued response is out (the request was not read to its end). */
  resetWhenSent: boolean;
  /** A request that is a stream of messages (RLQS): exempt from the request read time, bounded by its handler. */
  readonly clientStreaming?: boolean;
}

export interface H2Handler<S extends H2Stream> {
  /** A new stream with valid request fields (`head.fields`; `head.key` names the field list). */
  newStream(conn: H2Connection<S>, id: number, head: DecodedBlock): S;
  /** The request headers of a new stream (called right after newStream). */
  onRequest(stream: S): void;
  onData(stream: S, chunk: Buffer): void;
  /** The peer ended its side of the stream. */
  onEnd(stream: S): void;
  /** The stream is closed: completed, reset by either side, or the connection went away. */
  onClose(stream: S): void;
  onConnectionClose(conn: H2Connection<S>): void;
}

export interface H2Options {
  maxConcurrentStreams: number;
  logger: TransportLogger;
  /** SETTINGS_MAX_HEADER_LIST_SIZE we advertise and enforce (octets, RFC 7541 §4.1 sizing). */
  maxHeaderListSize: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE we advertise (GRPC_STREAM_WINDOW). */
  streamWindow: number;
  /** Connection-level receive window kept open while there is budget (GRPC_CONNECTION_WINDOW). */
  connectionWindow: number;
  /** Request bytes this connection may hold plus the window it has granted (GRPC_CONNECTION_BUFFER). */
  connectionBuffer: number;
  /** The process-wide budget every widening of a connection window is taken from (GRPC_PROCESS_BUFFER). */
  budget: ReceiveBudget;
  /** Updated by the server's sweep; read instead of Date.now on the request path. */
  clock: CoarseClock;
  /** Streams the peer may reset (or have refused) per counting window before ENHANCE_YOUR_CALM. */
  maxResets: number;
  /** Frames without a request (PING, SETTINGS, WINDOW_UPDATE, PRIORITY, empty DATA/CONTINUATION, unknown) per counting window. */
  maxControlFrames: number;
}

/** Time limits checked by sweep(); 0 disables the idle limit and keepalive. */
export interface H2Timeouts {
  prefaceMs: number;
  idleMs: number;
  requestReadMs: number;
  /** A connection with open streams that received nothing this long is sent a PING. */
  keepaliveMs: number;
  /** Nothing received this long after that PING: the peer is gone, the connection is closed. */
  keepaliveTimeoutMs: number;
}

/** Opaque data of our keepalive PINGs (the peer echoes it in the ACK). */
const KEEPALIVE_PING = Buffer.from('rlskeepa');

const OUR_MAX_FRAME = DEFAULT_MAX_FRAME;
const SLAB = 16 * 1024;
/** Bytes queued in the socket beyond which we stop reading requests until the peer catches up. */
const WRITE_BACKLOG = 1024 * 1024;
/** Below this a window increment drawn from the connection's own recycled bytes is not worth a frame. */
const MIN_GRANT = 8 * 1024;

/**
 * How many recent stream closings a connection remembers, and how each stream closed: RFC 9113
 * §5.1 answers a frame on a closed stream differently after the peer's END_STREAM (connection
 * error STREAM_CLOSED), after the peer's RST_STREAM (stream error STREAM_CLOSED) and after ours
 * (ignored: the peer may have sent it before our reset arrived).
 */
const CLOSED_MEMORY = 32;
const CLOSED_BY_END = 1;
const CLOSED_BY_PEER_RST = 2;
const CLOSED_BY_US = 3;

/** Results of holdBytes. */
export const HOLD_OK = 0;
export const HOLD_CONNECTION = 1;
export const HOLD_PROCESS = 2;
export const HOLD_CLOSED = 3;

const ST_PREFACE = 0;
const ST_SETTINGS = 1;
const ST_OPEN = 2;
const ST_DEAD = 3;

function flushConnection(conn: H2Connection<H2Stream>): void {
  conn.flush();
}

export class H2Connection<S extends H2Stream> {
  readonly socket: Socket;
  private readonly handler: H2Handler<S>;
  private readonly logger: TransportLogger;
  private readonly maxStreams: number;
  private readonly maxHeaderList: number;
  private readonly streamWindow: number;
  private readonly connectionWindow: number;
  private readonly connectionBuffer: number;
  /** Window growth below this waits for more consumed bytes (one WINDOW_UPDATE per quarter window). */
  private readonly refillStep: number;
  private readonly budget: ReceiveBudget;
  private readonly clock: CoarseClock;
  private readonly maxResets: number;
  private readonly maxControl: number;
  private readonly decoder = new HpackDecoder();
  readonly streams = new Map<number, S>();
  private state = ST_PREFACE;
  private inbuf: Buffer | undefined = undefined;
  private lastStreamId = 0;
  // Header block being assembled from HEADERS + CONTINUATION frames.
  private contId = 0;
  private contEnd = false;
  private contParts: Buffer[] = [];
  private contSize = 0;
  private contStart = 0;
  // Flow control: our sending side.
  private sendWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = DEFAULT_MAX_FRAME;
  private readonly blocked: S[] = [];
  /** The key (DecodedBlock.key, never 0) of the last request field list found valid. */
  private validKey = 0;
  /** Our side of the peer's HPACK table (the fixed response fields, by index after first use). */
  private readonly encoder = new ResponseBlockEncoder();
  // Flow control: the receiving side. recvWindow + buffered (what the peer may send plus what we
  // hold) never exceeds DEFAULT_WINDOW + held, where held is taken from the process budget and
  // bounded by connectionBuffer.
  private recvWindow = DEFAULT_WINDOW;
  private buffered = 0;
  private held = 0;
  /** Streams the peer has not finished sending (GRPC_REQUEST_READ_TIMEOUT applies to them). */
  private incomplete = 0;
  /** Streams whose request ended in the chunk being parsed: decided after the chunk, unless reset meanwhile. */
  private readonly ended: S[] = [];
  private parsing = false;
  // Flood counters of the current counting window (reset by the server's sweep).
  private resets = 0;
  private control = 0;
  /** Coarse time the last stream closed (or the connection opened): the idle clock. */
  private idleFrom: number;
  /** Coarse time bytes last arrived from the peer (keepalive). */
  private lastReceived: number;
  /** Coarse time our keepalive PING went out, 0 when none is outstanding (any bytes back clear it). */
  private pingSentAt = 0;
  // Output slab.
  private out = Buffer.allocUnsafe(SLAB);
  private outStart = 0;
  private outLen = 0;
  private flushScheduled = false;
  /** GOAWAY sent: streams above goawayLastId are ignored; the connection ends when idle. */
  private draining = false;
  private goawayLastId = 0;
  /** Ring of the last CLOSED_MEMORY closed streams (id, CLOSED_*); see closedStreamFrame. */
  private readonly closedIds = new Uint32Array(CLOSED_MEMORY);
  private readonly closedHow = new Uint8Array(CLOSED_MEMORY);
  private closedNext = 0;
  /** A HEADERS frame whose priority names its own stream: reset once its block is decoded (§5.3.1). */
  private selfDependent = 0;
  /** content-length of the last valid request block (-1: none), and the bytes still due per stream (§8.1.1). */
  private validLength = -1;
  private bodyLeft: Map<number, number> | undefined = undefined;
  readonly createdAt: number;

  constructor(socket: Socket, handler: H2Handler<S>, opts: H2Options, now: number) {
    this.socket = socket;
    this.handler = handler;
    this.logger = opts.logger;
    this.maxStreams = opts.maxConcurrentStreams;
    this.maxHeaderList = opts.maxHeaderListSize;
    this.streamWindow = opts.streamWindow;
    this.connectionWindow = opts.connectionWindow;
    this.connectionBuffer = opts.connectionBuffer;
    this.refillStep = Math.max(1, Math.min(opts.connectionWindow, opts.connectionBuffer) >>> 2);
    this.budget = opts.budget;
    this.clock = opts.clock;
    this.maxResets = opts.maxResets;
    this.maxControl = opts.maxControlFrames;
    this.createdAt = now;
    this.idleFrom = opts.clock.now;
    this.lastReceived = opts.clock.now;
    socket.on('data', (chunk: Buffer) => this.onBytes(chunk));
    socket.on('error', (err: Error) => this.logger.debug({ err }, 'grpc connection error'));
    socket.on('close', () => this.onSocketClose());
    // The server preface: our SETTINGS. The connection window stays at the initial 64 KiB until
    // request bytes flow (refill), so idle connections hold none of the process budget.
    this.writeFrame(
      SETTINGS,
      0,
      0,
      settingsPayload([
        [SETTINGS_MAX_CONCURRENT_STREAMS, this.maxStreams],
        [SETTINGS_INITIAL_WINDOW_SIZE, this.streamWindow],
        [SETTINGS_MAX_HEADER_LIST_SIZE, this.maxHeaderList],
      ]),
    );
  }

  /** Open streams (open or half-closed). */
  get streamCount(): number {
    return this.streams.size;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** Not (yet) useful to anyone: no complete client preface, or no open stream. Evicted first at GRPC_MAX_CONNECTIONS. */
  get isIdle(): boolean {
    return this.state !== ST_OPEN || this.streams.size === 0;
  }

  /** Coarse time since when the connection has been idle (its creation before the preface). */
  get idleSince(): number {
    return this.state < ST_OPEN ? this.idleFrom - 1e12 : this.idleFrom;
  }

  /** Request bytes held plus window granted beyond the initial 64 KiB (for tests and /debug). */
  get heldBytes(): number {
    return this.held;
  }

  // ---- input ----

  private onBytes(chunk: Buffer): void {
    if (this.state === ST_DEAD) return;
    this.lastReceived = this.clock.now;
    this.pingSentAt = 0;
    let buf = chunk;
    if (this.inbuf !== undefined) {
      buf = Buffer.concat([this.inbuf, chunk]);
      this.inbuf = undefined;
    }
    this.parsing = true;
    try {
      this.parse(buf);
      this.parsing = false;
      if (this.ended.length > 0) this.runEnded();
      if (this.state !== ST_DEAD) this.refill();
    } catch (err) {
      this.parsing = false;
      this.ended.length = 0;
      // A bug of ours, not the peer's: end this connection, keep the process.
      this.logger.error({ err }, 'HTTP/2 connection failed');
      this.connectionError(INTERNAL_ERROR, 'internal error');
    }
  }

  /**
   * The requests completed in the chunk just parsed go to the handler now, so a stream the peer
   * reset later in the same chunk (rapid reset) is never decided nor counted.
   */
  private runEnded(): void {
    const ended = this.ended;
    for (let i = 0; i < ended.length; i++) {
      const s = ended[i]!;
      if (s.closed || this.state === ST_DEAD) continue;
      // The handler takes the whole message now: its bytes leave the connection's budget.
      this.buffered -= s.recvBuffered;
      s.recvBuffered = 0;
      this.handler.onEnd(s);
      this.maybeClose(s);
    }
    ended.length = 0;
  }

  /**
   * Widens the connection window towards connectionWindow, never beyond what connectionBuffer
   * allows with the bytes held, taking the growth beyond the initial 64 KiB from the process
   * budget; gives back what is no longer needed. O(1), at most one WINDOW_UPDATE per chunk.
   */
  private refill(): void {
    const target = Math.min(this.connectionWindow, this.connectionBuffer - this.buffered);
    let inc = target - this.recvWindow;
    // Batched to one WINDOW_UPDATE per quarter window, unless the window is nearly used up: then
    // whatever there is goes out, so a message a few bytes short of complete never waits.
    const low = this.recvWindow < MIN_GRANT;
    if (inc >= this.refillStep || (inc > 0 && low)) {
      // What we may grant without the process budget: the initial window plus what we hold.
      const own = DEFAULT_WINDOW + this.held - this.recvWindow - this.buffered;
      if (inc > own) {
        const got = this.budget.take(inc - Math.max(0, own));
        this.held += got;
        inc = Math.max(0, own) + got;
      }
      if (inc > 0 && (inc >= MIN_GRANT || low)) {
        this.recvWindow += inc;
        this.writeWindowUpdate(0, inc);
      }
    }
    // Bytes held beyond what the window and the buffered data need go back to the process.
    const need = this.recvWindow + this.buffered - DEFAULT_WINDOW;
    if (this.held > need) {
      const surplus = this.held - Math.max(0, need);
      this.held -= surplus;
      this.budget.give(surplus);
    }
  }

  /**
   * Counts `n` more request bytes held for `stream` after its DATA was consumed — a compressed
   * message and what it inflates to — against the connection's budget (with the window granted,
   * as the DATA bytes are) and, beyond what the connection already holds, the process budget.
   * They stay counted in the stream's recvBuffered, so closing the stream gives them back
   * whatever happens to the handler. HOLD_OK, or which budget refused (nothing is taken then).
   */
  holdBytes(stream: S, n: number): number {
    if (this.state === ST_DEAD || stream.closed) return HOLD_CLOSED;
    if (this.recvWindow + this.buffered + n > this.connectionBuffer) return HOLD_CONNECTION;
    const own = DEFAULT_WINDOW + this.held - this.recvWindow - this.buffered;
    if (n > own) {
      const need = n - Math.max(0, own);
      const got = this.budget.take(need);
      if (got < need) {
        this.budget.give(got);
        return HOLD_PROCESS;
      }
      this.held += got;
    }
    stream.recvBuffered += n;
    this.buffered += n;
    return HOLD_OK;
  }

  /** Gives back up to `n` bytes taken with holdBytes (none after the stream closed: closing gave them back). */
  releaseBytes(stream: S, n: number): void {
    const k = Math.min(n, stream.recvBuffered);
    if (k <= 0) return;
    stream.recvBuffered -= k;
    this.buffered -= k;
    if (!this.parsing && this.state !== ST_DEAD) this.refill();
  }

  /** Counts a frame that carries no request; false (after GOAWAY ENHANCE_YOUR_CALM) over the limit. */
  private controlFrame(what: string): boolean {
    if (++this.control <= this.maxControl) return true;
    this.calm(`too many ${what} frames (over ${this.maxControl} per second)`);
    return false;
  }

  private countReset(): boolean {
    if (++this.resets <= this.maxResets) return true;
    this.calm(`too many reset streams (over ${this.maxResets} per second)`);
    return false;
  }

  private calm(reason: string): void {
    this.logger.warn({ err: reason }, 'grpc connection closed with ENHANCE_YOUR_CALM');
    this.connectionError(ENHANCE_YOUR_CALM, reason);
  }

  /** A new counting window for the flood limits (the server calls this once a second). */
  resetCounters(): void {
    this.resets = 0;
    this.control = 0;
  }

  /**
   * Enforces the time limits at coarse time `now` (the server's periodic sweep): client preface,
   * idle, a header block waiting for CONTINUATION, and streams whose request never completes.
   */
  /** Applies the time limits; true when it closed the connection or reset a stream (work was done). */
  sweep(now: number, t: H2Timeouts): boolean {
    if (this.state === ST_DEAD) return false;
    if (this.state !== ST_OPEN) {
      if (now - this.idleFrom >= t.prefaceMs) {
        this.logger.debug({ ms: t.prefaceMs }, 'grpc connection closed: no client preface in time');
        this.connectionError(PROTOCOL_ERROR, `no client preface within ${t.prefaceMs} ms`);
        return true;
      }
      return false;
    }
    if (this.contId !== 0 && now - this.contStart >= t.requestReadMs) {
      this.connectionError(PROTOCOL_ERROR, `header block not completed within ${t.requestReadMs} ms`);
      return true;
    }
    let acted = false;
    if (this.incomplete > 0) {
      for (const s of this.streams.values()) {
        // A client-streaming call (RLQS) sends for as long as it lives: its own bounds hold it.
        if (!s.remoteClosed && s.clientStreaming !== true && now - s.openedAt >= t.requestReadMs) {
          this.logger.debug({ ms: t.requestReadMs }, 'grpc stream reset: request not received in time');
          this.resetStream(s, CANCEL);
          acted = true;
        }
      }
    }
    if (t.keepaliveMs > 0 && this.streams.size > 0) {
      if (this.pingSentAt !== 0) {
        if (now - this.pingSentAt >= t.keepaliveTimeoutMs) {
          this.logger.debug({ ms: t.keepaliveTimeoutMs }, 'grpc connection closed: no answer to a keepalive PING');
          this.connectionError(NO_ERROR, `keepalive: nothing received within ${t.keepaliveTimeoutMs} ms of a PING`);
          return true;
        }
      } else if (now - this.lastReceived >= t.keepaliveMs) {
        this.pingSentAt = now;
        this.writeFrame(PING, 0, 0, KEEPALIVE_PING);
      }
    }
    if (t.idleMs > 0 && this.streams.size === 0 && now - this.idleFrom >= t.idleMs && !this.draining) {
      this.logger.debug({ ms: t.idleMs }, 'grpc connection idle: sending GOAWAY');
      this.shutdown();
      acted = true;
    }
    return acted;
  }

  private parse(buf: Buffer): void {
    let pos = 0;
    if (this.state === ST_PREFACE) {
      const n = Math.min(buf.length, PREFACE.length);
      if (buf.compare(PREFACE, 0, n, 0, n) !== 0) {
        this.connectionError(PROTOCOL_ERROR, 'invalid connection preface');
        return;
      }
      if (n < PREFACE.length) {
        this.inbuf = buf;
        return;
      }
      pos = PREFACE.length;
      this.state = ST_SETTINGS;
    }
    const len = buf.length;
    while (len - pos >= FRAME_HEADER) {
      const length = (buf[pos]! << 16) | (buf[pos + 1]! << 8) | buf[pos + 2]!;
      if (length > OUR_MAX_FRAME) {
        this.connectionError(FRAME_SIZE_ERROR, `frame of ${length} bytes exceeds SETTINGS_MAX_FRAME_SIZE`);
        return;
      }
      if (len - pos < FRAME_HEADER + length) break;
      const type = buf[pos + 3]!;
      const flags = buf[pos + 4]!;
      const id = buf.readUInt32BE(pos + 5) & 0x7fffffff;
      const payload = buf.subarray(pos + FRAME_HEADER, pos + FRAME_HEADER + length);
      pos += FRAME_HEADER + length;
      if (this.state === ST_SETTINGS) {
        if (type !== SETTINGS || (flags & FLAG_ACK) !== 0) {
          this.connectionError(PROTOCOL_ERROR, 'the client preface must start with SETTINGS');
          return;
        }
        this.state = ST_OPEN;
      }
      this.onFrame(type, flags, id, payload);
      if (this.state === ST_DEAD) return;
    }
    if (pos < len) this.inbuf = pos === 0 ? buf : buf.subarray(pos);
  }

  private onFrame(type: number, flags: number, id: number, payload: Buffer): void {
    if (this.contId !== 0 && type !== CONTINUATION) {
      this.connectionError(PROTOCOL_ERROR, 'expected CONTINUATION');
      return;
    }
    switch (type) {
      case DATA:
        this.onData(flags, id, payload);
        return;
      case HEADERS:
        this.onHeaders(flags, id, payload);
        return;
      case PRIORITY:
        if (!this.controlFrame('PRIORITY')) return;
        if (id === 0) this.connectionError(PROTOCOL_ERROR, 'PRIORITY on stream 0');
        else if (payload.length !== 5) this.streamError(id, FRAME_SIZE_ERROR);
        else if ((payload.readUInt32BE(0) & 0x7fffffff) === id) this.streamError(id, PROTOCOL_ERROR); // §5.3.1: depends on itself
        return;
      case RST_STREAM:
        this.onRstStream(id, payload);
        return;
      case SETTINGS:
        if (!this.controlFrame('SETTINGS')) return;
        this.onSettings(flags, id, payload);
        return;
      case PUSH_PROMISE:
        this.connectionError(PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
        return;
      case PING:
        if (!this.controlFrame('PING')) return;
        if (id !== 0) this.connectionError(PROTOCOL_ERROR, 'PING on a stream');
        else if (payload.length !== 8) this.connectionError(FRAME_SIZE_ERROR, 'PING payload is not 8 bytes');
        else if ((flags & FLAG_ACK) === 0) this.writeFrame(PING, FLAG_ACK, 0, payload);
        return;
      case GOAWAY:
        this.onGoaway(id, payload);
        return;
      case WINDOW_UPDATE:
        if (!this.controlFrame('WINDOW_UPDATE')) return;
        this.onWindowUpdate(id, payload);
        return;
      case CONTINUATION:
        this.onContinuation(flags, id, payload);
        return;
      default:
        // Unknown frame types are ignored (RFC 9113 §5.5), but counted: they cost a parse each.
        this.controlFrame('unknown-type');
        return;
    }
  }

  /** Strips padding; undefined (after a connection error) when the padding is invalid. */
  private unpad(flags: number, payload: Buffer, extra: number): Buffer | undefined {
    if ((flags & FLAG_PADDED) === 0) return extra === 0 ? payload : payload.length >= extra ? payload.subarray(extra) : this.tooShort();
    if (payload.length < 1 + extra) return this.tooShort();
    const pad = payload[0]!;
    if (pad > payload.length - 1 - extra) {
      this.connectionError(PROTOCOL_ERROR, 'padding longer than the frame');
      return undefined;
    }
    return payload.subarray(1 + extra, payload.length - pad);
  }

  private tooShort(): undefined {
    this.connectionError(FRAME_SIZE_ERROR, 'frame too short');
    return undefined;
  }

  private onData(flags: number, id: number, payload: Buffer): void {
    if (id === 0) {
      this.connectionError(PROTOCOL_ERROR, 'DATA on stream 0');
      return;
    }
    const size = payload.length;
    if (size === 0 && (flags & FLAG_END_STREAM) === 0 && !this.controlFrame('empty DATA')) return;
    // Flow control counts the whole payload, padding included (RFC 9113 §6.1). Bytes not kept
    // (padding, frames of closed streams) are re-granted by the next refill.
    this.recvWindow -= size;
    if (this.recvWindow < 0) {
      this.connectionError(FLOW_CONTROL_ERROR, 'connection flow-control window exceeded');
      return;
    }
    const data = this.unpad(flags, payload, 0);
    if (data === undefined) return;
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id > this.lastStreamId) this.connectionError(PROTOCOL_ERROR, 'DATA on an idle stream');
      else this.closedStreamFrame(id, false);
      return;
    }
    if (stream.remoteClosed) {
      this.streamError(id, STREAM_CLOSED);
      return;
    }
    stream.recvWindow -= size;
    if (stream.recvWindow < 0) {
      this.streamError(id, FLOW_CONTROL_ERROR);
      return;
    }
    if (this.bodyLeft !== undefined && !this.bodyFits(id, data.length, (flags & FLAG_END_STREAM) !== 0)) return;
    if (data.length > 0) {
      // Counted before the handler runs: if it refuses the call, closeStream releases them.
      stream.recvBuffered += data.length;
      this.buffered += data.length;
      this.handler.onData(stream, data);
    }
    if ((flags & FLAG_END_STREAM) !== 0) {
      this.remoteEnd(stream);
    } else if (!stream.closed) {
      // The stream window follows the message as it arrives; the connection window (refill) is
      // what bounds the bytes held.
      stream.recvUnacked += size;
      if (stream.recvUnacked >= this.streamWindow >>> 1) {
        this.writeWindowUpdate(id, stream.recvUnacked);
        stream.recvWindow += stream.recvUnacked;
        stream.recvUnacked = 0;
      }
    }
  }

  /** The peer ended its side: the handler hears of it after the current chunk (runEnded). */
  private remoteEnd(stream: S): void {
    if (stream.closed) return;
    stream.remoteClosed = true;
    this.incomplete--;
    this.ended.push(stream);
  }

  private onHeaders(flags: number, id: number, payload: Buffer): void {
    if (id === 0) {
      this.connectionError(PROTOCOL_ERROR, 'HEADERS on stream 0');
      return;
    }
    if ((id & 1) === 0) {
      this.connectionError(PROTOCOL_ERROR, 'HEADERS on an even (server-initiated) stream id');
      return;
    }
    const fragment = this.unpad(flags, payload, (flags & FLAG_PRIORITY) !== 0 ? 5 : 0);
    if (fragment === undefined) return;
    if ((flags & FLAG_PRIORITY) !== 0 && (payload.readUInt32BE((flags & FLAG_PADDED) !== 0 ? 1 : 0) & 0x7fffffff) === id) this.selfDependent = id;
    const endStream = (flags & FLAG_END_STREAM) !== 0;
    if ((flags & FLAG_END_HEADERS) !== 0) {
      this.onHeaderBlock(id, endStream, fragment);
      return;
    }
    if (fragment.length === 0 && !this.controlFrame('empty HEADERS')) return;
    this.contStart = this.clock.now;
    this.contId = id;
    this.contEnd = endStream;
    this.contParts = [fragment];
    this.contSize = fragment.length;
  }

  private onContinuation(flags: number, id: number, payload: Buffer): void {
    if (this.contId === 0 || id !== this.contId) {
      this.connectionError(PROTOCOL_ERROR, 'unexpected CONTINUATION');
      return;
    }
    if (payload.length === 0 && (flags & FLAG_END_HEADERS) === 0 && !this.controlFrame('empty CONTINUATION')) return;
    this.contSize += payload.length;
    // A field block may legitimately be a little larger than the list it encodes (Huffman
    // expansion is the other way round); beyond that it is a CONTINUATION flood.
    if (this.contSize > this.maxHeaderList + OUR_MAX_FRAME) {
      this.connectionError(ENHANCE_YOUR_CALM, 'field block too large');
      return;
    }
    this.contParts.push(payload);
    if ((flags & FLAG_END_HEADERS) === 0) return;
    const block = Buffer.concat(this.contParts, this.contSize);
    this.contId = 0;
    this.contParts = [];
    this.onHeaderBlock(id, this.contEnd, block);
  }

  private onHeaderBlock(id: number, endStream: boolean, block: Buffer): void {
    let decoded: DecodedBlock;
    try {
      decoded = this.decoder.decodeBlock(block, this.maxHeaderList);
    } catch (err) {
      if (!(err instanceof HpackError)) throw err;
      this.connectionError(COMPRESSION_ERROR, err.message);
      return;
    }
    const { fields, flags: result } = decoded;
    const existing = this.streams.get(id);
    if (existing !== undefined) {
      // Trailers: they must end the stream.
      if (existing.remoteClosed) this.streamError(id, STREAM_CLOSED);
      else if (!endStream || (result & FIELDS_MALFORMED) !== 0 || !validTrailerFields(fields)) this.streamError(id, PROTOCOL_ERROR);
      else if (this.bodyLeft === undefined || this.bodyFits(id, 0, true)) this.remoteEnd(existing);
      return;
    }
    if (id <= this.lastStreamId) {
      this.closedStreamFrame(id, true); // its fields were decoded for the table all the same
      return;
    }
    this.lastStreamId = id;
    if (this.draining && id > this.goawayLastId) return; // after our GOAWAY: not processed (§6.8)
    if (this.selfDependent === id) {
      this.streamError(id, PROTOCOL_ERROR);
      return;
    }
    if (this.streams.size >= this.maxStreams) {
      if (!this.countReset()) return;
      this.streamError(id, REFUSED_STREAM);
      return;
    }
    if ((result & FIELDS_TOO_LARGE) !== 0) {
      // Over the SETTINGS_MAX_HEADER_LIST_SIZE we advertised: the stream is refused unread.
      this.streamError(id, ENHANCE_YOUR_CALM);
      return;
    }
    // A field list is checked once: a repeat of the last checked one has its key.
    if (decoded.key !== this.validKey) {
      if ((result & FIELDS_MALFORMED) !== 0 || !validRequestFields(fields)) {
        this.streamError(id, PROTOCOL_ERROR);
        return;
      }
      this.validKey = decoded.key;
      this.validLength = declaredLength(fields);
    }
    if (this.validLength >= 0) {
      // §8.1.1: a body that will not match its content-length is malformed (rare: gRPC clients send none).
      if (endStream && this.validLength > 0) {
        this.streamError(id, PROTOCOL_ERROR);
        return;
      }
      if (!endStream) (this.bodyLeft ??= new Map()).set(id, this.validLength);
    }
    const stream = this.handler.newStream(this, id, decoded);
    stream.sendWindow = this.peerInitialWindow;
    stream.recvWindow = this.streamWindow;
    stream.openedAt = this.clock.now;
    // Set before onRequest: an immediate answer must not reset a stream the peer already ended.
    stream.remoteClosed = endStream;
    if (!endStream) this.incomplete++;
    // Each request earns back one control frame: clients that PING or WINDOW_UPDATE in step with
    // their traffic (grpc-go's BDP pings) are never mistaken for a flood.
    if (this.control > 0) this.control--;
    this.streams.set(id, stream);
    this.handler.onRequest(stream);
    if (endStream && !stream.closed) this.ended.push(stream);
  }

  private onRstStream(id: number, payload: Buffer): void {
    if (id === 0) {
      this.connectionError(PROTOCOL_ERROR, 'RST_STREAM on stream 0');
      return;
    }
    if (payload.length !== 4) {
      this.connectionError(FRAME_SIZE_ERROR, 'RST_STREAM payload is not 4 bytes');
      return;
    }
    if (id > this.lastStreamId) {
      this.connectionError(PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
      return;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) return;
    if (!this.countReset()) return;
    this.rememberClosed(id, CLOSED_BY_PEER_RST);
    this.closeStream(stream);
  }

  private onSettings(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) {
      this.connectionError(PROTOCOL_ERROR, 'SETTINGS on a stream');
      return;
    }
    if ((flags & FLAG_ACK) !== 0) {
      if (payload.length !== 0) this.connectionError(FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6 !== 0) {
      this.connectionError(FRAME_SIZE_ERROR, 'SETTINGS payload is not a multiple of 6 bytes');
      return;
    }
    for (let i = 0; i < payload.length; i += 6) {
      const key = payload.readUInt16BE(i);
      const value = payload.readUInt32BE(i + 2);
      switch (key) {
        case SETTINGS_HEADER_TABLE_SIZE:
          this.encoder.peerTableSize(value);
          break;
        case SETTINGS_ENABLE_PUSH:
          if (value > 1) {
            this.connectionError(PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH must be 0 or 1');
            return;
          }
          break;
        case SETTINGS_INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW) {
            this.connectionError(FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1');
            return;
          }
          const delta = value - this.peerInitialWindow;
          this.peerInitialWindow = value;
          for (const s of this.streams.values()) {
            s.sendWindow += delta;
            if (s.sendWindow > MAX_WINDOW) {
              // §6.9.2: a connection error, not a stream error.
              this.connectionError(FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE takes a stream window above 2^31-1');
              return;
            }
          }
          break;
        }
        case SETTINGS_MAX_FRAME_SIZE:
          if (value < DEFAULT_MAX_FRAME || value > 0xffffff) {
            this.connectionError(PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range');
            return;
          }
          this.peerMaxFrame = value;
          break;
        default:
          break; // MAX_CONCURRENT_STREAMS (we never push), MAX_HEADER_LIST_SIZE (advisory), unknown
      }
    }
    this.writeFrame(SETTINGS, FLAG_ACK, 0, undefined);
    this.drainBlocked();
  }

  private onGoaway(id: number, payload: Buffer): void {
    if (id !== 0) {
      this.connectionError(PROTOCOL_ERROR, 'GOAWAY on a stream');
      return;
    }
    if (payload.length < 8) {
      this.connectionError(FRAME_SIZE_ERROR, 'GOAWAY payload too short');
      return;
    }
    const code = payload.readUInt32BE(4);
    if (code !== NO_ERROR) this.logger.debug({ code }, 'client sent GOAWAY with an error');
    // The client opens no more streams; the ones in flight are answered, then we hang up.
    this.draining = true;
    this.goawayLastId = this.lastStreamId;
    if (this.streams.size === 0) this.end();
  }

  private onWindowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4) {
      this.connectionError(FRAME_SIZE_ERROR, 'WINDOW_UPDATE payload is not 4 bytes');
      return;
    }
    const inc = payload.readUInt32BE(0) & 0x7fffffff;
    if (id === 0) {
      if (inc === 0) {
        this.connectionError(PROTOCOL_ERROR, 'WINDOW_UPDATE with increment 0');
        return;
      }
      this.sendWindow += inc;
      if (this.sendWindow > MAX_WINDOW) {
        this.connectionError(FLOW_CONTROL_ERROR, 'connection window above 2^31-1');
        return;
      }
      this.drainBlocked();
      return;
    }
    if (id > this.lastStreamId) {
      this.connectionError(PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      return;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) return;
    if (inc === 0) {
      this.streamError(id, PROTOCOL_ERROR);
      return;
    }
    stream.sendWindow += inc;
    if (stream.sendWindow > MAX_WINDOW) {
      this.streamError(id, FLOW_CONTROL_ERROR);
      return;
    }
    if (stream.pendingData !== undefined) this.drainBlocked();
  }

  // ---- output ----

  /** Reserves `n` bytes in the output slab and returns their offset in `this.out`. */
  private reserve(n: number): number {
    if (this.outLen + n > this.out.length) {
      if (this.outLen > this.outStart && !this.socket.destroyed && !this.socket.writableEnded) this.socket.write(this.out.subarray(this.outStart, this.outLen));
      this.out = Buffer.allocUnsafe(Math.max(SLAB, n));
      this.outStart = 0;
      this.outLen = 0;
    }
    const off = this.outLen;
    this.outLen += n;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      process.nextTick(flushConnection, this);
    }
    return off;
  }

  flush(): void {
    this.flushScheduled = false;
    if (this.outLen === this.outStart) return;
    const chunk = this.out.subarray(this.outStart, this.outLen);
    this.outStart = this.outLen;
    const socket = this.socket;
    if (socket.destroyed || socket.writableEnded) return;
    socket.write(chunk);
    // A peer that sends requests but does not read the answers must not grow our memory.
    if (socket.writableLength > WRITE_BACKLOG && !socket.isPaused()) {
      socket.pause();
      socket.once('drain', () => socket.resume());
    }
  }

  private writeFrame(type: number, flags: number, id: number, payload: Buffer | undefined): void {
    const len = payload?.length ?? 0;
    const off = this.reserve(FRAME_HEADER + len);
    writeFrameHeader(this.out, off, len, type, flags, id);
    if (payload !== undefined) copyBytes(payload, 0, payload.length, this.out, off + FRAME_HEADER);
  }

  private writeWindowUpdate(id: number, inc: number): void {
    const off = this.reserve(FRAME_HEADER + 4);
    writeFrameHeader(this.out, off, 4, WINDOW_UPDATE, 0, id);
    this.out.writeUInt32BE(inc, off + FRAME_HEADER);
  }

  /** HEADERS (+ CONTINUATION when the block exceeds the peer's frame size) of a pre-encoded block. */
  writeHeaders(stream: S, block: Buffer, endStream: boolean): void {
    if (stream.closed || stream.localClosed) return;
    const prefix = this.encoder.takeSizeUpdate() ? 1 : 0;
    block = this.encoder.block(block);
    const total = block.length + prefix;
    const endFlag = endStream ? FLAG_END_STREAM : 0;
    if (total <= this.peerMaxFrame) {
      const off = this.reserve(FRAME_HEADER + total);
      writeFrameHeader(this.out, off, total, HEADERS, FLAG_END_HEADERS | endFlag, stream.id);
      if (prefix === 1) this.out[off + FRAME_HEADER] = 0x20; // dynamic table size update to 0
      copyBytes(block, 0, block.length, this.out, off + FRAME_HEADER + prefix);
    } else {
      const whole = prefix === 1 ? Buffer.concat([Buffer.from([0x20]), block]) : block;
      let pos = 0;
      while (pos < whole.length) {
        const n = Math.min(this.peerMaxFrame, whole.length - pos);
        const last = pos + n === whole.length;
        const type = pos === 0 ? HEADERS : CONTINUATION;
        const flags = (last ? FLAG_END_HEADERS : 0) | (pos === 0 ? endFlag : 0);
        this.writeFrame(type, flags, stream.id, whole.subarray(pos, pos + n));
        pos += n;
      }
    }
    stream.headersSent = true;
    if (endStream) {
      stream.localClosed = true;
      this.maybeClose(stream);
    }
  }

  /** DATA within the flow-control windows; the rest waits for WINDOW_UPDATE. */
  writeData(stream: S, data: Buffer): void {
    if (stream.closed || stream.localClosed) return;
    if (stream.pendingData !== undefined) {
      stream.pendingData = Buffer.concat([stream.pendingData, data]);
      return;
    }
    const sent = this.sendDataNow(stream, data);
    if (sent < data.length) {
      stream.pendingData = data.subarray(sent);
      this.blocked.push(stream);
    }
  }

  /** Trailers (HEADERS with END_STREAM), after any DATA still waiting for window. */
  writeTrailers(stream: S, block: Buffer): void {
    if (stream.closed || stream.localClosed) return;
    if (stream.pendingData !== undefined) stream.pendingTrailers = block;
    else this.writeHeaders(stream, block, true);
  }

  private sendDataNow(stream: S, data: Buffer): number {
    let off = 0;
    while (off < data.length) {
      const n = Math.min(this.sendWindow, stream.sendWindow, this.peerMaxFrame, data.length - off);
      if (n <= 0) break;
      const o = this.reserve(FRAME_HEADER + n);
      writeFrameHeader(this.out, o, n, DATA, 0, stream.id);
      copyBytes(data, off, off + n, this.out, o + FRAME_HEADER);
      off += n;
      this.sendWindow -= n;
      stream.sendWindow -= n;
    }
    return off;
  }

  private drainBlocked(): void {
    let i = 0;
    while (i < this.blocked.length && this.sendWindow > 0) {
      const s = this.blocked[i]!;
      const data = s.pendingData;
      if (s.closed || data === undefined) {
        this.blocked.splice(i, 1);
        continue;
      }
      const sent = this.sendDataNow(s, data);
      if (sent < data.length) {
        s.pendingData = data.subarray(sent);
        i++;
        continue;
      }
      s.pendingData = undefined;
      this.blocked.splice(i, 1);
      const trailers = s.pendingTrailers;
      s.pendingTrailers = undefined;
      if (trailers !== undefined) this.writeHeaders(s, trailers, true);
      if (s.resetWhenSent && !s.closed) this.resetStream(s, NO_ERROR);
    }
  }

  /**
   * Our response is complete (or will be, once flow control lets it out) but the peer has not
   * finished sending: reset the stream with NO_ERROR after the response (RFC 9113 §8.1).
   */
  stopReading(stream: S): void {
    if (stream.closed || stream.remoteClosed) return;
    if (stream.pendingData !== undefined) stream.resetWhenSent = true;
    else this.resetStream(stream, NO_ERROR);
  }

  resetStream(stream: S, code: number): void {
    if (stream.closed) return;
    this.writeRst(stream.id, code);
    this.closeStream(stream);
  }

  private writeRst(id: number, code: number): void {
    this.rememberClosed(id, CLOSED_BY_US);
    const off = this.reserve(FRAME_HEADER + 4);
    writeFrameHeader(this.out, off, 4, RST_STREAM, 0, id);
    this.out.writeUInt32BE(code, off + FRAME_HEADER);
  }

  private streamError(id: number, code: number): void {
    const stream = this.streams.get(id);
    if (stream !== undefined) this.resetStream(stream, code);
    else this.writeRst(id, code);
  }

  private maybeClose(stream: S): void {
    if (stream.localClosed && stream.remoteClosed && stream.pendingData === undefined) {
      this.rememberClosed(stream.id, CLOSED_BY_END);
      this.closeStream(stream);
    }
  }

  private rememberClosed(id: number, how: number): void {
    const i = this.closedNext;
    this.closedIds[i] = id;
    this.closedHow[i] = how;
    this.closedNext = (i + 1) % CLOSED_MEMORY;
  }

  /** How stream `id` closed (CLOSED_*; the latest if several), 0 when not remembered. */
  private closedHowOf(id: number): number {
    for (let k = 1; k <= CLOSED_MEMORY; k++) {
      const i = (this.closedNext - k + CLOSED_MEMORY) % CLOSED_MEMORY;
      if (this.closedIds[i] === id) return this.closedHow[i]!;
    }
    return 0;
  }

  /** DATA or a header block for a stream id at or below lastStreamId that is not open (§5.1, §5.1.1, §6.1). */
  private closedStreamFrame(id: number, headers: boolean): void {
    if (this.draining && id > this.goawayLastId) return; // after our GOAWAY: ignored (§6.8)
    const how = this.closedHowOf(id);
    if (how === CLOSED_BY_US) return; // sent before our RST_STREAM reached the peer
    if (how === CLOSED_BY_END) {
      this.connectionError(STREAM_CLOSED, `${headers ? 'HEADERS' : 'DATA'} on stream ${id} after its END_STREAM`);
    } else if (how === CLOSED_BY_PEER_RST || !headers) {
      // After the peer's reset; or DATA on a stream closed too long ago to remember (§6.1).
      this.streamError(id, STREAM_CLOSED);
    } else {
      // A new stream whose id is not above all earlier ones (§5.1.1). Forgotten closures land
      // here too: a client has no reason to send a header block on a stream it ended long ago.
      this.connectionError(PROTOCOL_ERROR, `HEADERS on stream ${id}: stream ids must increase`);
    }
  }

  /** §8.1.1: DATA beyond the declared content-length, or the end of the stream short of it, is malformed. */
  private bodyFits(id: number, n: number, end: boolean): boolean {
    const left = this.bodyLeft?.get(id);
    if (left === undefined) return true;
    const rest = left - n;
    if (rest >= 0 && !(end && rest > 0)) {
      if (end) this.bodyLeft?.delete(id);
      else this.bodyLeft?.set(id, rest);
      return true;
    }
    this.bodyLeft?.delete(id);
    this.streamError(id, PROTOCOL_ERROR);
    return false;
  }

  private closeStream(stream: S): void {
    if (stream.closed) return;
    stream.closed = true;
    this.streams.delete(stream.id);
    this.bodyLeft?.delete(stream.id);
    if (!stream.remoteClosed) this.incomplete--;
    if (stream.recvBuffered !== 0) {
      this.buffered -= stream.recvBuffered;
      stream.recvBuffered = 0;
      if (!this.parsing && this.state !== ST_DEAD) this.refill();
    }
    if (this.streams.size === 0) this.idleFrom = this.clock.now;
    this.handler.onClose(stream);
    if (this.draining && this.streams.size === 0 && this.state !== ST_DEAD) this.end();
  }

  // ---- connection lifecycle ----

  /** Graceful: GOAWAY(NO_ERROR, last stream id); streams in flight finish, then the socket ends. */
  shutdown(): void {
    if (this.state === ST_DEAD) return;
    if (!this.draining) {
      this.draining = true;
      this.goawayLastId = this.lastStreamId;
      this.writeGoaway(NO_ERROR, '');
    }
    if (this.streams.size === 0) this.end();
  }

  private writeGoaway(code: number, debug: string): void {
    const text = Buffer.from(debug, 'utf8');
    const payload = Buffer.allocUnsafe(8 + text.length);
    payload.writeUInt32BE(this.lastStreamId, 0);
    payload.writeUInt32BE(code, 4);
    text.copy(payload, 8);
    this.writeFrame(GOAWAY, 0, 0, payload);
  }

  /** Connection error (RFC 9113 §5.4.1): GOAWAY with the code, then close. */
  connectionError(code: number, debug: string): void {
    if (this.state === ST_DEAD) return;
    this.logger.debug({ code, err: debug }, 'HTTP/2 connection error');
    this.writeGoaway(code, debug);
    this.end();
  }

  /** Flushes, half-closes, and destroys once the peer had a moment to read our last frames. */
  private end(): void {
    if (this.state === ST_DEAD) return;
    this.state = ST_DEAD;
    this.flush();
    for (const s of [...this.streams.values()]) this.closeStream(s);
    const socket = this.socket;
    if (socket.destroyed) return;
    socket.end();
    const t = setTimeout(() => socket.destroy(), 1000);
    t.unref();
    socket.once('close', () => clearTimeout(t));
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onSocketClose(): void {
    this.state = ST_DEAD;
    for (const s of [...this.streams.values()]) this.closeStream(s);
    this.budget.give(this.held);
    this.held = 0;
    this.handler.onConnectionClose(this);
  }
}

const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/**
 * Request fields of RFC 9113 §8.3.1: pseudo-headers first, each at most once, only the request
 * ones, :method :scheme :path present; no connection-specific fields; `te` only "trailers".
 */
function validRequestFields(fields: readonly string[]): boolean {
  let method = false;
  let scheme = false;
  let path = false;
  let authority = false;
  let regular = false;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    if (name.charCodeAt(0) === 0x3a) {
      if (regular) return false;
      switch (name) {
        case ':method':
          if (method) return false;
          method = true;
          break;
        case ':scheme':
          if (scheme) return false;
          scheme = true;
          break;
        case ':path':
          if (path || fields[i + 1] === '') return false;
          path = true;
          break;
        case ':authority':
          if (authority) return false;
          authority = true;
          break;
        default:
          return false;
      }
    } else {
      regular = true;
      if (CONNECTION_SPECIFIC.has(name)) return false;
      if (name === 'te' && fields[i + 1] !== 'trailers') return false;
      if (name === 'content-length' && !/^[0-9]{1,15}$/.test(fields[i + 1]!)) return false;
    }
  }
  return method && scheme && path;
}

/** The request's content-length (validated digits), -1 without one. */
function declaredLength(fields: readonly string[]): number {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === 'content-length') return Number(fields[i + 1]);
  return -1;
}

/** Trailer fields (RFC 9113 §8.1): no pseudo-headers, no connection-specific fields. */
function validTrailerFields(fields: readonly string[]): boolean {
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    if (name.charCodeAt(0) === 0x3a || CONNECTION_SPECIFIC.has(name)) return false;
  }
  return true;
}
