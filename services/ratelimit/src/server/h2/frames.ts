// HTTP/2 framing constants (RFC 9113 §4, §6, §7) and the 9-byte frame header.

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const FRAME_HEADER = 9;

export const DATA = 0x0;
export const HEADERS = 0x1;
export const PRIORITY = 0x2;
export const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
export const PUSH_PROMISE = 0x5;
export const PING = 0x6;
export const GOAWAY = 0x7;
export const WINDOW_UPDATE = 0x8;
export const CONTINUATION = 0x9;

export const FLAG_END_STREAM = 0x1;
export const FLAG_ACK = 0x1;
export const FLAG_END_HEADERS = 0x4;
export const FLAG_PADDED = 0x8;
export const FLAG_PRIORITY = 0x20;

export const SETTINGS_HEADER_TABLE_SIZE = 0x1;
export const SETTINGS_ENABLE_PUSH = 0x2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

export const NO_ERROR = 0x0;
export const PROTOCOL_ERROR = 0x1;
export const INTERNAL_ERROR = 0x2;
export const FLOW_CONTROL_ERROR = 0x3;
export const SETTINGS_TIMEOUT = 0x4;
export const STREAM_CLOSED = 0x5;
export const FRAME_SIZE_ERROR = 0x6;
export const REFUSED_STREAM = 0x7;
export const CANCEL = 0x8;
export const COMPRESSION_ERROR = 0x9;
export const ENHANCE_YOUR_CALM = 0xb;

export const DEFAULT_WINDOW = 65_535;
export const DEFAULT_MAX_FRAME = 16_384;
export const MAX_WINDOW = 0x7fffffff;

/** Writes a frame header at `off` of `buf`. */
export function writeFrameHeader(buf: Buffer, off: number, length: number, type: number, flags: number, streamId: number): void {
  buf[off] = (length >>> 16) & 0xff;
  buf[off + 1] = (length >>> 8) & 0xff;
  buf[off + 2] = length & 0xff;
  buf[off + 3] = type;
  buf[off + 4] = flags;
  buf[off + 5] = (streamId >>> 24) & 0xff;
  buf[off + 6] = (streamId >>> 16) & 0xff;
  buf[off + 7] = (streamId >>> 8) & 0xff;
  buf[off + 8] = streamId & 0xff;
}

/** One whole frame as a new Buffer (for the rare frames and for tests). */
export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER + payload.length);
  writeFrameHeader(out, 0, payload.length, type, flags, streamId);
  payload.copy(out, FRAME_HEADER);
  return out;
}

/** A SETTINGS payload from [id, value] pairs. */
export function settingsPayload(pairs: readonly (readonly [number, number])[]): Buffer {
  const out = Buffer.allocUnsafe(6 * pairs.length);
  pairs.forEach(([id, value], i) => {
    out.writeUInt16BE(id, 6 * i);
    out.writeUInt32BE(value, 6 * i + 2);
  });
  return out;
}
