import type { UsageRepository } from '../domain/repositories.js';
import type { MaybePromise } from '../maybe-promise.js';
import { PairKeys } from './pair-keys.js';

/**
 * What the monthly quota needs from a counter: `incrementIfBelow` answers at once when it can
 * (the count already in memory) and with a promise otherwise (the store is read). The new count,
 * or undefined when the limit is reached (nothing counted).
 */
export type UsageCounter = Pick<UsageRepository, 'get'> & {
  incrementIfBelow(tokenId: string, month: string, limit: number): MaybePromise<number | undefined>;
};

interface Entry {
  tokenId: string;
  month: string;
  /** Count in the store as of the last read or flush. */
  base: number;
  /** Requests admitted here and not yet written. */
  pending: number;
}

function increment(e: Entry, limit: number): number | undefined {
  if (e.base + e.pending >= limit) return undefined;
  e.pending++;
  return e.base + e.pending;
}

/**
 * Write-behind usage counting: requests are admitted against the stored count plus what this
 * process admitted since, and the increments are written in one go by `flush()` (every
 * QUOTES_USAGE_FLUSH_MS and on shutdown). One process enforces quotas exactly; several
 * processes sharing a database can overshoot by what they admit within one flush interval.
 */
export class BufferedUsage implements UsageCounter {
  private readonly entries = new Map<string, Entry>();
  private readonly keys = new PairKeys();
  private flushing: Promise<void> | undefined;
  constructor(private readonly repo: UsageRepository) {}

  /** At once when this token's month is in memory, else after reading the stored count. */
  incrementIfBelow(tokenId: string, month: string, limit: number): MaybePromise<number | undefined> {
    const key = this.keys.key(tokenId, month);
    const e = this.entries.get(key);
    if (e !== undefined) return increment(e, limit);
    return this.repo.get(tokenId, month).then((base) => {
      // Another request may have loaded it while this one waited.
      let loaded = this.entries.get(key);
      if (loaded === undefined) {
        loaded = { tokenId, month, base, pending: 0 };
        this.entries.set(key, loaded);
      }
      return increment(loaded, limit);
    });
  }

  /** The count including what this process admitted and has not written yet. */
  async get(tokenId: string, month: string): Promise<number> {
    const e = this.entries.get(this.keys.key(tokenId, month));
    return e === undefined ? await this.repo.get(tokenId, month) : e.base + e.pending;
  }

  /** Writes pending increments; entries without any are dropped so the next request re-reads the store. */
  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    this.flushing = (async () => {
      for (const [key, e] of [...this.entries]) {
        if (e.pending === 0) {
          this.entries.delete(key);
          continue;
        }
        const n = e.pending;
        e.pending -= n;
        try {
          e.base = await this.repo.add(e.tokenId, e.month, n);
        } catch (err) {
          e.pending += n;
          throw err;
        }
      }
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }
}
