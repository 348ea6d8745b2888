// A raw HTTP/2 client for tests and benches: it writes any frame, well-formed or not, and reads
// the server's frames one by one with a bounded wait. It deliberately does no protocol checking
// of its own (a conformance test must be able to send what a real client never would); the only
// thing it does unasked is ACK the server's SETTINGS (switchable), because a server may
// legitimately close a connection whose peer never acknowledges them (RFC 9113 §6.5.3).
//
// Dependency-free on purpose: it is also loaded from bench .mjs scripts through dist/.

import net from 'node:net';
import tls from 'node:tls';

export const H2_PREFACE: Buffer = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Frame types (RFC 9113 §6). */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Frame flags (RFC 9113 §6). ACK and END_STREAM share bit 0x1. */
export const FrameFlag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** Error codes (RFC 9113 §7). */
export const H2ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

/** SETTINGS identifiers (RFC 9113 §6.5.2). */
export const SettingId = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** The name of an error code, for assertion messages ("PROTOCOL_ERROR", or "0x2a" if unknown). */
export function h2ErrorName(code: number): string {
  for (const [name, value] of Object.entries(H2ErrorCode)) if (value === code) return name;
  return `0x${code.toString(16)}`;
}

const FRAME_TYPE_NAMES: readonly string[] = Object.keys(FrameType);

export interface RawFrame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
  /**
   * HEADERS only: the decoded fields, set once the header block is complete (at once, or when
   * its last CONTINUATION arrives). The client decodes every block in arrival order, as HPACK
   * requires, whether or not a test looks at it.
   */
  fields?: HeaderField[];
}

/** A one-line description of a frame for failure messages. */
export function describeFrame(f: RawFrame): string {
  const name = FRAME_TYPE_NAMES[f.type] ?? `type=0x${f.type.toString(16)}`;
  let extra = '';
  if (f.type === FrameType.GOAWAY && f.payload.length >= 8) extra = ` ${h2ErrorName(decodeGoaway(f.payload).errorCode)}`;
  if (f.type === FrameType.RST_STREAM && f.payload.length === 4) extra = ` ${h2ErrorName(f.payload.readUInt32BE(0))}`;
  return `${name}(stream=${f.streamId}, flags=0x${f.flags.toString(16)}, len=${f.payload.length}${extra})`;
}

// ---------------------------------------------------------------------------------------------
// Encoding helpers (pure; usable without a connection)

/** One frame: 9-byte header + payload. `length` overrides the header's length field (to lie). */
export function encodeFrame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0), length?: number): Buffer {
  const len = length ?? payload.length;
  const out = Buffer.allocUnsafe(9 + payload.length);
  out[0] = (len >>> 16) & 0xff;
  out[1] = (len >>> 8) & 0xff;
  out[2] = len & 0xff;
  out[3] = type & 0xff;
  out[4] = flags & 0xff;
  // The reserved bit is written as given: a test may set it on purpose.
  out.writeUInt32BE(streamId >>> 0, 5);
  payload.copy(out, 9);
  return out;
}

/** An HPACK integer (RFC 7541 §5.1) with an N-bit prefix; `head` holds the first byte's high bits. */
export function hpackInteger(value: number, prefixBits: number, head = 0): Buffer {
  const out: number[] = [];
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(head | value);
  } else {
    out.push(head | max);
    let rest = value - max;
    while (rest >= 0x80) {
      out.push((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    out.push(rest);
  }
  return Buffer.from(out);
}

/** An HPACK string literal without Huffman coding (RFC 7541 §5.2). */
export function hpackString(s: string | Buffer): Buffer {
  const bytes = typeof s === 'string' ? Buffer.from(s, 'latin1') : s;
  return Buffer.concat([hpackInteger(bytes.length, 7, 0x00), bytes]);
}

export type HeaderField = readonly [name: string, value: string];

/**
 * A header block of "literal without indexing, new name" fields (RFC 7541 §6.2.2), no Huffman:
 * the encoding that leaves the server's dynamic table alone, so blocks can be built in any order.
 * Names are sent as given (upper case included) so malformed-header cases can be written.
 */
export function hpackLiteralBlock(fields: readonly HeaderField[]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) parts.push(Buffer.from([0x00]), hpackString(name), hpackString(value));
  return Buffer.concat(parts);
}

/** The request headers of a unary gRPC call. `extra` fields go after the standard ones. */
export function grpcRequestHeaders(path: string, opts: { authority?: string; extra?: readonly HeaderField[] } = {}): HeaderField[] {
  return [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', opts.authority ?? 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...(opts.extra ?? []),
  ];
}

/** A gRPC length-prefixed message (1-byte compressed flag, 4-byte length, body). */
export function grpcMessage(body: Buffer | Uint8Array, compressed = false): Buffer {
  const out = Buffer.allocUnsafe(5 + body.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(body.length, 1);
  Buffer.from(body.buffer, body.byteOffset, body.byteLength).copy(out, 5);
  return out;
}

/** A SETTINGS payload from [id, value] pairs. */
export function settingsPayload(entries: readonly (readonly [number, number])[]): Buffer {
  const out = Buffer.allocUnsafe(6 * entries.length);
  entries.forEach(([id, value], i) => {
    out.writeUInt16BE(id, 6 * i);
    out.writeUInt32BE(value >>> 0, 6 * i + 2);
  });
  return out;
}

/** SETTINGS payload -> [id, value] pairs (a trailing partial entry is ignored). */
export function decodeSettings(payload: Buffer): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i + 6 <= payload.length; i += 6) out.push([payload.readUInt16BE(i), payload.readUInt32BE(i + 2)]);
  return out;
}

export interface GoawayInfo {
  readonly lastStreamId: number;
  readonly errorCode: number;
  readonly debug: string;
}

export function decodeGoaway(payload: Buffer): GoawayInfo {
  return {
    lastStreamId: payload.readUInt32BE(0) & 0x7fffffff,
    errorCode: payload.readUInt32BE(4),
    debug: payload.subarray(8).toString('utf8'),
  };
}

/** Wraps `body` in PADDED framing: pad-length byte, body, `padLength` zero bytes. */
export function padded(body: Buffer, padLength: number): Buffer {
  return Buffer.concat([Buffer.from([padLength & 0xff]), body, Buffer.alloc(padLength)]);
}

/** The 5-byte PRIORITY fields (stream dependency with E bit, weight-1). */
export function priorityFields(dependsOn: number, weight = 16, exclusive = false): Buffer {
  const out = Buffer.allocUnsafe(5);
  out.writeUInt32BE(((exclusive ? 0x80000000 : 0) | (dependsOn & 0x7fffffff)) >>> 0, 0);
  out[4] = (weight - 1) & 0xff;
  return out;
}

// ---------------------------------------------------------------------------------------------
// A small HPACK decoder for reading the server's responses (static + dynamic table; Huffman-coded
// strings are not decoded and are returned as "<huffman:N bytes>", enough to assert on statuses
// sent by servers that do not use Huffman, such as ours).

const STATIC_TABLE: readonly HeaderField[] = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''],
  ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', ''],
];

export class HpackReadError extends Error {
  override name = 'HpackReadError';
}

/** Decodes the server's header blocks; keep one per connection (it holds the dynamic table). */
export class HpackReader {
  private dynamic: HeaderField[] = [];
  private size = 0;
  private maxSize = 4096;

  decode(block: Buffer): HeaderField[] {
    const out: HeaderField[] = [];
    let pos = 0;
    const int = (prefixBits: number): number => {
      const first = block[pos++];
      if (first === undefined) throw new HpackReadError('truncated integer');
      const max = (1 << prefixBits) - 1;
      let v = first & max;
      if (v < max) return v;
      let m = 1;
      for (;;) {
        const b = block[pos++];
        if (b === undefined) throw new HpackReadError('truncated integer');
        v += (b & 0x7f) * m;
        m *= 128;
        if ((b & 0x80) === 0) return v;
        if (m > 2 ** 35) throw new HpackReadError('integer too long');
      }
    };
    const str = (): string => {
      const huffman = ((block[pos] ?? 0) & 0x80) !== 0;
      const len = int(7);
      if (pos + len > block.length) throw new HpackReadError('truncated string');
      const s = huffman ? `<huffman:${len} bytes>` : block.toString('latin1', pos, pos + len);
      pos += len;
      return s;
    };
    const entry = (index: number): HeaderField => {
      const e = index <= STATIC_TABLE.length ? STATIC_TABLE[index - 1] : this.dynamic[index - STATIC_TABLE.length - 1];
      if (index === 0 || e === undefined) throw new HpackReadError(`invalid index ${index}`);
      return e;
    };
    while (pos < block.length) {
      const b = block[pos] ?? 0;
      if (b & 0x80) {
        out.push(entry(int(7)));
      } else if (b & 0x40) {
        const idx = int(6);
        const name = idx === 0 ? str() : entry(idx)[0];
        const field: HeaderField = [name, str()];
        out.push(field);
        this.add(field);
      } else if (b & 0x20) {
        this.maxSize = int(5);
        this.evict();
      } else {
        const idx = int(4);
        const name = idx === 0 ? str() : entry(idx)[0];
        out.push([name, str()]);
      }
    }
    return out;
  }

  private add(field: HeaderField): void {
    this.dynamic.unshift(field);
    this.size += field[0].length + field[1].length + 32;
    this.evict();
  }

  private evict(): void {
    while (this.size > this.maxSize) {
      const last = this.dynamic.pop();
      if (!last) break;
      this.size -= last[0].length + last[1].length + 32;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The connection

export class H2TimeoutError extends Error {
  override name = 'H2TimeoutError';
}

export class H2ClosedError extends Error {
  override name = 'H2ClosedError';
}

export interface H2TlsOptions {
  readonly ca?: string | Buffer;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  readonly servername?: string;
  /** Default true; a test against a self-signed server passes `ca` rather than turning this off. */
  readonly rejectUnauthorized?: boolean;
}

export interface H2ConnectOptions {
  readonly host?: string;
  readonly port: number;
  /** TLS with ALPN "h2" (the connection fails if the server does not select h2). */
  readonly tls?: H2TlsOptions;
  /** Send the preface and this SETTINGS frame at once (default true, with `settings` entries). */
  readonly sendPreface?: boolean;
  readonly settings?: readonly (readonly [number, number])[];
  /** ACK every SETTINGS frame the server sends (default true). */
  readonly autoAckSettings?: boolean;
  /** Bound on the TCP/TLS connect (default 5000 ms). */
  readonly connectTimeoutMs?: number;
}

export interface HeadersOptions {
  readonly endStream?: boolean;
  /** Default true; false leaves the block open for CONTINUATION frames. */
  readonly endHeaders?: boolean;
  readonly padLength?: number;
  readonly priority?: { readonly dependsOn: number; readonly weight?: number; readonly exclusive?: boolean };
  /** Extra flag bits OR-ed in (to send undefined flags). */
  readonly extraFlags?: number;
}

/** Outcome of `connectionError()`: the GOAWAY (if any) and whether the socket closed. */
export interface ConnectionErrorResult {
  readonly goaway: GoawayInfo | undefined;
  readonly closed: boolean;
}

export class H2RawClient {
  /** Every frame received, in order (including those already consumed), for diagnostics. */
  readonly received: RawFrame[] = [];
  /** Decoder for the server's header blocks (shared dynamic table of this connection). */
  readonly hpack = new HpackReader();
  private readonly queue: RawFrame[] = [];
  private buf: Buffer = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  private isClosed = false;
  private socketError: Error | undefined;
  private goaway: GoawayInfo | undefined;
  private readonly closedPromise: Promise<void>;
  private blockFrame: RawFrame | undefined;
  private blockParts: Buffer[] = [];
  /** The last error decoding one of the server's header blocks (undefined if none). */
  hpackError: Error | undefined;

  constructor(
    readonly socket: net.Socket,
    private readonly autoAckSettings: boolean,
  ) {
    socket.setNoDelay(true);
    this.closedPromise = new Promise((resolve) => {
      socket.once('close', () => {
        this.isClosed = true;
        this.wake();
        resolve();
      });
    });
    socket.on('error', (err) => {
      // ECONNRESET after the server's GOAWAY is a normal way for a test connection to end.
      this.socketError = err;
    });
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  /** True once the server (or we) closed the socket. */
  get isSocketClosed(): boolean {
    return this.isClosed;
  }

  /** The last GOAWAY received (undefined if none). */
  get lastGoaway(): GoawayInfo | undefined {
    return this.goaway;
  }

  /** The last GOAWAY's error code (undefined if none was received). */
  get goawayCode(): number | undefined {
    return this.goaway?.errorCode;
  }

  get lastSocketError(): Error | undefined {
    return this.socketError;
  }

  /** Resolves when the socket has closed (never rejects). */
  closed(): Promise<void> {
    return this.closedPromise;
  }

  /** Resolves true if the socket closes within `timeoutMs`, false otherwise. */
  async closedWithin(timeoutMs: number): Promise<boolean> {
    if (this.isClosed) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([this.closedPromise.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    let off = 0;
    while (this.buf.length - off >= 9) {
      const len = this.buf.readUIntBE(off, 3);
      if (this.buf.length - off < 9 + len) break;
      const f: RawFrame = {
        type: this.buf[off + 3] ?? 0,
        flags: this.buf[off + 4] ?? 0,
        streamId: this.buf.readUInt32BE(off + 5) & 0x7fffffff,
        payload: Buffer.from(this.buf.subarray(off + 9, off + 9 + len)),
      };
      off += 9 + len;
      this.received.push(f);
      this.trackHeaderBlock(f);
      if (f.type === FrameType.GOAWAY && f.payload.length >= 8) this.goaway = decodeGoaway(f.payload);
      if (f.type === FrameType.SETTINGS && (f.flags & FrameFlag.ACK) === 0 && this.autoAckSettings && !this.isClosed) {
        this.writeFrame(FrameType.SETTINGS, FrameFlag.ACK, 0);
      }
      this.queue.push(f);
    }
    if (off > 0) this.buf = this.buf.subarray(off);
    this.wake();
  }

  /** Assembles HEADERS + CONTINUATION and decodes the block onto the HEADERS frame. */
  private trackHeaderBlock(f: RawFrame): void {
    let fragment: Buffer;
    if (f.type === FrameType.HEADERS) {
      let p = f.payload;
      let pad = 0;
      if (f.flags & FrameFlag.PADDED) {
        pad = p[0] ?? 0;
        p = p.subarray(1);
      }
      if (f.flags & FrameFlag.PRIORITY) p = p.subarray(5);
      fragment = p.subarray(0, Math.max(0, p.length - pad));
      this.blockFrame = f;
      this.blockParts = [];
    } else if (f.type === FrameType.CONTINUATION && this.blockFrame !== undefined) {
      fragment = f.payload;
    } else {
      return;
    }
    this.blockParts.push(fragment);
    if ((f.flags & FrameFlag.END_HEADERS) === 0) return;
    const target = this.blockFrame;
    this.blockFrame = undefined;
    try {
      if (target) target.fields = this.hpack.decode(Buffer.concat(this.blockParts));
    } catch (err) {
      // A server sending an undecodable block is what a test wants to see, not a client crash.
      this.hpackError = err instanceof Error ? err : new Error(String(err));
    }
    this.blockParts = [];
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /**
   * The next unconsumed frame. Resolves `null` if the socket closed and no frame is left;
   * rejects with H2TimeoutError if nothing arrives within `timeoutMs`.
   */
  async nextFrame(timeoutMs = 5000): Promise<RawFrame | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = this.queue.shift();
      if (f) return f;
      if (this.isClosed) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new H2TimeoutError(`no frame within ${timeoutMs} ms (received so far: ${this.summary()})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.waiter = undefined;
          resolve();
        }, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /**
   * Consumes frames until one matches `predicate` and returns it. Rejects with H2ClosedError if
   * the socket closes first, H2TimeoutError after `timeoutMs`; both messages list the frames seen.
   */
  async waitFor(predicate: (f: RawFrame) => boolean, timeoutMs = 5000, what = 'matching frame'): Promise<RawFrame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new H2TimeoutError(`no ${what} within ${timeoutMs} ms (received: ${this.summary()})`);
      let f: RawFrame | null;
      try {
        f = await this.nextFrame(left);
      } catch (err) {
        if (err instanceof H2TimeoutError) throw new H2TimeoutError(`no ${what} within ${timeoutMs} ms (received: ${this.summary()})`);
        throw err;
      }
      if (f === null) throw new H2ClosedError(`connection closed before ${what} (received: ${this.summary()})`);
      if (predicate(f)) return f;
    }
  }

  /** Waits for the server's first non-ACK SETTINGS frame (the handshake) and returns its entries. */
  async handshake(timeoutMs = 5000): Promise<[number, number][]> {
    const f = await this.waitFor((x) => x.type === FrameType.SETTINGS && (x.flags & FrameFlag.ACK) === 0, timeoutMs, 'server SETTINGS');
    return decodeSettings(f.payload);
  }

  /**
   * Waits until the server ends the connection: a GOAWAY arrives or the socket closes. Resolves
   * with what happened; rejects with H2TimeoutError if neither happens within `timeoutMs`.
   */
  async connectionError(timeoutMs = 5000): Promise<ConnectionErrorResult> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.goaway) return { goaway: this.goaway, closed: this.isClosed };
      const left = deadline - Date.now();
      if (left <= 0) throw new H2TimeoutError(`no GOAWAY or close within ${timeoutMs} ms (received: ${this.summary()})`);
      const f = await this.nextFrame(left).catch((err: unknown) => {
        if (err instanceof H2TimeoutError) return undefined;
        throw err;
      });
      if (f === null) return { goaway: this.goaway, closed: true };
    }
  }

  /**
   * Waits for a RST_STREAM on `streamId` and returns its error code; rejects if the connection
   * closes or nothing arrives in time (a connection error is not a stream error).
   */
  async streamReset(streamId: number, timeoutMs = 5000): Promise<number> {
    const f = await this.waitFor((x) => x.type === FrameType.RST_STREAM && x.streamId === streamId, timeoutMs, `RST_STREAM on stream ${streamId}`);
    return f.payload.length >= 4 ? f.payload.readUInt32BE(0) : -1;
  }

  /** Sends PING and waits for its ACK: proof the connection is still open and processing frames. */
  async pingRoundTrip(timeoutMs = 5000): Promise<void> {
    const opaque = Buffer.from('h2rawpng', 'latin1');
    this.ping(opaque);
    await this.waitFor((x) => x.type === FrameType.PING && (x.flags & FrameFlag.ACK) !== 0 && x.payload.equals(opaque), timeoutMs, 'PING ACK');
  }

  /** A one-line list of the frames received so far. */
  summary(): string {
    const tail = this.received.slice(-12).map(describeFrame).join(', ');
    const closed = this.isClosed ? ' [closed]' : '';
    return (this.received.length > 12 ? `... ${tail}` : tail || 'nothing') + closed;
  }

  // --- writing -------------------------------------------------------------------------------

  /** Writes bytes as given (ignored once the socket is closed, so tests can race the server). */
  writeRaw(bytes: Buffer): void {
    if (this.isClosed || this.socket.destroyed) return;
    this.socket.write(bytes);
  }

  writeFrame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): void {
    this.writeRaw(encodeFrame(type, flags, streamId, payload));
  }

  preface(): void {
    this.writeRaw(H2_PREFACE);
  }

  settings(entries: readonly (readonly [number, number])[] = [], streamId = 0): void {
    this.writeFrame(FrameType.SETTINGS, 0, streamId, settingsPayload(entries));
  }

  settingsAck(payload: Buffer = Buffer.alloc(0)): void {
    this.writeFrame(FrameType.SETTINGS, FrameFlag.ACK, 0, payload);
  }

  /** HEADERS with a header block: `fields` are encoded as literals without indexing; a Buffer is sent as is. */
  headers(streamId: number, fields: readonly HeaderField[] | Buffer, opts: HeadersOptions = {}): void {
    let body = Buffer.isBuffer(fields) ? fields : hpackLiteralBlock(fields);
    let flags = opts.extraFlags ?? 0;
    if (opts.endStream) flags |= FrameFlag.END_STREAM;
    if (opts.endHeaders ?? true) flags |= FrameFlag.END_HEADERS;
    if (opts.priority) {
      flags |= FrameFlag.PRIORITY;
      body = Buffer.concat([priorityFields(opts.priority.dependsOn, opts.priority.weight, opts.priority.exclusive), body]);
    }
    if (opts.padLength !== undefined) {
      flags |= FrameFlag.PADDED;
      body = padded(body, opts.padLength);
    }
    this.writeFrame(FrameType.HEADERS, flags, streamId, body);
  }

  continuation(streamId: number, fields: readonly HeaderField[] | Buffer, endHeaders = true): void {
    const body = Buffer.isBuffer(fields) ? fields : hpackLiteralBlock(fields);
    this.writeFrame(FrameType.CONTINUATION, endHeaders ? FrameFlag.END_HEADERS : 0, streamId, body);
  }

  data(streamId: number, payload: Buffer, opts: { endStream?: boolean; padLength?: number } = {}): void {
    let flags = opts.endStream ? FrameFlag.END_STREAM : 0;
    let body = payload;
    if (opts.padLength !== undefined) {
      flags |= FrameFlag.PADDED;
      body = padded(payload, opts.padLength);
    }
    this.writeFrame(FrameType.DATA, flags, streamId, body);
  }

  /** DATA carrying one gRPC length-prefixed message. */
  grpcData(streamId: number, message: Buffer | Uint8Array, endStream = true): void {
    this.data(streamId, grpcMessage(message), { endStream });
  }

  /** HEADERS (unary gRPC request to `path`) + DATA (one message, END_STREAM). */
  grpcRequest(streamId: number, path: string, message: Buffer | Uint8Array, opts: { authority?: string; extra?: readonly HeaderField[] } = {}): void {
    this.headers(streamId, grpcRequestHeaders(path, opts));
    this.grpcData(streamId, message, true);
  }

  rstStream(streamId: number, errorCode: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(errorCode >>> 0, 0);
    this.writeFrame(FrameType.RST_STREAM, 0, streamId, p);
  }

  ping(opaque: Buffer = Buffer.alloc(8), ack = false, streamId = 0): void {
    this.writeFrame(FrameType.PING, ack ? FrameFlag.ACK : 0, streamId, opaque);
  }

  windowUpdate(streamId: number, increment: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(increment >>> 0, 0);
    this.writeFrame(FrameType.WINDOW_UPDATE, 0, streamId, p);
  }

  priority(streamId: number, dependsOn: number, weight = 16, exclusive = false): void {
    this.writeFrame(FrameType.PRIORITY, 0, streamId, priorityFields(dependsOn, weight, exclusive));
  }

  goawayFrame(lastStreamId: number, errorCode: number, debug = '', streamId = 0): void {
    const p = Buffer.allocUnsafe(8);
    p.writeUInt32BE(lastStreamId & 0x7fffffff, 0);
    p.writeUInt32BE(errorCode >>> 0, 4);
    this.writeFrame(FrameType.GOAWAY, 0, streamId, Buffer.concat([p, Buffer.from(debug, 'utf8')]));
  }

  /** Closes our side and destroys the socket; resolves once it is closed. */
  async close(): Promise<void> {
    if (!this.socket.destroyed) this.socket.destroy();
    await this.closedPromise;
  }
}

/** Connects (TCP, or TLS with ALPN h2), sends the preface and SETTINGS unless told not to. */
export async function connectH2(opts: H2ConnectOptions): Promise<H2RawClient> {
  const host = opts.host ?? '127.0.0.1';
  const timeoutMs = opts.connectTimeoutMs ?? 5000;
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    let s: net.Socket;
    const fail = (err: Error): void => {
      clearTimeout(timer);
      s.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new H2TimeoutError(`connect to ${host}:${opts.port} took over ${timeoutMs} ms`)), timeoutMs);
    if (opts.tls) {
      const t = opts.tls;
      const ts = tls.connect({
        host,
        port: opts.port,
        ALPNProtocols: ['h2'],
        // SNI must not carry an IP address (RFC 6066 §3), so it is only sent for host names.
        ...(t.servername !== undefined ? { servername: t.servername } : net.isIP(host) ? {} : { servername: host }),
        rejectUnauthorized: t.rejectUnauthorized ?? true,
        ...(t.ca !== undefined ? { ca: t.ca } : {}),
        ...(t.cert !== undefined ? { cert: t.cert } : {}),
        ...(t.key !== undefined ? { key: t.key } : {}),
      });
      s = ts;
      ts.once('secureConnect', () => {
        if (ts.alpnProtocol !== 'h2') {
          fail(new Error(`server at ${host}:${opts.port} did not select ALPN h2 (got ${String(ts.alpnProtocol)})`));
          return;
        }
        clearTimeout(timer);
        ts.removeListener('error', fail);
        resolve(ts);
      });
    } else {
      s = net.connect({ host, port: opts.port });
      s.once('connect', () => {
        clearTimeout(timer);
        s.removeListener('error', fail);
        resolve(s);
      });
    }
    s.once('error', fail);
  });
  const client = new H2RawClient(socket, opts.autoAckSettings ?? true);
  if (opts.sendPreface ?? true) {
    client.preface();
    client.settings(opts.settings ?? []);
  }
  return client;
}
