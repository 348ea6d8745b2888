// Byte helpers for the per-request hot path. Buffer#copy and Buffer#equals cross into C++ with a
// fixed cost of a few hundred nanoseconds on this path, several times what a plain loop takes for
// the handful of bytes a header block, a frame header or a small message has; above SMALL bytes
// the native calls win and are used.
const SMALL = 64;

/** Copies src[start, end) to dst at `at`. */
export function copyBytes(src: Uint8Array, start: number, end: number, dst: Uint8Array, at: number): void {
  const n = end - start;
  if (n > SMALL) {
    dst.set(src.subarray(start, end), at);
    return;
  }
  for (let i = 0; i < n; i++) dst[at + i] = src[start + i]!;
}

/** Same length and bytes. */
export function equalBytes(a: Buffer, b: Buffer): boolean {
  const n = a.length;
  if (n !== b.length) return false;
  if (n > SMALL) return a.equals(b);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}
