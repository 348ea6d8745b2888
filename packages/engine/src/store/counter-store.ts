// The contract every counter backend implements (Redis, memcached, the embedded memory store).
// Backends only move data; every decision is made by the limiter, so one contract suite covers every store.
//
// Counters saturate, they never wrap or reset. One descriptor adds at most MAX_HITS_ADDEND
// (limiter/hits-addend.ts, 2^32) per request, so a counter needs about two million maximal
// requests in one window to pass 2^53 (where a JS number stops being exact) and two billion to
// reach Redis's INCRBY overflow at 2^63-1 or memcached's incr wrap at 2^64: possible within a
// month or year window. Every store therefore reports any count at or above SATURATED_COUNT (and
// any it cannot read back as a number) as SATURATED_COUNT, which is above every limit (limits
// are uint32), and no store ever lets a saturated counter fall back to a small value.

/** A counter at or above this is saturated: over every limit for the rest of its window. */
export const SATURATED_COUNT = Number.MAX_SAFE_INTEGER;

/** `n` capped at SATURATED_COUNT; NaN (an unreadable value) is saturated too. */
export function saturate(n: number): number {
  return n < SATURATED_COUNT ? n : SATURATED_COUNT;
}

export interface CounterOp {
  /** Full cache key, e.g. `prefix:domain_key_value_1234`. */
  key: string;
  /** Amount to add (may be 0: "check without consuming"). */
  addend: number;
  /** TTL to (re)apply: unit length in seconds plus jitter. */
  expireSeconds: number;
  /** The limit's window in seconds (1 for SECOND); lets a split store route per-second keys. */
  windowSeconds: number;
}

export interface CounterStore {
  /** Short name used in logs and health (`redis`, `memcached`, `memory`). */
  readonly kind: string;
  /**
   * Adds each op's addend to its key and (re)applies its TTL, all in one round trip where the
   * backend allows it. Resolves with the counter values after the increment, in op order,
   * each at most SATURATED_COUNT (a counter that would overflow the backend resolves saturated).
   * Rejects with StoreError when the backend cannot answer within its timeout.
   */
  increment(ops: readonly CounterOp[]): Promise<number[]>;
  /** Current values (0 when missing, at most SATURATED_COUNT), in key order. Used by STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT. */
  get(keys: readonly string[]): Promise<number[]>;
  /** True while at least one connection to the backend is up (memory store: always). */
  isConnected(): boolean;
  /** Subscribe to connection state changes (used by the health component). */
  onConnectionChange?(listener: (connected: boolean) => void): void;
  /** Closes connections; pending operations finish or fail. */
  close(): Promise<void>;
}
