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

import type { MaybePromise } from '../maybe-promise.js';

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
  /**
   * True for a fixed-window key that names its window in our own format (a `rate_limits` entry's
   * or a multiplied window's, `…_w<seconds>`; never upstream's): it is never counted again after
   * its window, so only the TTL it gets when created matters. A store may then skip re-applying
   * `expireSeconds` to a key it has already set it on, provided a key it creates (or creates
   * again, e.g. after a reset) always gets it. Absent or false: the TTL is (re)applied on every
   * increment, as upstream does.
   */
  expireOnCreate?: boolean;
  /**
   * fixed_window and sliding_window: the rule's requests_per_unit. A store that evicts under
   * memory pressure (the memory store) keeps a counter at or over it while its window is live.
   * Absent: the store treats the counter as under its limit.
   */
  limit?: number;
  /**
   * sliding_window only: the previous window's counter key. The store increments `key` exactly as
   * for a fixed window and, in the same round trip, reads this key without changing it
   * (OpResult.previous; 0 when missing).
   */
  previousKey?: string;
  /** token_bucket only (GCRA). When set, `key` holds a theoretical arrival time (TAT), not a count. */
  bucket?: BucketParams;
}

/**
 * GCRA parameters, all integer microseconds so every store does exact integer arithmetic
 * (a TAT near 1.8e15 µs is below 2^53). The store does, atomically per key:
 *   tat = max(stored TAT or nowUs, nowUs); next = tat + emissionUs × addend;
 *   if next − nowUs > toleranceUs: leave the key unchanged, result {value: tat, admitted: false}
 *   else: store next with a TTL of ceil((next − nowUs) / 1000) ms (at least 1 ms), result {value: next, admitted: true}.
 * `addend` 0 therefore checks without consuming. `expireSeconds` is unused for bucket ops.
 */
export interface BucketParams {
  /** The caller's clock (the service's injected clock), not the store's. */
  nowUs: number;
  /** One hit's cost: the unit's length ÷ requests_per_unit, rounded to a whole µs (at least 1). */
  emissionUs: number;
  /** burst × emissionUs: how far ahead of now the TAT may run. */
  toleranceUs: number;
}

/** One op's outcome from CounterStore.execute. */
export interface OpResult {
  /** Counter after the increment (fixed and sliding window), or the TAT in µs (token bucket), saturated as for increment. */
  value: number;
  /** sliding_window: the previous window's counter (0 when missing). */
  previous?: number;
  /** token_bucket: whether the hits were taken. */
  admitted?: boolean;
}

/** Counting algorithms a rule may choose (a YAML extension; upstream only has fixed_window). */
export type Algorithm = 'fixed_window' | 'sliding_window' | 'token_bucket';

export interface CounterStore {
  /** Short name used in logs and health (`redis`, `memcached`, `memory`). */
  readonly kind: string;
  /**
   * Adds each op's addend to its key and (re)applies its TTL, all in one round trip where the
   * backend allows it. Answers with the counter values after the increment, in op order,
   * each at most SATURATED_COUNT (a counter that would overflow the backend answers saturated).
   * Fails with StoreError when the backend cannot answer within its timeout.
   *
   * `increment`, `execute` and `get` answer with the value itself when the store answers in
   * process (the memory store), else with a promise (network stores); a failure is thrown by the
   * former and a rejection of the latter (maybe-promise.ts), so callers handle both.
   */
  increment(ops: readonly CounterOp[]): MaybePromise<number[]>;
  /**
   * Algorithms other than fixed_window this store runs atomically. Rules that choose an algorithm
   * missing here are refused when the configuration is loaded (the error names store and reason).
   * Absent: fixed_window only.
   */
  readonly algorithms?: ReadonlySet<Algorithm>;
  /**
   * Runs a batch that may mix fixed-window, sliding-window (`previousKey`) and token-bucket
   * (`bucket`) ops, in op order, all in one round trip per node where the backend allows it.
   * Present exactly when `algorithms` is non-empty. Batches of plain fixed-window ops keep using
   * `increment` (the hot path does not allocate OpResults).
   */
  execute?(ops: readonly CounterOp[]): MaybePromise<OpResult[]>;
  /** Current values (0 when missing, at most SATURATED_COUNT), in key order. Used by STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT. */
  get(keys: readonly string[]): MaybePromise<number[]>;
  /**
   * Removes the keys (an operator's reset on the debug port; never on the request path), in one
   * round trip per node where the backend allows it. Absent: the store cannot reset counters.
   */
  delete?(keys: readonly string[]): Promise<void>;
  /** True while at least one connection to the backend is up (memory store: always). */
  isConnected(): boolean;
  /** Subscribe to connection state changes (used by the health component). */
  onConnectionChange?(listener: (connected: boolean) => void): void;
  /** Closes connections; pending operations finish or fail. */
  close(): Promise<void>;
}
