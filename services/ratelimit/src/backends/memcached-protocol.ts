// The subset of memcached's text protocol the counter store speaks: `get` (multi-key), `incr`,
// `add` and `version`. Commands are encoded as strings; each command's reply is parsed from the
// connection's receive buffer by a ReplyParser that settles its caller once the reply is whole.
// Keys are validated before anything is sent: a key with a space, a control character or more
// than 250 bytes would be split into several keys or rejected for the whole line by memcached,
// which would shift every later reply on the connection.
import { SATURATED_COUNT, StoreError, saturate } from '@rls/engine';

export const MAX_KEY_BYTES = 250;
/** memcached reads an expiration above this many seconds as an absolute Unix time. */
export const RELATIVE_EXPIRY_LIMIT_SECONDS = 2_592_000;

/** Why a key cannot be sent, or undefined when it can. */
export function invalidKeyReason(key: string): string | undefined {
  if (key.length === 0) return 'empty key';
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return 'key contains whitespace or a control character';
  }
  if (key.length > MAX_KEY_BYTES || Buffer.byteLength(key) > MAX_KEY_BYTES) return `key longer than ${MAX_KEY_BYTES} bytes`;
  return undefined;
}

/**
 * The expiration field for a TTL: relative seconds up to 30 days, an absolute Unix time beyond
 * (memcached's rule), so month and year windows persist. Never 0 (which means "never expires").
 */
export function expirationField(ttlSeconds: number, nowMs: number): number {
  const ttl = Math.max(1, Math.floor(ttlSeconds));
  return ttl > RELATIVE_EXPIRY_LIMIT_SECONDS ? Math.floor(nowMs / 1000) + ttl : ttl;
}

/** Parses one command's reply from `buf` at `offset`; returns the offset after it or -1 when incomplete. */
export interface ReplyParser {
  /** Absolute time (ms) by which the reply must arrive; set by the connection. */
  deadline: number;
  parse(buf: Buffer, offset: number): number;
  /** The connection failed before the reply arrived. */
  fail(err: StoreError): void;
}

const CRLF = 0x0a;

/**
 * Longest reply line accepted: `VALUE <key> <flags> <bytes> [<cas>]` with a 250-byte key is under
 * 300 bytes, error lines are short. Without the bound a peer that never sends a newline would
 * make the connection buffer without end while every retry rescans the buffer.
 */
export const MAX_LINE_BYTES = 2048;
/** Largest value block accepted: memcached's default item size limit (-I 1m); counters are a few digits. */
export const MAX_VALUE_BYTES = 1024 * 1024;

function protocolError(what: string, line: string): StoreError {
  return new StoreError(`memcached protocol error: ${what} ${JSON.stringify(line.slice(0, 80))}`);
}

/** The line at `offset` without its CRLF, and the offset after it; undefined when incomplete. */
function readLine(buf: Buffer, offset: number): { line: string; end: number } | undefined {
  // Searching only the allowed window also keeps the outcome the same however the bytes were split.
  const nl = buf.subarray(0, offset + MAX_LINE_BYTES + 1).indexOf(CRLF, offset);
  if (nl < 0) {
    if (buf.length - offset > MAX_LINE_BYTES) throw protocolError(`line longer than ${MAX_LINE_BYTES} bytes:`, buf.toString('latin1', offset, offset + 80));
    return undefined;
  }
  const stop = nl > offset && buf[nl - 1] === 0x0d ? nl - 1 : nl;
  return { line: buf.toString('utf8', offset, stop), end: nl + 1 };
}

/** memcached's error replies: a whole reply on their own, for any command. */
function errorReply(line: string): StoreError | undefined {
  if (line === 'ERROR' || line.startsWith('CLIENT_ERROR') || line.startsWith('SERVER_ERROR')) return new StoreError(`memcached: ${line}`);
  return undefined;
}

const COUNTER_TEXT = /^\d{1,20} *$/;

/**
 * Parses a stored counter: a decimal integer, possibly followed by the spaces memcached pads with
 * when a number shrinks in place. Anything at or past 2^53, or not a number at all, reads as
 * SATURATED_COUNT (over every limit) rather than 0 (upstream's rule), so an overflowed or
 * corrupted counter never lets traffic through.
 */
export function parseCounter(text: string): number {
  if (!COUNTER_TEXT.test(text)) return SATURATED_COUNT;
  return saturate(Number(text)); // Number() ignores the trailing spaces
}

/** Encodes `get k1 k2 ...`; keys must have been validated. */
export function encodeGet(keys: readonly string[]): string {
  return `get ${keys.join(' ')}\r\n`;
}

/** `get` reply: `VALUE <key> <flags> <bytes>` + data lines, then `END`. */
export class GetReply implements ReplyParser {
  deadline = 0;
  constructor(private readonly done: (err: StoreError | undefined, values: Map<string, number>) => void) {}

  parse(buf: Buffer, offset: number): number {
    const values = new Map<string, number>();
    let pos = offset;
    for (;;) {
      const l = readLine(buf, pos);
      if (l === undefined) return -1;
      if (l.line === 'END') {
        this.done(undefined, values);
        return l.end;
      }
      const err = errorReply(l.line);
      if (err !== undefined) {
        this.done(err, values);
        return l.end;
      }
      if (!l.line.startsWith('VALUE ')) throw new StoreError(`memcached protocol error: unexpected ${JSON.stringify(l.line.slice(0, 80))} in a get reply`);
      const parts = l.line.split(' ');
      const field = parts[3] ?? '';
      // Digits only: Number() would also take '', '0x10' or '1e3'.
      if (parts.length < 4 || !/^\d{1,10}$/.test(field)) throw protocolError('bad VALUE line', l.line);
      const bytes = Number(field);
      if (bytes > MAX_VALUE_BYTES) throw protocolError(`value over ${MAX_VALUE_BYTES} bytes in`, l.line);
      if (buf.length < l.end + bytes + 2) return -1;
      // A data block not ending in CRLF means the stream is out of step with the requests.
      if (buf[l.end + bytes] !== 0x0d || buf[l.end + bytes + 1] !== 0x0a) throw protocolError('value block without CRLF after', l.line);
      values.set(parts[1] ?? '', parseCounter(buf.toString('latin1', l.end, l.end + bytes)));
      pos = l.end + bytes + 2;
    }
  }

  fail(err: StoreError): void {
    this.done(err, new Map());
  }
}

/** Outcome of a one-line command: the line (`STORED`, `NOT_FOUND`, a number...) or an error. */
export class LineReply implements ReplyParser {
  deadline = 0;
  constructor(private readonly done: (err: StoreError | undefined, line: string) => void) {}

  parse(buf: Buffer, offset: number): number {
    const l = readLine(buf, offset);
    if (l === undefined) return -1;
    this.done(errorReply(l.line), l.line);
    return l.end;
  }

  fail(err: StoreError): void {
    this.done(err, '');
  }
}

export const encodeIncr = (key: string, delta: number): string => `incr ${key} ${delta}\r\n`;

/** `delete <key>` (an operator's reset); answered DELETED or NOT_FOUND. */
export const encodeDelete = (key: string): string => `delete ${key}\r\n`;

export function encodeAdd(key: string, value: number, exptime: number): string {
  const data = String(value);
  return `add ${key} 0 ${exptime} ${data.length}\r\n${data}\r\n`;
}

export const VERSION_COMMAND = 'version\r\n';
