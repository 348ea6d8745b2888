// gRPC-over-HTTP/2 header conventions: content type, timeout and status message encoding.

/** `application/grpc`, optionally followed by `+proto` (or another subtype) or parameters. */
export function isGrpcContentType(ct: string | undefined): boolean {
  if (ct === undefined || !ct.startsWith('application/grpc')) return false;
  if (ct.length === 16) return true;
  const next = ct.charCodeAt(16);
  return next === 0x2b /* + */ || next === 0x3b /* ; */;
}

const timeoutPattern = /^(\d{1,8})([HMSmun])$/;
const unitMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * Parses a `grpc-timeout` header into milliseconds. Returns undefined when the header is absent
 * and NaN when it is malformed (the caller answers INTERNAL, as grpc-go does).
 */
export function parseGrpcTimeout(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string') return Number.NaN;
  const m = timeoutPattern.exec(header);
  if (m === null) return Number.NaN;
  return Number(m[1]) * unitMs[m[2]!]!;
}

/** Percent-encodes a status message: bytes outside printable ASCII and '%' become %XX of UTF-8. */
export function encodeGrpcMessage(message: string): string {
  let plain = true;
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return message;
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    if (byte < 0x20 || byte > 0x7e || byte === 0x25) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    else out += String.fromCharCode(byte);
  }
  return out;
}
