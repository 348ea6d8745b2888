import { createHash } from 'node:crypto';
import type { SeriesPoint } from './resample.js';

/** Numbers per point: time, open, high, low, close, volume (NaN = none), closeTime. */
const STRIDE = 7;

/**
 * A candle series as one Float64Array (56 bytes a point) instead of an object per point (several
 * times that, plus garbage-collector work): what the history cache holds and what responses are
 * written from, chunk by chunk.
 */
export class SeriesBlock {
  private constructor(
    private readonly data: Float64Array,
    readonly length: number,
    /** A digest of the numbers, for ETags: equal blocks have equal digests on every replica. */
    readonly digest: string,
  ) {}

  static readonly EMPTY = new SeriesBlock(new Float64Array(0), 0, 'empty');

  /** Bytes held (what the cache counts). */
  get bytes(): number {
    return this.data.byteLength + 64;
  }

  time(i: number): number {
    return this.data[i * STRIDE]!;
  }

  /** Index of the first point at or after `t` (length when none). */
  indexAt(t: number): number {
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.time(mid) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Points [i0, i1) as numbers (a view, not a copy), for a builder extending this block. */
  raw(i0: number, i1: number): Float64Array {
    return this.data.subarray(i0 * STRIDE, i1 * STRIDE);
  }

  point(i: number): SeriesPoint {
    const d = this.data;
    const o = i * STRIDE;
    const v = d[o + 5]!;
    return { time: d[o]!, open: d[o + 1]!, high: d[o + 2]!, low: d[o + 3]!, close: d[o + 4]!, volume: Number.isNaN(v) ? null : v, closeTime: d[o + 6]! };
  }

  static builder(capacity: number): SeriesBlockBuilder {
    return new SeriesBlockBuilder(capacity);
  }

  /** @internal for the builder */
  static of(data: Float64Array, length: number): SeriesBlock {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, length * STRIDE * 8);
    const digest = length === 0 ? 'empty' : createHash('sha1').update(bytes).digest('base64url');
    return new SeriesBlock(data, length, digest);
  }
}

/** Appends points in ascending time; grows by doubling when the estimate was short. */
export class SeriesBlockBuilder {
  private data: Float64Array;
  length = 0;
  constructor(capacity: number) {
    this.data = new Float64Array(Math.max(1, capacity) * STRIDE);
  }

  private reserve(points: number): void {
    if ((this.length + points) * STRIDE > this.data.length) {
      const next = new Float64Array(Math.max(this.data.length * 2, (this.length + points) * STRIDE));
      next.set(this.data);
      this.data = next;
    }
  }

  /** Appends points copied from another block (see SeriesBlock.raw). */
  pushRaw(points: Float64Array): void {
    const n = points.length / STRIDE;
    this.reserve(n);
    this.data.set(points, this.length * STRIDE);
    this.length += n;
  }

  push(time: number, open: number, high: number, low: number, close: number, volume: number | null, closeTime: number): void {
    this.reserve(1);
    const d = this.data;
    const o = this.length * STRIDE;
    d[o] = time;
    d[o + 1] = open;
    d[o + 2] = high;
    d[o + 3] = low;
    d[o + 4] = close;
    d[o + 5] = volume ?? NaN;
    d[o + 6] = closeTime;
    this.length++;
  }

  /** The last point pushed, for merging a continuation of its bucket. */
  last(): SeriesPoint | undefined {
    if (this.length === 0) return undefined;
    const d = this.data;
    const o = (this.length - 1) * STRIDE;
    const v = d[o + 5]!;
    return { time: d[o]!, open: d[o + 1]!, high: d[o + 2]!, low: d[o + 3]!, close: d[o + 4]!, volume: Number.isNaN(v) ? null : v, closeTime: d[o + 6]! };
  }

  /** Replaces the last point (same bucket, more base candles). */
  replaceLast(p: SeriesPoint): void {
    this.length--;
    this.push(p.time, p.open, p.high, p.low, p.close, p.volume, p.closeTime);
  }

  /** The block, trimmed to its length so the cache counts only what is used. */
  build(): SeriesBlock {
    const used = this.length * STRIDE;
    const data = used === this.data.length ? this.data : this.data.slice(0, used);
    return SeriesBlock.of(data, this.length);
  }
}

/**
 * A served series: a (possibly cached, never mutated) closed block, of which the first
 * `closedCount` points are used, then at most one tail point (the in-progress candle merged into
 * its bucket).
 */
export class SeriesView {
  readonly length: number;
  constructor(
    readonly closed: SeriesBlock,
    readonly closedCount: number,
    readonly tail: SeriesPoint | undefined,
  ) {
    this.length = closedCount + (tail === undefined ? 0 : 1);
  }

  point(i: number): SeriesPoint {
    return i < this.closedCount ? this.closed.point(i) : (this.tail as SeriesPoint);
  }

  /** Identifies the numbers (for ETags). */
  get digest(): string {
    const t = this.tail;
    const tail = t === undefined ? '' : `${t.time},${t.open},${t.high},${t.low},${t.close},${t.volume},${t.closeTime}`;
    return `${this.closed.digest}:${this.closedCount}:${tail}`;
  }

  toArray(): SeriesPoint[] {
    const out: SeriesPoint[] = new Array<SeriesPoint>(this.length);
    for (let i = 0; i < this.length; i++) out[i] = this.point(i);
    return out;
  }
}
