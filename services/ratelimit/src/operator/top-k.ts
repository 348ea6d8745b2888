// The "top over-limit descriptors right now" list: a space-saving sketch (Metwally et al.) per
// half-minute slot, the current and the previous one, so the list covers the last 30–60 seconds
// and memory is 2 × capacity entries whatever the traffic. Items are the caller's labels (already
// bounded), so each entry's size is bounded too.
//
// Each sketch keeps its entries in a binary min-heap on the count with each entry's heap position
// stored in the entry, beside a map from id to entry: an increment moves the entry down the heap
// and an eviction replaces the root, so an update costs O(log capacity) whatever the capacity.
// (The first version scanned every entry for the minimum on each new item: with 1,000 entries a
// flood of distinct decoys took seconds of CPU.)

/** One counted item; `count` may overestimate by at most `error` (space-saving's guarantee). */
export interface TopEntry<T> {
  readonly item: T;
  readonly count: number;
  readonly error: number;
}

interface HeapEntry<T> {
  id: string;
  item: T;
  count: number;
  error: number;
  /** Index in the heap array. */
  pos: number;
}

/** Space-saving counters: at most `capacity` items; a new item evicts the smallest and inherits its count as error. */
export class SpaceSaving<T> {
  private readonly byId = new Map<string, HeapEntry<T>>();
  private readonly heap: HeapEntry<T>[] = [];
  private evicted = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
  }

  get size(): number {
    return this.heap.length;
  }

  /** Items replaced by newcomers since the last clear. */
  get evictions(): number {
    return this.evicted;
  }

  /**
   * The most an item that is not held can have been counted: 0 until something was evicted, then
   * the smallest held count (space-saving: an item counted more than the minimum is always held,
   * and the minimum never decreases).
   */
  get floor(): number {
    return this.evicted === 0 || this.heap.length === 0 ? 0 : this.heap[0]!.count;
  }

  /** Adds `weight` to an item already held; false (nothing done) when it is not held. */
  addIfHeld(id: string, weight: number): boolean {
    const e = this.byId.get(id);
    if (e === undefined) return false;
    e.count += weight;
    this.down(e.pos);
    return true;
  }

  add(id: string, item: T, weight: number): void {
    if (this.addIfHeld(id, weight)) return;
    if (this.heap.length < this.capacity) {
      const e: HeapEntry<T> = { id, item, count: weight, error: 0, pos: this.heap.length };
      this.heap.push(e);
      this.byId.set(id, e);
      this.up(e.pos);
      return;
    }
    // The root is the smallest count: the newcomer takes its place and inherits it as error.
    const min = this.heap[0]!;
    this.byId.delete(min.id);
    this.evicted += 1;
    const floor = min.count;
    min.id = id;
    min.item = item;
    min.error = floor;
    min.count = floor + weight;
    this.byId.set(id, min);
    this.down(0);
  }

  entriesById(): ReadonlyMap<string, TopEntry<T>> {
    return this.byId;
  }

  clear(): void {
    this.byId.clear();
    this.heap.length = 0;
    this.evicted = 0;
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i]!;
    const b = this.heap[j]!;
    this.heap[i] = b;
    this.heap[j] = a;
    a.pos = j;
    b.pos = i;
  }

  private up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.heap[p]!.count <= this.heap[i]!.count) return;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number): void {
    const n = this.heap.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.heap[l]!.count < this.heap[m]!.count) m = l;
      if (r < n && this.heap[r]!.count < this.heap[m]!.count) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}

export interface TopListEntry<T> {
  readonly item: T;
  /** Estimated count over the window (the sum of the slots that hold the item). */
  readonly count: number;
  /** Upper bound of the overestimate: the item was counted at least `count - error` times. */
  readonly error: number;
  /** True when a descriptor that is not shown may have been counted more than this one's lower bound. */
  readonly uncertain: boolean;
}

export interface TopList<T> {
  /** The largest items, largest first. */
  readonly entries: TopListEntry<T>[];
  /** Items the sketches replaced in the window (0: every item seen is held, counts are exact). */
  readonly dropped: number;
  /**
   * The most an item that is not shown can have been counted in the window: the slots' floors
   * for items no slot holds, and held items ranked below the list with their possible undercount.
   */
  readonly hiddenMax: number;
  /** False when some item that is not shown may rank above a shown one (`hiddenMax` > a shown item's `count - error`). */
  readonly complete: boolean;
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

  /**
   * The `n` largest of the last one to two slots, largest first (ties by id, so the order is
   * stable), with what the sketches can and cannot vouch for. Runs on a poll of the page, never
   * per request: O(capacity log capacity).
   */
  top(n: number, nowMs: number): TopList<T> {
    this.rotate(nowMs);
    const slots = [this.previous, this.current];
    const merged = new Map<string, { item: T; count: number; error: number; unheldFloor: number }>();
    for (const sketch of slots) {
      for (const [id, e] of sketch.entriesById()) {
        const m = merged.get(id);
        if (m === undefined) merged.set(id, { item: e.item, count: e.count, error: e.error, unheldFloor: 0 });
        else {
          m.count += e.count;
          m.error += e.error;
        }
      }
    }
    // An item missing from a slot may still have been counted there, up to that slot's floor.
    for (const [id, m] of merged) for (const sketch of slots) if (!sketch.entriesById().has(id)) m.unheldFloor += sketch.floor;
    const ranked = [...merged.entries()].sort(([ia, a], [ib, b]) => b.count - a.count || (ia < ib ? -1 : ia > ib ? 1 : 0));
    const shown = ranked.slice(0, n);
    let hiddenMax = this.previous.floor + this.current.floor;
    for (let i = n; i < ranked.length; i++) {
      const m = ranked[i]![1];
      hiddenMax = Math.max(hiddenMax, m.count + m.unheldFloor);
    }
    const dropped = this.previous.evictions + this.current.evictions;
    const entries = shown.map(([, m]) => ({ item: m.item, count: m.count, error: m.error, uncertain: dropped > 0 && m.count - m.error < hiddenMax }));
    return { entries, dropped, hiddenMax, complete: !entries.some((e) => e.uncertain) };
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
