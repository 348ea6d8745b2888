import type { UsageRepository } from '../domain/repositories.js';
import { PairKeys } from './pair-keys.js';

/** What the monthly quota needs from a counter. */
export type UsageCounter = Pick<UsageRepository, 'incrementIfBelow' | 'get'> & {
  /**
   * `incrementIfBelow` without waiting, when the count is already in memory: the new count,
   * null when the limit is reached (nothing counted), undefined when only the async call can tell.
   */
  tryIncrementIfBelow?: (tokenId: string, month: string, limit: number) => number | null | undefined;
};

interface Entry {
  tokenId: string;
  month: string;
  /** Count in the store as of the last read or flush. */
  base: number;
  /** Requests admitted here and not yet written. */
  pending: number;
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

  tryIncrementIfBelow(tokenId: string, month: string, limit: number): number | null | undefined {
    const e = this.entries.get(this.keys.key(tokenId, month));
    if (e === undefined) return undefined;
    if (e.base + e.pending >= limit) return null;
    e.pending++;
    return e.base + e.pending;
  }

  async incrementIfBelow(tokenId: string, month: string, limit: number): Promise<number | undefined> {
    const key = this.keys.key(tokenId, month);
    if (!this.entries.has(key)) {
      const base = await this.repo.get(tokenId, month);
      // Another request may have loaded it while this one waited.
      if (!this.entries.has(key)) this.entries.set(key, { tokenId, month, base, pending: 0 });
    }
    return this.tryIncrementIfBelow(tokenId, month, limit) ?? undefined;
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
