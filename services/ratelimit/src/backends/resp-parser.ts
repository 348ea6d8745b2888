// A streaming RESP2 reply parser that knows only the reply types the counter stores receive:
// integers (INCRBY, EXPIRE), simple strings (OK, PONG), errors, bulk strings and nil (GET) and
// arrays of those (MGET). Replies may arrive split across TCP chunks at any byte; the unparsed
// tail is kept and joined with the next chunk. Integers are read straight from the bytes because
// they are almost every reply on the hot path.

import { StoreError } from '@rls/engine';

/**
 * Bytes that are not RESP2, or a reply beyond the bounds below. The connection cannot continue
 * (the stream is out of step), so it is dropped; the parser never throws anything else.
 */
export class RespProtocolError extends StoreError {
  constructor(message: string) {
    super(message);
    this.name = 'RespProtocolError';
  }
}

/**
 * The most bytes one reply may occupy while it is incomplete (the parser buffers it). The counter
 * stores read integers, counters and short arrays of them (MGET, CLUSTER SLOTS), a few KiB at
 * most; a length prefix claiming more is refused at once instead of buffering towards it.
 */
export const MAX_REPLY_BYTES = 16 * 1024 * 1024;
/** Deepest array nesting accepted (CLUSTER SLOTS, the deepest reply read, has 3 or 4 levels). */
export const MAX_REPLY_DEPTH = 16;
/** Most digits of an integer or length (a 64-bit integer has at most 19). */
const MAX_DIGITS = 19;

/** An error reply from the server (`-WRONGTYPE ...`, `-NOAUTH ...`), kept as a value so one bad reply does not desynchronise the stream. */
export class RespErrorReply {
  constructor(readonly message: string) {}
}

export type RespReply = number | string | null | RespErrorReply | RespReply[];

const CR = 13;
const LF = 10;
const INCOMPLETE = -1;

export class RespParser {
  private tail: Buffer | undefined;
  /** The value of the reply parsed last; a field so the parse loop allocates no result objects. */
  private value: RespReply = null;

  constructor(private readonly onReply: (reply: RespReply) => void) {}

  /** Parses every complete reply in `chunk` (plus any leftover bytes) and hands each to `onReply`. */
  feed(chunk: Buffer): void {
    let buf = chunk;
    if (this.tail !== undefined) {
      buf = Buffer.concat([this.tail, chunk]);
      this.tail = undefined;
    }
    let pos = 0;
    const len = buf.length;
    while (pos < len) {
      const end = this.parse(buf, pos, 0);
      if (end === INCOMPLETE) {
        if (len - pos > MAX_REPLY_BYTES) throw new RespProtocolError(`reply larger than ${MAX_REPLY_BYTES} bytes`);
        // A chunk's memory is not reused by node once delivered, so a view is safe to keep.
        this.tail = buf.subarray(pos);
        return;
      }
      // Also checked for a complete reply, so the outcome does not depend on how it was split.
      if (end - pos > MAX_REPLY_BYTES) throw new RespProtocolError(`reply larger than ${MAX_REPLY_BYTES} bytes`);
      pos = end;
      this.onReply(this.value);
    }
  }

  /** Drops buffered bytes (after the connection is replaced). */
  reset(): void {
    this.tail = undefined;
    this.value = null;
  }

  /**
   * Parses one reply at `pos`; stores it in `this.value` and returns the offset after it. Whether
   * it throws depends only on the bytes up to the fault, so a stream split anywhere fails alike.
   */
  private parse(buf: Buffer, pos: number, depth: number): number {
    const type = buf[pos];
    switch (type) {
      case 0x3a /* : */:
        return this.parseInteger(buf, pos + 1);
      case 0x2b /* + */:
      case 0x2d /* - */: {
        const eol = buf.indexOf(CR, pos + 1);
        if (eol < 0 || eol + 1 >= buf.length) return INCOMPLETE;
        if (buf[eol + 1] !== LF) throw new RespProtocolError('CR without LF in a status line');
        this.value = type === 0x2b ? buf.toString('latin1', pos + 1, eol) : new RespErrorReply(buf.toString('utf8', pos + 1, eol));
        return eol + 2;
      }
      case 0x24 /* $ */: {
        const after = this.parseInteger(buf, pos + 1);
        if (after === INCOMPLETE) return INCOMPLETE;
        const n = this.value as number;
        if (n < 0) {
          this.value = null;
          return after;
        }
        if (n > MAX_REPLY_BYTES) throw new RespProtocolError(`bulk string of ${n} bytes is over the ${MAX_REPLY_BYTES}-byte reply limit`);
        if (after + n + 2 > buf.length) return INCOMPLETE;
        if (buf[after + n] !== CR || buf[after + n + 1] !== LF) throw new RespProtocolError('bulk string not followed by CRLF');
        this.value = buf.toString('utf8', after, after + n);
        return after + n + 2;
      }
      case 0x2a /* * */: {
        let at = this.parseInteger(buf, pos + 1);
        if (at === INCOMPLETE) return INCOMPLETE;
        const n = this.value as number;
        if (n < 0) {
          this.value = null;
          return at;
        }
        // Each element takes at least 3 bytes (":0\r\n" is 4), so a count beyond that cannot fit.
        if (n > MAX_REPLY_BYTES / 3) throw new RespProtocolError(`array of ${n} elements is over the ${MAX_REPLY_BYTES}-byte reply limit`);
        if (n > 0 && depth >= MAX_REPLY_DEPTH) throw new RespProtocolError(`arrays nested deeper than ${MAX_REPLY_DEPTH}`);
        // Grown as elements arrive: the count is only a claim until the bytes are there.
        const items: RespReply[] = [];
        for (let i = 0; i < n; i++) {
          if (at >= buf.length) return INCOMPLETE;
          at = this.parse(buf, at, depth + 1);
          if (at === INCOMPLETE) return INCOMPLETE;
          items.push(this.value);
        }
        this.value = items;
        return at;
      }
      default:
        throw new RespProtocolError(`unexpected RESP type byte 0x${(type ?? 0).toString(16)}`);
    }
  }

  /** Reads `[-]digits\r\n` at `pos` into `this.value` as a number. */
  private parseInteger(buf: Buffer, pos: number): number {
    const len = buf.length;
    let i = pos;
    let negative = false;
    if (i < len && buf[i] === 0x2d) {
      negative = true;
      i++;
    }
    const first = i;
    let n = 0;
    while (i < len) {
      const c = buf[i] as number;
      if (c === CR) {
        if (i === first) throw new RespProtocolError('integer without digits');
        if (i + 1 >= len) return INCOMPLETE;
        if (buf[i + 1] !== LF) throw new RespProtocolError('CR without LF after an integer');
        this.value = negative ? -n : n;
        return i + 2;
      }
      if (c < 0x30 || c > 0x39) throw new RespProtocolError(`unexpected byte 0x${c.toString(16)} in an integer`);
      if (i - first >= MAX_DIGITS) throw new RespProtocolError(`integer longer than ${MAX_DIGITS} digits`);
      n = n * 10 + (c - 0x30);
      i++;
    }
    return INCOMPLETE;
  }
}
