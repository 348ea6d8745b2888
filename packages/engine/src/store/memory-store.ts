// The embedded counter store (BACKEND_TYPE=memory): one process, no network. It mirrors Redis's
// INCRBY + EXPIRE exactly (the TTL is re-applied on every increment; an expired key reads as 0;
// EXPIRE with a non-positive TTL deletes the key) with expiry measured on the injected clock.
//
// Memory is bounded in bytes (`maxBytes`, default 256 MiB) and optionally in keys (`maxKeys`).
// Each entry is charged ENTRY_OVERHEAD_BYTES plus its key's string bytes (1 per character, 2
// when the key holds a character above U+00FF), so long descriptor values cost what they weigh.
//
// Expired windows are freed incrementally: keys wait in a time-bucketed expiry queue (one bucket
// per expiry second, a min-heap of bucket seconds) and each call sweeps a few entries of buckets
// already in the past. When a new key does not fit, room is made in this order:
//   1. expired counters (the rest of the past buckets);
//   2. the least recently used cold counters: the live map is kept in LRU order (a touch deletes
//      and re-inserts), so the oldest entry is the first candidate. A counter touched in the
//      current or the previous second is hot and never evicted; since the map is in LRU order,
//      a hot oldest entry means every entry is hot. A cold counter that is at or over its limit
//      (CounterOp.limit; a token bucket that refused or is full) while its window is live is
//      held: it moves to a separate held map instead of being evicted;
//   3. held counters, oldest first (`evicted_held`), only while held counters weigh more than
//      half of `maxBytes`.
// When nothing can be evicted the batch is refused with StoreError before anything changes (the
// service handles it as a store outage), counted in `refused` and logged at most every 10 s.
// Every step is O(1) amortized per insert: an entry moves to the held map at most once per touch.
import type { Clock } from '../clock.js';
import { StoreError } from '../errors.js';
import type { Counter, Gauge, StatsStore } from '../stats/stats-store.js';
import { saturate, type Algorithm, type CounterOp, type CounterStore, type OpResult } from './counter-store.js';

/** Everything: one thread and no network make every algorithm atomic here. */
export const MEMORY_STORE_ALGORITHMS: ReadonlySet<Algorithm> = new Set<Algorithm>(['fixed_window', 'sliding_window', 'token_bucket']);

/**
 * Bytes charged per entry on top of its key's characters: the map slot, the entry record, its
 * expiry-queue slot and the string header. Measured with bench/memory-store-footprint.mjs
 * (node 20: heap per key = key bytes + 174 to 184 B for 49-, 512- and 4096-character keys),
 * rounded up.
 */
export const ENTRY_OVERHEAD_BYTES = 192;

/** Default byte bound: 256 MiB. */
export const MEMORY_STORE_DEFAULT_MAX_BYTES = 256 * 1024 * 1024;

/** At most one "store full" log line per this many ms of the injected clock. */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

export interface MemoryStoreOptions {
  clock: Clock;
  /** Most bytes the entries are charged (see ENTRY_OVERHEAD_BYTES). Default 256 MiB; at least 4 KiB. */
  maxBytes?: number | undefined;
  /** Optional extra cap on live keys (same eviction order as the byte bound). Default: none. */
  maxKeys?: number | undefined;
  /**
   * Registers `ratelimit.memory_store.keys` and `.bytes` (gauges), `.expired`, `.evicted`,
   * `.evicted_held` and `.refused` (counters).
   */
  stats?: StatsStore | undefined;
  /** Receives the (rate-limited) "store full, refusing new counters" line. */
  log?: ((message: string) => void) | undefined;
}

interface Entry {
  value: number;
  /** Expiry time in ms on the injected clock. */
  expiresAt: number;
  /** Expiry second of the bucket this key is queued under (<= its real expiry second). */
  queuedAt: number;
  /** Second (injected clock) of the last touch. */
  touchedSec: number;
  /** At or over its limit at the last touch (held while its window is live). */
  atLimit: boolean;
  /** Bytes charged for this entry. */
  bytes: number;
  /** In the held map rather than the LRU map. */
  inHeld: boolean;
}

/** Bytes a key string is charged: one per character, two when any character is above U+00FF. */
export function keyBytes(key: string): number {
  // eslint-disable-next-line no-control-regex
  return /[^\u0000-\u00ff]/.test(key) ? 2 * key.length : key.length;
}

/** Entries examined per call on top of the call's own ops, so the sweep outpaces new entries. */
const SWEEP_BASE = 8;

export class MemoryStore implements CounterStore {
  readonly kind = 'memory';
  readonly algorithms = MEMORY_STORE_ALGORITHMS;
  private readonly clock: Clock;
  private readonly maxKeys: number;
  private readonly maxBytes: number;
  /** Live entries that are not held, least recently used first. */
  private readonly lru = new Map<string, Entry>();
  /** Cold entries at their limit, moved out of the LRU order (oldest first). */
  private readonly held = new Map<string, Entry>();
  private bytes = 0;
  private heldBytes = 0;
  private readonly buckets = new Map<number, string[]>();
  /** Min-heap of the seconds that have a bucket. */
  private readonly heap: number[] = [];
  private expiredTotal = 0;
  private evictedTotal = 0;
  private evictedHeldTotal = 0;
  private refusedTotal = 0;
  private lastRefusalLog = Number.NEGATIVE_INFINITY;
  private refusedSinceLog = 0;
  private readonly keysGauge: Gauge | undefined;
  private readonly bytesGauge: Gauge | undefined;
  private readonly expiredCounter: Counter | undefined;
  private readonly evictedCounter: Counter | undefined;
  private readonly evictedHeldCounter: Counter | undefined;
  private readonly refusedCounter: Counter | undefined;
  private readonly log: ((message: string) => void) | undefined;

  constructor(opts: MemoryStoreOptions) {
    this.clock = opts.clock;
    this.maxKeys = opts.maxKeys ?? Number.MAX_SAFE_INTEGER;
    this.maxBytes = opts.maxBytes ?? MEMORY_STORE_DEFAULT_MAX_BYTES;
    if (!Number.isInteger(this.maxKeys) || this.maxKeys < 1) throw new StoreError(`memory store maxKeys must be >= 1, got ${this.maxKeys}`);
    if (!Number.isSafeInteger(this.maxBytes) || this.maxBytes < 4096) throw new StoreError(`memory store maxBytes must be an integer >= 4096, got ${this.maxBytes}`);
    this.keysGauge = opts.stats?.gauge('ratelimit.memory_store.keys');
    this.bytesGauge = opts.stats?.gauge('ratelimit.memory_store.bytes');
    this.expiredCounter = opts.stats?.counter('ratelimit.memory_store.expired');
    this.evictedCounter = opts.stats?.counter('ratelimit.memory_store.evicted');
    this.evictedHeldCounter = opts.stats?.counter('ratelimit.memory_store.evicted_held');
    this.refusedCounter = opts.stats?.counter('ratelimit.memory_store.refused');
    this.log = opts.log;
  }

  /** Answered at once (never a promise); a bad op throws StoreError, changing nothing. */
  increment(ops: readonly CounterOp[]): number[] {
    // Validate first so a bad op changes nothing (Redis would have applied the ops before it).
    for (const op of ops) {
      if (!Number.isSafeInteger(op.addend)) throw new StoreError(`memory store: addend ${op.addend} is not an integer`);
      if (!Number.isSafeInteger(op.expireSeconds)) {
        throw new StoreError(`memory store: expire ${op.expireSeconds} is not an integer`);
      }
    }
    const now = this.clock.now();
    this.sweep(now, SWEEP_BASE + 2 * ops.length);
    this.prepare(ops, now);
    const out = new Array<number>(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as CounterOp;
      const value = this.apply(op.key, op.addend, op.expireSeconds * 1000, now);
      this.markLimit(op.key, op.limit !== undefined && value >= op.limit);
      out[i] = value;
    }
    this.updateGauges();
    return out;
  }

  /**
   * Fixed-window ops as `increment`; sliding-window ops also read `previousKey` after the
   * increment; token-bucket ops run GCRA on the stored TAT (counter-store.ts, BucketParams).
   * Validated first, so a bad op changes nothing (StoreError thrown). Answered at once.
   */
  execute(ops: readonly CounterOp[]): OpResult[] {
    for (const op of ops) {
      if (!Number.isSafeInteger(op.addend) || op.addend < 0) throw new StoreError(`memory store: addend ${op.addend} is not a non-negative integer`);
      const b = op.bucket;
      if (b !== undefined) {
        if (!Number.isSafeInteger(b.nowUs) || b.nowUs < 0 || !Number.isSafeInteger(b.emissionUs) || b.emissionUs < 1 || !Number.isSafeInteger(b.toleranceUs) || b.toleranceUs < 0) {
          throw new StoreError(`memory store: invalid token bucket parameters for ${op.key}`);
        }
      } else if (!Number.isSafeInteger(op.expireSeconds)) {
        throw new StoreError(`memory store: expire ${op.expireSeconds} is not an integer`);
      }
    }
    const now = this.clock.now();
    this.sweep(now, SWEEP_BASE + 2 * ops.length);
    this.prepare(ops, now);
    const out = new Array<OpResult>(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as CounterOp;
      if (op.bucket !== undefined) {
        out[i] = this.takeFromBucket(op.key, op.addend, op.bucket.nowUs, op.bucket.emissionUs, op.bucket.toleranceUs, now);
        continue;
      }
      const value = this.apply(op.key, op.addend, op.expireSeconds * 1000, now);
      this.markLimit(op.key, op.limit !== undefined && value >= op.limit);
      out[i] = op.previousKey === undefined ? { value } : { value, previous: this.read(op.previousKey, now) };
    }
    this.updateGauges();
    return out;
  }

  /** Answered at once. */
  get(keys: readonly string[]): number[] {
    const now = this.clock.now();
    return keys.map((k) => this.read(k, now));
  }

  private lookup(key: string): Entry | undefined {
    return this.lru.get(key) ?? this.held.get(key);
  }

  private read(key: string, now: number): number {
    const e = this.lookup(key);
    return e === undefined || e.expiresAt <= now ? 0 : e.value;
  }

  private markLimit(key: string, atLimit: boolean): void {
    const e = this.lookup(key);
    if (e !== undefined) e.atLimit = atLimit;
  }

  /**
   * Before a batch changes anything: touches the live keys it uses (so making room cannot evict
   * them) and makes room for the keys it creates, or refuses the whole batch with StoreError.
   */
  private prepare(ops: readonly CounterOp[], now: number): void {
    const nowSec = Math.floor(now / 1000);
    let needBytes = 0;
    let needKeys = 0;
    let seen: Set<string> | undefined;
    for (const op of ops) {
      const e = this.lookup(op.key);
      if (e !== undefined) {
        this.touch(op.key, e, nowSec);
      } else if (op.expireSeconds > 0 || op.bucket !== undefined) {
        if (ops.length > 1) {
          seen ??= new Set();
          if (seen.has(op.key)) continue;
          seen.add(op.key);
        }
        needBytes += ENTRY_OVERHEAD_BYTES + keyBytes(op.key);
        needKeys++;
      }
      if (op.previousKey !== undefined) {
        const p = this.lookup(op.previousKey);
        if (p !== undefined) this.touch(op.previousKey, p, nowSec);
      }
    }
    if (needKeys === 0) return;
    if (!this.makeRoom(needBytes, needKeys, now)) this.refuse(now, needBytes);
  }

  private touch(key: string, e: Entry, nowSec: number): void {
    if (e.inHeld) {
      this.held.delete(key);
      this.heldBytes -= e.bytes;
      e.inHeld = false;
    } else {
      this.lru.delete(key);
    }
    this.lru.set(key, e);
    e.touchedSec = nowSec;
  }

  private remove(key: string, e: Entry): void {
    if (e.inHeld) {
      this.held.delete(key);
      this.heldBytes -= e.bytes;
    } else {
      this.lru.delete(key);
    }
    this.bytes -= e.bytes;
  }

  private refuse(now: number, needBytes: number): never {
    this.refusedTotal++;
    this.refusedCounter?.inc();
    this.refusedSinceLog++;
    if (this.log !== undefined && now - this.lastRefusalLog >= REFUSAL_LOG_INTERVAL_MS) {
      this.log(
        `memory store full: refused ${this.refusedSinceLog} batch(es) of new counters since the last report ` +
          `(${this.bytes} of ${this.maxBytes} bytes, ${this.size()} keys, ${this.heldBytes} bytes held; every counter is hot or held)`,
      );
      this.lastRefusalLog = now;
      this.refusedSinceLog = 0;
    }
    throw new StoreError(`memory store full: no cold counter can be evicted for ${needBytes} bytes of new counters`);
  }

  private size(): number {
    return this.lru.size + this.held.size;
  }

  private updateGauges(): void {
    this.keysGauge?.set(this.size());
    this.bytesGauge?.set(this.bytes);
  }

  /** GCRA on one key (counter-store.ts, BucketParams); the TAT's TTL runs on this store's clock. */
  private takeFromBucket(key: string, addend: number, nowUs: number, emissionUs: number, toleranceUs: number, now: number): OpResult {
    const stored = this.read(key, now);
    const tat = stored > nowUs ? stored : nowUs;
    // emissionUs × addend past toleranceUs is refused whatever the TAT (and may not be exact).
    if (emissionUs * addend > toleranceUs || tat - nowUs + emissionUs * addend > toleranceUs) {
      this.markLimit(key, true);
      return { value: tat, admitted: false };
    }
    const next = tat + emissionUs * addend;
    if (next === stored) return { value: next, admitted: true }; // addend 0 on a stored TAT: nothing to write
    const ttlMs = Math.max(1, Math.ceil((next - nowUs) / 1000));
    this.apply(key, next - stored, ttlMs, now);
    // Full when one more hit would be refused.
    this.markLimit(key, next - nowUs + emissionUs > toleranceUs);
    return { value: next, admitted: true };
  }

  /** Removes the keys (their queue entries go stale and are dropped when their bucket comes up). */
  delete(keys: readonly string[]): Promise<void> {
    for (const k of keys) {
      const e = this.lookup(k);
      if (e !== undefined) this.remove(k, e);
    }
    this.updateGauges();
    return Promise.resolve();
  }

  isConnected(): boolean {
    return true;
  }

  onConnectionChange(_listener: (connected: boolean) => void): void {
    // Always connected: there is no state change to report.
  }

  close(): Promise<void> {
    this.lru.clear();
    this.held.clear();
    this.bytes = 0;
    this.heldBytes = 0;
    this.buckets.clear();
    this.heap.length = 0;
    return Promise.resolve();
  }

  /** Remaining TTL in ms, like Redis PTTL: -2 when the key is missing or expired. */
  pttl(key: string): number {
    const now = this.clock.now();
    const e = this.lookup(key);
    return e === undefined || e.expiresAt <= now ? -2 : e.expiresAt - now;
  }

  /** Remaining TTL in whole seconds, rounded like Redis TTL: -2 when missing or expired. */
  ttlSeconds(key: string): number {
    const ms = this.pttl(key);
    return ms < 0 ? ms : Math.floor((ms + 500) / 1000);
  }

  /** Live keys (expired keys not swept yet included), expired keys swept and keys evicted because the store was full. */
  counts(): { keys: number; expired: number; evicted: number } {
    return { keys: this.size(), expired: this.expiredTotal, evicted: this.evictedTotal };
  }

  /** Bytes charged, held counters' share, held counters evicted and batches refused (diagnostics and tests). */
  pressure(): { bytes: number; maxBytes: number; heldBytes: number; evictedHeld: number; refused: number } {
    return { bytes: this.bytes, maxBytes: this.maxBytes, heldBytes: this.heldBytes, evictedHeld: this.evictedHeldTotal, refused: this.refusedTotal };
  }

  /** Entries in the expiry queue, stale ones included (diagnostics and tests). */
  queueLength(): number {
    let n = 0;
    for (const b of this.buckets.values()) n += b.length;
    return n;
  }

  /** INCRBY + PEXPIRE on the injected clock. Room for a new key was made by `prepare`. */
  private apply(key: string, addend: number, expireMs: number, now: number): number {
    let e = this.lookup(key);
    if (e === undefined) {
      if (expireMs <= 0) return saturate(addend); // created and deleted at once, as in Redis
      const bytes = ENTRY_OVERHEAD_BYTES + keyBytes(key);
      e = { value: 0, expiresAt: 0, queuedAt: Number.POSITIVE_INFINITY, touchedSec: Math.floor(now / 1000), atLimit: false, bytes, inHeld: false };
      this.lru.set(key, e);
      this.bytes += bytes;
    } else if (e.expiresAt <= now) {
      e.value = 0;
    }
    // Saturate like every store (counter-store.ts): past 2^53 a double would round increments away.
    const value = saturate(e.value + addend);
    e.value = value;
    if (expireMs <= 0) {
      this.remove(key, e);
      return value;
    }
    e.expiresAt = now + expireMs;
    const second = Math.floor(e.expiresAt / 1000);
    // A later expiry is picked up when the earlier bucket comes up; only an earlier one needs a new entry.
    if (second < e.queuedAt) {
      e.queuedAt = second;
      this.enqueue(second, key);
    }
    return value;
  }

  private enqueue(second: number, key: string): void {
    let bucket = this.buckets.get(second);
    if (bucket === undefined) {
      bucket = [];
      this.buckets.set(second, bucket);
      this.heapPush(second);
    }
    bucket.push(key);
  }

  /** Examines up to `budget` queue entries of buckets whose whole second has passed. */
  private sweep(now: number, budget: number): void {
    const doneBefore = Math.floor(now / 1000);
    while (budget > 0 && this.heap.length > 0 && (this.heap[0] as number) < doneBefore) {
      budget--;
      this.processOne(now);
    }
  }

  private fits(needBytes: number, needKeys: number): boolean {
    return this.bytes + needBytes <= this.maxBytes && this.size() + needKeys <= this.maxKeys;
  }

  /** Evicts until the new keys fit (expired, then cold LRU, then held past half the budget); false when it cannot. */
  private makeRoom(needBytes: number, needKeys: number, now: number): boolean {
    if (this.fits(needBytes, needKeys)) return true;
    // 1. Expired counters: every queue entry of the past seconds (each is processed once).
    const doneBefore = Math.floor(now / 1000);
    while (!this.fits(needBytes, needKeys) && this.heap.length > 0 && (this.heap[0] as number) < doneBefore) this.processOne(now);
    const hotFrom = doneBefore - 1;
    while (!this.fits(needBytes, needKeys)) {
      // 3. Held counters, only while they weigh more than half of the budget.
      if (this.heldBytes * 2 > this.maxBytes && this.evictHeld(now)) continue;
      // 2. The least recently used cold counter.
      const first = this.lru.entries().next();
      if (first.done === true) return false;
      const [key, e] = first.value;
      if (e.expiresAt <= now) {
        this.remove(key, e);
        this.expiredTotal++;
        this.expiredCounter?.inc();
        continue;
      }
      if (e.touchedSec >= hotFrom) return false; // the oldest is hot: so is every other
      if (e.atLimit) {
        this.lru.delete(key);
        this.held.set(key, e);
        e.inHeld = true;
        this.heldBytes += e.bytes;
        continue;
      }
      this.remove(key, e);
      this.evictedTotal++;
      this.evictedCounter?.inc();
    }
    return true;
  }

  private evictHeld(now: number): boolean {
    const first = this.held.entries().next();
    if (first.done === true) return false;
    const [key, e] = first.value;
    this.remove(key, e);
    if (e.expiresAt <= now) {
      this.expiredTotal++;
      this.expiredCounter?.inc();
    } else {
      this.evictedHeldTotal++;
      this.evictedHeldCounter?.inc();
    }
    return true;
  }

  /** Takes one key from the earliest bucket: drops it if expired, else moves it to its real bucket. */
  private processOne(now: number): void {
    const second = this.heap[0] as number;
    const bucket = this.buckets.get(second) as string[];
    const key = bucket.pop();
    if (bucket.length === 0) {
      this.buckets.delete(second);
      this.heapPop();
    }
    if (key === undefined) return;
    const e = this.lookup(key);
    if (e === undefined || e.queuedAt !== second) return; // stale queue entry
    if (e.expiresAt <= now) {
      this.remove(key, e);
      this.expiredTotal++;
      this.expiredCounter?.inc();
      return;
    }
    const real = Math.floor(e.expiresAt / 1000);
    if (real > second) {
      e.queuedAt = real;
      this.enqueue(real, key);
      return;
    }
    // Expires later within this second: look again next second.
    this.enqueue(second, key);
  }

  private heapPush(v: number): void {
    const h = this.heap;
    let i = h.length;
    h.push(v);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((h[p] as number) <= v) break;
      h[i] = h[p] as number;
      i = p;
    }
    h[i] = v;
  }

  private heapPop(): void {
    const h = this.heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    let i = 0;
    const n = h.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && (h[r] as number) < (h[l] as number) ? r : l;
      if ((h[c] as number) >= last) break;
      h[i] = h[c] as number;
      i = c;
    }
    h[i] = last;
  }
}
