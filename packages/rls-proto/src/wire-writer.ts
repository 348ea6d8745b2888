// Protobuf wire writer for the hand-coded encoders. Encoders size a message first, allocate one
// Buffer (optionally with headroom for a gRPC frame prefix) and write into it; nothing is
// concatenated or copied afterwards.
import { Buffer } from 'node:buffer';

const TWO_32 = 4294967296;

/** Bytes of a varint holding `v` as uint32 (also used for lengths and tags). */
export function varint32Size(v: number): number {
  v = v >>> 0;
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  return 5;
}

/** Bytes of an int32/enum varint: negative values are sign-extended to 10 bytes. */
export function int32Size(v: number): number {
  return v < 0 ? 10 : varint32Size(v);
}

/** Bytes of a varint holding a non-negative integer up to 2^53 (negative int64 ⇒ 10). */
export function varint64Size(v: number): number {
  if (v < 0) return 10;
  if (v <= 0xffffffff) return varint32Size(v);
  let n = 5;
  v = Math.floor(v / 0x800000000); // 2^35
  while (v > 0) {
    n++;
    v = Math.floor(v / 128);
  }
  return n;
}

/** UTF-8 byte length; the JS loop beats the native call for the short ASCII keys we see. */
export function utf8Length(s: string): number {
  const n = s.length;
  if (n > 64) return Buffer.byteLength(s, 'utf8');
  for (let i = 0; i < n; i++) {
    if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, 'utf8');
  }
  return n;
}

/** Size of a length-delimited field body of `len` bytes, including its 1-byte tag and prefix. */
export function lenFieldSize(len: number): number {
  return 1 + varint32Size(len) + len;
}

export class ProtoWriter {
  readonly buf: Buffer;
  pos: number;

  constructor(buf: Buffer, pos = 0) {
    this.buf = buf;
    this.pos = pos;
  }

  static alloc(size: number, headroom = 0): ProtoWriter {
    return new ProtoWriter(Buffer.allocUnsafe(size + headroom), headroom);
  }

  byte(b: number): void {
    this.buf[this.pos++] = b;
  }

  uint32(v: number): void {
    v = v >>> 0;
    const buf = this.buf;
    let pos = this.pos;
    while (v > 0x7f) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v = v >>> 7;
    }
    buf[pos++] = v;
    this.pos = pos;
  }

  int32(v: number): void {
    if (v >= 0) this.uint32(v);
    else this.int64(v);
  }

  /** Non-negative integers up to 2^53; negative numbers take the two's-complement 10-byte form. */
  uint64(v: number): void {
    if (v <= 0xffffffff && v >= 0) {
      this.uint32(v);
      return;
    }
    this.int64(v);
  }

  int64(v: number): void {
    let lo: number;
    let hi: number;
    if (v >= 0) {
      lo = v % TWO_32 >>> 0;
      hi = Math.floor(v / TWO_32) >>> 0;
    } else {
      const m = -v;
      lo = m % TWO_32 >>> 0;
      hi = Math.floor(m / TWO_32) >>> 0;
      // Negate the 64-bit pair: ~x + 1.
      lo = (~lo + 1) >>> 0;
      hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
    }
    const buf = this.buf;
    let pos = this.pos;
    while (hi !== 0 || lo > 0x7f) {
      buf[pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi = hi >>> 7;
    }
    buf[pos++] = lo;
    this.pos = pos;
  }

  double(v: number): void {
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** Writes the length prefix and the UTF-8 bytes; `byteLength` comes from the sizing pass. */
  string(s: string, byteLength: number): void {
    this.uint32(byteLength);
    const buf = this.buf;
    const start = this.pos;
    if (byteLength === s.length && byteLength <= 64) {
      for (let i = 0; i < byteLength; i++) buf[start + i] = s.charCodeAt(i);
    } else {
      buf.write(s, start, byteLength, 'utf8');
    }
    this.pos = start + byteLength;
  }

  bytes(b: Uint8Array): void {
    this.uint32(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
}
