// Process-local memory of keys already over their limit (LOCAL_CACHE_SIZE_IN_BYTES, as upstream's
// freecache): while a key is remembered, its descriptor is answered OVER_LIMIT without a store round trip.
import type { Clock } from '../clock.js';
import type { Gauge, StatsStore } from '../stats/stats-store.js';

// Per-entry bookkeeping cost charged against the budget besides the key bytes (freecache charges a
// 24-byte header per entry; keeping the same figure keeps the setting's meaning close to upstream).
const ENTRY_OVERHEAD_BYTES = 24;

interface Entry {
  expiresAtMs: number;
  bytes: number;
}

export class LocalOverLimitCache {
  // Insertion-ordered: the first entry is the oldest, evicted first when over budget.
  private readonly entries = new Map<string, Entry>();
  private usedBytes = 0;
  private hits = 0;
  private misses = 0;
  private expired = 0;
  private evacuated = 0;
  private overwritten = 0;
  private readonly gauges: Record<'hitCount' | 'missCount' | 'lookupCount' | 'entryCount' | 'expiredCount' | 'evacuateCount' | 'overwriteCount', Gauge>;

  constructor(
    private readonly budgetBytes: number,
    private readonly clock: Clock,
    stats: StatsStore,
  ) {
    const g = (name: string): Gauge => stats.gauge(`ratelimit.localcache.${name}`);
    this.gauges = {
      hitCount: g('hitCount'),
      missCount: g('missCount'),
      lookupCount: g('lookupCount'),
      entryCount: g('entryCount'),
      expiredCount: g('expiredCount'),
      evacuateCount: g('evacuateCount'),
      overwriteCount: g('overwriteCount'),
    };
  }

  /** True when `key` is remembered as over limit and not yet expired (counts a hit or a miss). */
  has(key: string): boolean {
    const e = this.entries.get(key);
    if (e !== undefined) {
      if (e.expiresAtMs > this.clock.now()) {
        this.hits += 1;
        return true;
      }
      this.remove(key, e);
      this.expired += 1;
    }
    this.misses += 1;
    return false;
  }

  /** True when `key` is remembered and not expired at `nowMs`; counts nothing and removes nothing. */
  isFresh(key: string, nowMs: number): boolean {
    const e = this.entries.get(key);
    return e !== undefined && e.expiresAtMs > nowMs;
  }

  /** Counts `n` hits of keys checked with `isFresh` (what `has` would have counted). */
  countHits(n: number): void {
    this.hits += n;
  }

  /** Remembers `key` for `ttlSeconds` (one window of its unit). */
  add(key: string, ttlSeconds: number): void {
    this.addUntil(key, this.clock.now() + ttlSeconds * 1000);
  }

  /** When `key`'s entry expires (clock ms), or undefined when it is not remembered. */
  expiresAt(key: string): number | undefined {
    return this.entries.get(key)?.expiresAtMs;
  }

  /** Remembers `key` until `expiresAtMs` on the clock (sliding windows and token buckets compute their own expiry). */
  addUntil(key: string, expiresAtMs: number): void {
    const bytes = ENTRY_OVERHEAD_BYTES + Buffer.byteLength(key);
    if (bytes > this.budgetBytes) return;
    const existing = this.entries.get(key);
    if (existing !== undefined) {
      existing.expiresAtMs = expiresAtMs;
      this.overwritten += 1;
      return;
    }
    while (this.usedBytes + bytes > this.budgetBytes) {
      const oldest = this.entries.entries().next().value;
      if (oldest === undefined) break;
      this.remove(oldest[0], oldest[1]);
      this.evacuated += 1;
    }
    this.entries.set(key, { expiresAtMs, bytes });
    this.usedBytes += bytes;
  }

  /** Forgets `key` (an operator reset its counter); true when it was remembered. */
  forget(key: string): boolean {
    const e = this.entries.get(key);
    if (e === undefined) return false;
    this.remove(key, e);
    return true;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Copies the counters into the `ratelimit.localcache.*` gauges (called before each stats flush). */
  refreshGauges(): void {
    this.gauges.hitCount.set(this.hits);
    this.gauges.missCount.set(this.misses);
    this.gauges.lookupCount.set(this.hits + this.misses);
    this.gauges.entryCount.set(this.entries.size);
    this.gauges.expiredCount.set(this.expired);
    this.gauges.evacuateCount.set(this.evacuated);
    this.gauges.overwriteCount.set(this.overwritten);
  }

  private remove(key: string, e: Entry): void {
    this.entries.delete(key);
    this.usedBytes -= e.bytes;
  }
}
