// HPACK encoding of our responses (RFC 7541). The fixed blocks (`:status 200` + content-type +
// grpc-accept-encoding, and the `grpc-status: 0` trailers) are encoded once at load time;
// dynamic values (error statuses and messages) are literals without indexing. Per connection,
// `ResponseBlockEncoder` puts the three fixed fields into the peer's dynamic table the first time
// they are sent and refers to them by index afterwards (1-byte fields instead of ~70 bytes of
// literals the client must decode, copy and validate on every response).

/** Appends an HPACK integer with an N-bit prefix (the first byte's high bits in `head`). */
function pushInt(out: number[], head: number, prefixBits: number, value: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(head | value);
    return;
  }
  out.push(head | max);
  value -= max;
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

function pushString(out: number[], s: string): void {
  pushInt(out, 0, 7, s.length);
  for (let i = 0; i < s.length; i++) out.push(s.charCodeAt(i) & 0xff);
}

/** Literal field without indexing, name from the static table (`nameIndex`) or literal (0). */
function pushLiteral(out: number[], nameIndex: number, name: string, value: string): void {
  pushInt(out, 0x00, 4, nameIndex);
  if (nameIndex === 0) pushString(out, name);
  pushString(out, value);
}

const STATUS_200 = 0x88; // indexed :status 200 (static index 8)
const STATUS_NAME_INDEX = 8;
const CONTENT_TYPE_INDEX = 31;

function responseHead(out: number[], httpStatus: number, acceptEncoding: boolean): void {
  if (httpStatus === 200) out.push(STATUS_200);
  else pushLiteral(out, STATUS_NAME_INDEX, '', String(httpStatus));
  pushLiteral(out, CONTENT_TYPE_INDEX, '', 'application/grpc');
  if (acceptEncoding) pushLiteral(out, 0, 'grpc-accept-encoding', 'identity,gzip');
}

/** `:status 200`, `content-type: application/grpc`, `grpc-accept-encoding: identity,gzip`. */
export const OK_HEADERS_BLOCK: Buffer = (() => {
  const out: number[] = [];
  responseHead(out, 200, true);
  return Buffer.from(out);
})();

/** Trailers `grpc-status: 0`. */
export const OK_TRAILERS_BLOCK: Buffer = Buffer.from((() => {
  const out: number[] = [];
  pushLiteral(out, 0, 'grpc-status', '0');
  return out;
})());

/** Trailers with a non-OK status; `message` must already be percent-encoded (ASCII). */
export function statusTrailersBlock(code: number, message: string): Buffer {
  const out: number[] = [];
  pushLiteral(out, 0, 'grpc-status', String(code));
  pushLiteral(out, 0, 'grpc-message', message);
  return Buffer.from(out);
}

/**
 * A trailers-only response: headers and status in one block. grpc-accept-encoding is sent with
 * HTTP 200 (as on every response) and when `acceptEncoding` asks for it.
 */
export function trailersOnlyBlock(httpStatus: number, code: number, message: string, acceptEncoding: boolean): Buffer {
  const out: number[] = [];
  responseHead(out, httpStatus, acceptEncoding || httpStatus === 200);
  pushLiteral(out, 0, 'grpc-status', String(code));
  pushLiteral(out, 0, 'grpc-message', message);
  return Buffer.from(out);
}

/** HPACK integer encoding, exported for the codec tests. */
export function encodeInteger(head: number, prefixBits: number, value: number): Buffer {
  const out: number[] = [];
  pushInt(out, head, prefixBits, value);
  return Buffer.from(out);
}

/** Literal with incremental indexing (RFC 7541 §6.2.1): the field enters the dynamic table. */
function pushIndexing(out: number[], nameIndex: number, name: string, value: string): void {
  pushInt(out, 0x40, 6, nameIndex);
  if (nameIndex === 0) pushString(out, name);
  pushString(out, value);
}

const STATIC_LAST = 61;
/**
 * The dynamic table size both sides start with (SETTINGS_HEADER_TABLE_SIZE's default). The three
 * fixed entries take 169 octets of it (name + value + 32 each, RFC 7541 §4.1): never evicted.
 */
const DEFAULT_TABLE_SIZE = 4096;

// The OK header block the first time: content-type and grpc-accept-encoding enter the table
// (then grpc-accept-encoding is index 62, content-type 63).
const HEADERS_INSERTING = Buffer.from((() => {
  const out: number[] = [STATUS_200];
  pushIndexing(out, CONTENT_TYPE_INDEX, '', 'application/grpc');
  pushIndexing(out, 0, 'grpc-accept-encoding', 'identity,gzip');
  return out;
})());
const HEADERS_INDEXED_2 = Buffer.from([STATUS_200, 0x80 | (STATIC_LAST + 2), 0x80 | (STATIC_LAST + 1)]);
// The OK trailers the first time after that: grpc-status 0 enters as 62 (the others move to 63, 64).
const TRAILERS_INSERTING = Buffer.from((() => {
  const out: number[] = [];
  pushIndexing(out, 0, 'grpc-status', '0');
  return out;
})());
const HEADERS_INDEXED_3 = Buffer.from([STATUS_200, 0x80 | (STATIC_LAST + 3), 0x80 | (STATIC_LAST + 2)]);
const TRAILERS_INDEXED_3 = Buffer.from([0x80 | (STATIC_LAST + 1)]);

const TABLE_EMPTY = 0;
const TABLE_HEADERS = 1;
const TABLE_ALL = 2;
const TABLE_OFF = 3;

/**
 * The per-connection encoder side of the HPACK dynamic table for our response blocks. `block()`
 * must be called when a block is written to the connection, in the order blocks go out (the
 * peer's table follows that order). Other blocks pass through: they never touch the table.
 */
export class ResponseBlockEncoder {
  private state = TABLE_EMPTY;
  private sizeUpdatePending = false;

  /**
   * The peer's SETTINGS_HEADER_TABLE_SIZE. Below the default our table must shrink: the next
   * block starts with a size update to 0 and indexing stops for the connection's life.
   */
  peerTableSize(size: number): void {
    if (size >= DEFAULT_TABLE_SIZE || this.state === TABLE_OFF) return;
    this.sizeUpdatePending = true;
    this.state = TABLE_OFF;
  }

  /** Whether the next block must start with a dynamic table size update to 0 (and clears it). */
  takeSizeUpdate(): boolean {
    const pending = this.sizeUpdatePending;
    this.sizeUpdatePending = false;
    return pending;
  }

  /** The bytes to send for `block` now. */
  block(block: Buffer): Buffer {
    if (block === OK_HEADERS_BLOCK) {
      switch (this.state) {
        case TABLE_EMPTY:
          this.state = TABLE_HEADERS;
          return HEADERS_INSERTING;
        case TABLE_HEADERS:
          return HEADERS_INDEXED_2;
        case TABLE_ALL:
          return HEADERS_INDEXED_3;
        default:
          return block;
      }
    }
    if (block === OK_TRAILERS_BLOCK) {
      switch (this.state) {
        case TABLE_HEADERS:
          this.state = TABLE_ALL;
          return TRAILERS_INSERTING;
        case TABLE_ALL:
          return TRAILERS_INDEXED_3;
        default:
          return block;
      }
    }
    return block;
  }
}
