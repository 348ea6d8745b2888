/**
 * A least-recently-used map bounded by the bytes its values hold (each value's size given by
 * `sizeOf`). A value larger than the whole bound is not kept.
 */
export class ByteLru<V> {
  private readonly map = new Map<string, V>();
  private held = 0;
  hits = 0;
  misses = 0;
  constructor(
    readonly maxBytes: number,
    private readonly sizeOf: (v: V) => number,
  ) {}

  get bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.map.size;
  }

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }

  /** The value under `key` without counting a hit or refreshing its place. */
  peek(key: string): V | undefined {
    return this.map.get(key);
  }

  delete(key: string): void {
    const old = this.map.get(key);
    if (old === undefined) return;
    this.map.delete(key);
    this.held -= this.sizeOf(old);
  }

  set(key: string, value: V): void {
    this.delete(key);
    const size = this.sizeOf(value);
    if (size > this.maxBytes) return;
    this.map.set(key, value);
    this.held += size;
    for (const [k, v] of this.map) {
      if (this.held <= this.maxBytes) break;
      this.map.delete(k);
      this.held -= this.sizeOf(v);
    }
  }
}
