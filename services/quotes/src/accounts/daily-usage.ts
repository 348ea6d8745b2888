import type { DailyUsageRepository, DailyUsageRow } from '../domain/dashboard-repositories.js';
import { PairKeys } from './pair-keys.js';

/** `YYYY-MM-DD` of the UTC day holding `ms`. */
// The key only changes at UTC midnight: remember the current day's bounds instead of formatting
// a date on every request.
let cachedDayStart = Number.NaN;
let cachedDayKey = '';

export function dayKey(ms: number): string {
  if (ms >= cachedDayStart && ms < cachedDayStart + 86_400_000) return cachedDayKey;
  cachedDayStart = Math.floor(ms / 86_400_000) * 86_400_000;
  cachedDayKey = new Date(cachedDayStart).toISOString().slice(0, 10);
  return cachedDayKey;
}

/**
 * Requests per token per UTC day for the dashboard chart. Counted in memory on the request path
 * and written in one go by `flush()` (with the monthly counts), so the hot path never waits on
 * the database for a number that is only ever displayed. Reads add what is still pending here.
 */
export class DailyUsage {
  private pending = new Map<string, number>();
  private flushing: Promise<void> | undefined;
  /** The batch being written, still counted by reads until it is in the store. */
  private inFlight = new Map<string, number>();
  private readonly keys = new PairKeys();
  constructor(private readonly repo: DailyUsageRepository) {}

  record(tokenId: string, now: number): void {
    const key = this.keys.key(tokenId, dayKey(now));
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
  }

  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    const batch = this.pending;
    if (batch.size === 0) return;
    this.pending = new Map();
    this.inFlight = batch;
    this.flushing = (async () => {
      for (const [key, n] of batch) {
        const [tokenId = '', day = ''] = key.split('\u0000');
        await this.repo.add(tokenId, day, n);
        batch.delete(key);
      }
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
      this.inFlight = new Map();
      // Whatever was not written (a failed add) goes back, so the next flush retries it.
      for (const [key, n] of batch) this.pending.set(key, (this.pending.get(key) ?? 0) + n);
    }
  }

  /** Stored plus pending counts for days in [fromDay, toDay], ascending. */
  async range(tokenId: string, fromDay: string, toDay: string): Promise<DailyUsageRow[]> {
    const byDay = new Map((await this.repo.range(tokenId, fromDay, toDay)).map((r) => [r.day, r.count]));
    for (const [key, n] of [...this.pending, ...this.inFlight]) {
      const [id, day = ''] = key.split('\u0000');
      if (id === tokenId && day >= fromDay && day <= toDay) byDay.set(day, (byDay.get(day) ?? 0) + n);
    }
    return [...byDay].map(([day, count]) => ({ day, count })).sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
  }

  /** Adds counts directly (carrying a rotated token's days over to its successor). */
  async add(tokenId: string, day: string, delta: number): Promise<void> {
    await this.repo.add(tokenId, day, delta);
  }
}
