// Bounds-checked protobuf wire reader over one Buffer. Nested messages are read by narrowing
// `end` (no sub-buffers are allocated); every read past `end` is a ProtoDecodeError.
import { Buffer, isAscii, isUtf8 } from 'node:buffer';
import { ProtoDecodeError } from './decode-error.js';

/** Strings longer than this (bytes) are checked for ASCII natively rather than by a loop. */
const LONG_STRING = 64;

/** Deepest nesting of groups / recursive messages (Struct) a decoder follows. */
export const MAX_DEPTH = 100;

const TWO_32 = 4294967296;

export const WireType = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 } as const;

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export class ProtoReader {
  readonly buf: Buffer;
  pos: number;
  end: number;
  /** High 32 bits of the last varint read by `varint64Lo`. */
  private hi = 0;

  constructor(bytes: Uint8Array, pos = 0, end = bytes.length) {
    this.buf = asBuffer(bytes);
    this.pos = pos;
    this.end = end;
  }

  private truncated(): ProtoDecodeError {
    return new ProtoDecodeError('truncated', 'unexpected end of input', this.pos);
  }

  /** Reads a varint and returns its low 32 bits as an unsigned number (proto uint32 semantics). */
  uint32(): number {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    if (pos >= end) throw this.truncated();
    let b = buf[pos++]!;
    if (b < 0x80) {
      this.pos = pos;
      return b;
    }
    let v = b & 0x7f;
    for (let shift = 7; shift < 35; shift += 7) {
      if (pos >= end) {
        this.pos = pos;
        throw this.truncated();
      }
      b = buf[pos++]!;
      v |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = pos;
        return v >>> 0;
      }
    }
    // Bytes 6..10 only carry bits above 32, which uint32/int32/enum fields drop.
    for (let i = 0; i < 5; i++) {
      if (pos >= end) {
        this.pos = pos;
        throw this.truncated();
      }
      b = buf[pos++]!;
      if (b < 0x80) {
        this.pos = pos;
        return v >>> 0;
      }
    }
    throw new ProtoDecodeError('malformed', 'varint longer than 10 bytes', pos);
  }

  /** int32 and enum fields: low 32 bits as a signed number. */
  int32(): number {
    return this.uint32() | 0;
  }

  bool(): boolean {
    const lo = this.varint64Lo();
    return lo !== 0 || this.hi !== 0;
  }

  /** Reads a full 64-bit varint; returns the low 32 bits and leaves the high 32 bits in `hi`. */
  private varint64Lo(): number {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    let b = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (pos >= end) {
        this.pos = pos;
        throw this.truncated();
      }
      b = buf[pos++]!;
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = pos;
        this.hi = 0;
        return lo >>> 0;
      }
    }
    if (pos >= end) {
      this.pos = pos;
      throw this.truncated();
    }
    b = buf[pos++]!;
    lo |= (b & 0x7f) << 28;
    hi = (b & 0x7f) >>> 4;
    if (b < 0x80) {
      this.pos = pos;
      this.hi = hi;
      return lo >>> 0;
    }
    for (let shift = 3; shift < 38; shift += 7) {
      if (pos >= end) {
        this.pos = pos;
        throw this.truncated();
      }
      b = buf[pos++]!;
      hi |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = pos;
        this.hi = hi >>> 0;
        return lo >>> 0;
      }
    }
    throw new ProtoDecodeError('malformed', 'varint longer than 10 bytes', pos);
  }

  /**
   * uint64 as a JS number. Values above Number.MAX_SAFE_INTEGER (2^53-1) are clamped to it:
   * such counts are beyond any limit anyway and clamping keeps "huge" huge instead of wrapping.
   */
  uint64(): number {
    const lo = this.varint64Lo();
    const hi = this.hi;
    if (hi === 0) return lo;
    if (hi >= 0x200000) return Number.MAX_SAFE_INTEGER;
    return hi * TWO_32 + lo;
  }

  /** int64 as a JS number, clamped to ±MAX_SAFE_INTEGER. */
  int64(): number {
    const lo = this.varint64Lo();
    const hi = this.hi;
    if ((hi & 0x80000000) === 0) {
      if (hi >= 0x200000) return Number.MAX_SAFE_INTEGER;
      return hi * TWO_32 + lo;
    }
    // Two's complement: magnitude = ~value + 1.
    const nlo = (~lo >>> 0) + 1;
    const nhi = (~hi >>> 0) + (nlo > 0xffffffff ? 1 : 0);
    if (nhi >= 0x200000) return -Number.MAX_SAFE_INTEGER;
    return -(nhi * TWO_32 + (nlo >>> 0));
  }

  double(): number {
    if (this.pos + 8 > this.end) throw this.truncated();
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Reads a length prefix and returns the end offset of the delimited bytes. */
  lengthEnd(): number {
    const start = this.pos;
    const len = this.uint32();
    // A length prefix is an int32 in every implementation; larger ones cannot be honest.
    if (len > 0x7fffffff) throw new ProtoDecodeError('malformed', 'negative length prefix', start);
    const end = this.pos + len;
    if (end > this.end) throw this.truncated();
    return end;
  }

  /** A proto3 `string`: must be valid UTF-8. */
  string(): string {
    const end = this.lengthEnd();
    const buf = this.buf;
    const start = this.pos;
    this.pos = end;
    // Short strings (the usual keys and values): a plain loop beats a native call and a view.
    // Long ones: node's vectorised check, several times faster per byte.
    if (end - start > LONG_STRING) {
      if (isAscii(buf.subarray(start, end))) return buf.toString('latin1', start, end);
    } else {
      let i = start;
      while (i < end && buf[i]! < 0x80) i++;
      if (i === end) return buf.toString('latin1', start, end);
    }
    if (!isUtf8(buf.subarray(start, end))) {
      throw new ProtoDecodeError('invalid_utf8', 'string field contains invalid UTF-8', start);
    }
    return buf.toString('utf8', start, end);
  }

  /** A `bytes` field, copied so the result does not pin the request buffer. */
  bytes(): Uint8Array {
    const end = this.lengthEnd();
    const out = new Uint8Array(end - this.pos);
    out.set(this.buf.subarray(this.pos, end));
    this.pos = end;
    return out;
  }

  /** Reads a tag; rejects field number 0 and the wire types no encoder produces. */
  tag(): number {
    const start = this.pos;
    const tag = this.uint32();
    const wt = tag & 7;
    if (tag >>> 3 === 0) throw new ProtoDecodeError('malformed', 'field number 0', start);
    if (wt > 5) throw new ProtoDecodeError('malformed', `invalid wire type ${wt}`, start);
    return tag;
  }

  /** Skips the value of a field this decoder does not know (or knows with another wire type). */
  skip(tag: number, depth = 0): void {
    switch (tag & 7) {
      case WireType.VARINT:
        this.varint64Lo();
        return;
      case WireType.I64:
        if (this.pos + 8 > this.end) throw this.truncated();
        this.pos += 8;
        return;
      case WireType.LEN:
        this.pos = this.lengthEnd();
        return;
      case WireType.I32:
        if (this.pos + 4 > this.end) throw this.truncated();
        this.pos += 4;
        return;
      case WireType.SGROUP: {
        if (depth >= MAX_DEPTH) throw new ProtoDecodeError('too_deep', 'groups nested too deeply', this.pos);
        const field = tag >>> 3;
        for (;;) {
          if (this.pos >= this.end) throw this.truncated();
          const inner = this.tag();
          if ((inner & 7) === WireType.EGROUP) {
            if (inner >>> 3 !== field) throw new ProtoDecodeError('malformed', 'mismatched end group', this.pos);
            return;
          }
          this.skip(inner, depth + 1);
        }
      }
      default:
        throw new ProtoDecodeError('malformed', 'unexpected end group', this.pos);
    }
  }
}
