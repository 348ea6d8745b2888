// The contract every counter backend implements (Redis, memcached, the embedded memory store).
// Backends only move data; every decision is made by the limiter (house rule 4).

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
   * backend allows it. Resolves with the counter values after the increment, in op order.
   * Rejects with StoreError when the backend cannot answer within its timeout.
   */
  increment(ops: readonly CounterOp[]): Promise<number[]>;
  /** Current values (0 when missing), in key order. Used by STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT. */
  get(keys: readonly string[]): Promise<number[]>;
  /** True while at least one connection to the backend is up (memory store: always). */
  isConnected(): boolean;
  /** Subscribe to connection state changes (used by the health component). */
  onConnectionChange?(listener: (connected: boolean) => void): void;
  /** Closes connections; pending operations finish or fail. */
  close(): Promise<void>;
}
