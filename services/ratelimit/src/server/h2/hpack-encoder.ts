// HPACK encoding of our responses (RFC 7541). Only the static table is used: the fixed blocks
// (`:status 200` + content-type + grpc-accept-encoding, and the `grpc-status: 0` trailers) are
// encoded once at load time, dynamic values (error statuses and messages) as literals without
// indexing. Our dynamic table therefore stays empty, whatever size the peer allows.

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
