// A streaming RESP2 reply parser that knows only the reply types the counter stores receive:
// integers (INCRBY, EXPIRE), simple strings (OK, PONG), errors, bulk strings and nil (GET) and
// arrays of those (MGET). Replies may arrive split across TCP chunks at any byte; the unparsed
// tail is kept and joined with the next chunk. Integers are read straight from the bytes because
// they are almost every reply on the hot path.

/** An error reply from the server (`-WRONGTYPE ...`, `-NOAUTH ...`), kept as a value so one bad reply does not desynchronise the stream. */
export class RespErrorReply {
  constructor(readonly message: string) {}
}

export type RespReply = number | string | null | RespErrorReply | RespReply[];

const CR = 13;
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
      const end = this.parse(buf, pos);
      if (end === INCOMPLETE) {
        // A chunk's memory is not reused by node once delivered, so a view is safe to keep.
        this.tail = buf.subarray(pos);
        return;
      }
      pos = end;
      this.onReply(this.value);
    }
  }

  /** Drops buffered bytes (after the connection is replaced). */
  reset(): void {
    this.tail = undefined;
    this.value = null;
  }

  /** Parses one reply at `pos`; stores it in `this.value` and returns the offset after it. */
  private parse(buf: Buffer, pos: number): number {
    const type = buf[pos];
    switch (type) {
      case 0x3a /* : */:
        return this.parseInteger(buf, pos + 1);
      case 0x2b /* + */: {
        const eol = buf.indexOf(CR, pos + 1);
        if (eol < 0 || eol + 1 >= buf.length) return INCOMPLETE;
        this.value = buf.toString('latin1', pos + 1, eol);
        return eol + 2;
      }
      case 0x2d /* - */: {
        const eol = buf.indexOf(CR, pos + 1);
        if (eol < 0 || eol + 1 >= buf.length) return INCOMPLETE;
        this.value = new RespErrorReply(buf.toString('utf8', pos + 1, eol));
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
        if (after + n + 2 > buf.length) return INCOMPLETE;
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
        const items: RespReply[] = new Array<RespReply>(n);
        for (let i = 0; i < n; i++) {
          if (at >= buf.length) return INCOMPLETE;
          at = this.parse(buf, at);
          if (at === INCOMPLETE) return INCOMPLETE;
          items[i] = this.value;
        }
        this.value = items;
        return at;
      }
      default:
        throw new Error(`unexpected RESP type byte 0x${(type ?? 0).toString(16)}`);
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
    let n = 0;
    while (i < len) {
      const c = buf[i] as number;
      if (c === CR) {
        if (i + 1 >= len) return INCOMPLETE;
        this.value = negative ? -n : n;
        return i + 2;
      }
      n = n * 10 + (c - 0x30);
      i++;
    }
    return INCOMPLETE;
  }
}
