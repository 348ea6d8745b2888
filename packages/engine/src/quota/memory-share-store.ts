// The QuotaShareStore of a single process (BACKEND_TYPE=memory, or one RLQS server without a
// shared store): the bucket records live in a Map and run the ledger functions directly. Records
// whose entries have all expired are swept once per entry lifetime, so abandoned buckets do not
// pile up.
import {
  exchangeEntries,
  pruneEntries,
  releaseEntries,
  reserveEntries,
  type ShareEntry,
} from './share-ledger.js';
import type { ExchangeBatch, InstanceShare, QuotaShareStore, ReserveBatch, ShareTiming } from './share-store.js';

export class MemoryShareStore implements QuotaShareStore {
  readonly kind = 'memory';
  private readonly buckets = new Map<string, Map<string, ShareEntry>>();
  private lastSweep = 0;

  /** Buckets with at least one entry (for tests and statistics). */
  get bucketCount(): number {
    return this.buckets.size;
  }

  exchange(batch: readonly ExchangeBatch[], timing: ShareTiming): Promise<InstanceShare[][]> {
    this.sweep(timing);
    return Promise.resolve(batch.map((b) => exchangeEntries(this.record(b.bucket), b.updates, timing.nowMs, timing.entryTtlMs)));
  }

  reserve(batch: readonly ReserveBatch[], timing: ShareTiming & { readonly holdMs: number }): Promise<number[][]> {
    return Promise.resolve(batch.map((b) => reserveEntries(this.record(b.bucket), b.capacity, b.requests, timing.nowMs, timing.entryTtlMs, timing.holdMs)));
  }

  release(bucket: string, instances: readonly string[]): Promise<void> {
    const r = this.buckets.get(bucket);
    if (r !== undefined) {
      releaseEntries(r, instances);
      if (r.size === 0) this.buckets.delete(bucket);
    }
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.buckets.clear();
    return Promise.resolve();
  }

  private record(bucket: string): Map<string, ShareEntry> {
    let r = this.buckets.get(bucket);
    if (r === undefined) this.buckets.set(bucket, (r = new Map<string, ShareEntry>()));
    return r;
  }

  private sweep(timing: ShareTiming): void {
    if (timing.nowMs - this.lastSweep < timing.entryTtlMs) return;
    this.lastSweep = timing.nowMs;
    for (const [bucket, r] of this.buckets) {
      pruneEntries(r, timing.nowMs);
      if (r.size === 0) this.buckets.delete(bucket);
    }
  }
}
