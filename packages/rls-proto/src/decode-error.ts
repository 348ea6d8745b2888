// The one error type every hand-coded decoder throws for bad input, so a transport can tell a
// malformed message (a client problem, answered with a status) from a bug (a crash to fix).

export type DecodeErrorCode =
  /** The input ended inside a field, a length or a varint. */
  | 'truncated'
  /** The bytes are not a valid protobuf encoding (bad varint, wire type, field number, group). */
  | 'malformed'
  /** A `string` field holds bytes that are not UTF-8 (proto3 requires valid UTF-8). */
  | 'invalid_utf8'
  /** Messages or groups nested deeper than the decoder allows. */
  | 'too_deep';

export class ProtoDecodeError extends Error {
  readonly code: DecodeErrorCode;
  /** Byte offset in the input where the problem was found. */
  readonly offset: number;
  constructor(code: DecodeErrorCode, message: string, offset: number) {
    super(`${message} at byte ${offset}`);
    this.code = code;
    this.offset = offset;
    this.name = 'ProtoDecodeError';
  }
}

export function isProtoDecodeError(err: unknown): err is ProtoDecodeError {
  return err instanceof ProtoDecodeError;
}
