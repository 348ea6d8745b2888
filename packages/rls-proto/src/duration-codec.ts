// google.protobuf.Duration {seconds=1 int64, nanos=2 int32} <-> a number of seconds (fractional
// when nanos are set), shared by the RLS and RLQS codecs.
import type { ProtoReader } from './wire-reader.js';
import { int32Size, varint64Size, type ProtoWriter } from './wire-writer.js';

/** Splits fractional seconds into Duration {seconds, nanos} (both carry the sign, as protobuf requires). */
export function durationParts(d: number): [number, number] {
  const seconds = Math.trunc(d);
  const nanos = Math.round((d - seconds) * 1e9);
  return [seconds, nanos];
}

/** Bytes of the Duration message body for `d` seconds (proto3 defaults omitted). */
export function durationSize(d: number): number {
  if (Number.isInteger(d)) return d !== 0 ? 1 + varint64Size(d) : 0;
  const [s, n] = durationParts(d);
  return (s !== 0 ? 1 + varint64Size(s) : 0) + (n !== 0 ? 1 + int32Size(n) : 0);
}

/** Writes the body of a Duration (the caller wrote tag and length, `durationSize(d)`). */
export function writeDurationBody(w: ProtoWriter, d: number): void {
  const [sec, nanos] = Number.isInteger(d) ? [d, 0] : durationParts(d);
  if (sec !== 0) {
    w.byte(0x08);
    w.int64(sec);
  }
  if (nanos !== 0) {
    w.byte(0x10);
    w.int32(nanos);
  }
}

/** Reads a Duration body ending at `end`, merged into `prev` (a repeated field merges, as protobuf says). */
export function readDuration(r: ProtoReader, end: number, prev: number | undefined): number {
  const outer = r.end;
  r.end = end;
  let [seconds, nanos] = prev === undefined ? [0, 0] : durationParts(prev);
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x08) seconds = r.int64();
    else if (tag === 0x10) nanos = r.int32();
    else r.skip(tag);
  }
  r.end = outer;
  return durationSeconds(seconds, nanos);
}

/** Below this many seconds, seconds × 1e9 + nanos is an exact integer (< 2^53). */
const EXACT_SECONDS = 9_000_000;

/**
 * Seconds and nanos as one number. Dividing the exact nanosecond count once gives the double
 * nearest the true value (29 s + 702000000 ns reads as 29.702, where adding 0.702 to 29 does not).
 */
export function durationSeconds(seconds: number, nanos: number): number {
  if (nanos === 0) return seconds;
  return Math.abs(seconds) < EXACT_SECONDS ? (seconds * 1e9 + nanos) / 1e9 : seconds + nanos / 1e9;
}
