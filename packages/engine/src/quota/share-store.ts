// The contract through which RLQS server replicas share one bucket's demand and grants: the
// counter store (Redis single / Sentinel / Cluster) for several processes, the memory store for
// one. Each bucket is one record of per-instance entries {demand, grant, held, heldUntil,
// expiresAt}, written only by the replica that holds the instance's stream.
//
// A tick of a replica, per bucket it serves:
//   1. exchange: write the demands of its own instances, read every live instance's demand and
//      grant (all replicas), drop entries whose lifetime ended;
//   2. divide the quota by max-min fairness over all live demands (fair-share.ts; every replica
//      computes the same division from the same numbers);
//   3. reserve: set its own instances' grants to their shares, decreases at once, increases only
//      as far as the sum of the bucket's live grants stays within the quota.
// Step 3 is what keeps the sum of what the data planes enforce within the quota whatever the
// replicas' timing: a grant is reserved before it is pushed, a decrease keeps its old value
// reserved for `holdMs` (the time the push needs to reach the data plane), and an entry outlives
// the assignment TTL pushed with it, so capacity held by a data plane whose replica died is not
// handed out again before that data plane's assignment has expired.

/** A data plane instance's entry for one bucket, as `exchange` returns it. */
export interface InstanceShare {
  /** The instance's id (the server names each stream; ids sort the same on every replica). */
  readonly instance: string;
  /** Its demand, in allocator units (micro-requests per quota period). */
  readonly demand: number;
  /** What it is granted now (reserved), in the same units. */
  readonly grant: number;
}

export interface DemandUpdate {
  readonly instance: string;
  /** Allocator units, a non-negative safe integer. */
  readonly demand: number;
}

export interface GrantRequest {
  readonly instance: string;
  /** The share the replica wants to push, allocator units. */
  readonly want: number;
}

export interface ExchangeBatch {
  /** The bucket's store key (quota-share-key.ts). */
  readonly bucket: string;
  readonly updates: readonly DemandUpdate[];
}

export interface ReserveBatch {
  readonly bucket: string;
  /** The bucket's global quota in allocator units. */
  readonly capacity: number;
  /** Processed decreases first, then increases in this order. */
  readonly requests: readonly GrantRequest[];
}

export interface ShareTiming {
  /** The caller's clock (the server's injected clock), ms since the epoch; replicas' clocks must agree to well within entryTtlMs. */
  readonly nowMs: number;
  /** Lifetime of every entry written or refreshed (at least the assignment TTL pushed, plus a tick). */
  readonly entryTtlMs: number;
}

export interface QuotaShareStore {
  /** `memory` or `redis`: logs and health. */
  readonly kind: string;
  /**
   * For each bucket: records the demands (keeping each instance's grant; a new instance starts
   * with grant 0), drops expired entries, refreshes the lifetime of the updated ones, and returns
   * every live entry sorted by instance id. One round trip for the whole batch. Rejects with
   * StoreError when the store cannot answer.
   */
  exchange(batch: readonly ExchangeBatch[], timing: ShareTiming): Promise<InstanceShare[][]>;
  /**
   * For each bucket: sets the requested grants (see the header) and returns what was granted, in
   * request order. An increase is capped so the bucket's reserved total stays within `capacity`;
   * a decrease always succeeds and keeps the old grant reserved for `holdMs`.
   */
  reserve(batch: readonly ReserveBatch[], timing: ShareTiming & { readonly holdMs: number }): Promise<number[][]>;
  /**
   * Drops instances' entries at once (the bucket was abandoned: the data plane no longer enforces
   * an assignment for it). Never used for a closed stream, whose data plane keeps enforcing its
   * last assignment until that expires.
   */
  release(bucket: string, instances: readonly string[]): Promise<void>;
  close(): Promise<void>;
}
