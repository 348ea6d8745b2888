// The "top over-limit descriptors right now" list: a space-saving sketch (Metwally et al.) per
// half-minute slot, the current and the previous one, so the list covers the last 30–60 seconds
// and memory is 2 × capacity entries whatever the traffic. Items are the caller's labels (already
// truncated), so each entry's size is bounded too.

/** One counted item; `count` may overestimate by at most `error` (space-saving's guarantee). */
export interface TopEntry<T> {
  readonly item: T;
  count: number;
  error: number;
}

/** Space-saving counters: at most `capacity` items; a new item evicts the smallest and inherits its count as error. */
export class SpaceSaving<T> {
  private readonly entries = new Map<string, TopEntry<T>>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
  }

  get size(): number {
    return this.entries.size;
  }

  /** Adds `weight` to an item already held; false (nothing done) when it is not held. */
  addIfHeld(id: string, weight: number): boolean {
    const e = this.entries.get(id);
    if (e === undefined) return false;
    e.count += weight;
    return true;
  }

  add(id: string, item: T, weight: number): void {
    const e = this.entries.get(id);
    if (e !== undefined) {
      e.count += weight;
      return;
    }
    if (this.entries.size < this.capacity) {
      this.entries.set(id, { item, count: weight, error: 0 });
      return;
    }
    // O(capacity), but only for a sampled over-limit descriptor the sketch has not seen.
    let minId = '';
    let min: TopEntry<T> | undefined;
    for (const [k, v] of this.entries) {
      if (min === undefined || v.count < min.count) {
        min = v;
        minId = k;
      }
    }
    this.entries.delete(minId);
    this.entries.set(id, { item, count: min!.count + weight, error: min!.count });
  }

  entriesById(): ReadonlyMap<string, TopEntry<T>> {
    return this.entries;
  }

  clear(): void {
    this.entries.clear();
  }
}

export interface TopListEntry<T> {
  readonly item: T;
  readonly count: number;
  /** Upper bound of the overestimate. */
  readonly error: number;
}

/** Two space-saving slots of `slotMs` each; `top` merges them. */
export class WindowedTopK<T> {
  private current: SpaceSaving<T>;
  private previous: SpaceSaving<T>;
  private slot = -1;

  constructor(
    readonly capacity: number,
    readonly slotMs = 30_000,
  ) {
    this.current = new SpaceSaving<T>(capacity);
    this.previous = new SpaceSaving<T>(capacity);
  }

  /** Adds `weight` to `id`; `item` builds its label, called only when the slot does not hold it yet. */
  add(id: string, item: () => T, weight: number, nowMs: number): void {
    this.rotate(nowMs);
    if (!this.current.addIfHeld(id, weight)) this.current.add(id, item(), weight);
  }

  /** The `n` largest of the last one to two slots, largest first (ties by id, so the order is stable). */
  top(n: number, nowMs: number): TopListEntry<T>[] {
    this.rotate(nowMs);
    const merged = new Map<string, { item: T; count: number; error: number }>();
    for (const sketch of [this.previous, this.current]) {
      for (const [id, e] of sketch.entriesById()) {
        const m = merged.get(id);
        if (m === undefined) merged.set(id, { item: e.item, count: e.count, error: e.error });
        else {
          m.count += e.count;
          m.error += e.error;
        }
      }
    }
    return [...merged.entries()]
      .sort(([ia, a], [ib, b]) => b.count - a.count || (ia < ib ? -1 : ia > ib ? 1 : 0))
      .slice(0, n)
      .map(([, e]) => e);
  }

  /** Items held (at most 2 × capacity). */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  private rotate(nowMs: number): void {
    const slot = Math.floor(nowMs / this.slotMs);
    if (slot === this.slot) return;
    if (slot === this.slot + 1) {
      const old = this.previous;
      this.previous = this.current;
      old.clear();
      this.current = old;
    } else {
      // First use, a gap of more than one slot, or a clock that went back: start over.
      this.previous.clear();
      this.current.clear();
    }
    this.slot = slot;
  }
}
