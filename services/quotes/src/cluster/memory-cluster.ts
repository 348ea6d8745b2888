import type { ClusterStore, ClusterVersions, LeaseStore, LeaseTerm, MarketStateStore, StoredMarketState } from './types.js';

interface LeaseRow {
  holder: string;
  fence: number;
  expiresAt: number;
}

/**
 * The cluster store in one process, with the same rules as PostgreSQL's (the contract suite runs
 * against both): replicas built in one test process share one instance; `now` plays the
 * database's clock.
 */
export class MemoryClusterStore implements ClusterStore, LeaseStore, MarketStateStore {
  private readonly leases = new Map<string, LeaseRow>();
  private stored: (StoredMarketState & { fence: number }) | undefined;
  readonly lease: LeaseStore = this;
  readonly state: MarketStateStore = this;
  constructor(private readonly now: () => number) {}

  acquire(name: string, holder: string, ttlMs: number): Promise<number | undefined> {
    const now = this.now();
    const row = this.leases.get(name);
    if (row === undefined) {
      this.leases.set(name, { holder, fence: 1, expiresAt: now + ttlMs });
      return Promise.resolve(1);
    }
    const live = row.expiresAt > now;
    if (row.holder !== holder && live) return Promise.resolve(undefined);
    const fence = row.holder === holder && live ? row.fence : row.fence + 1;
    this.leases.set(name, { holder, fence, expiresAt: now + ttlMs });
    return Promise.resolve(fence);
  }

  release(name: string, holder: string): Promise<void> {
    const row = this.leases.get(name);
    if (row !== undefined && row.holder === holder) row.expiresAt = 0;
    return Promise.resolve();
  }

  write(term: LeaseTerm, fetchedAt: number, body: string): Promise<number | undefined> {
    const row = this.leases.get(term.name);
    if (row === undefined || row.holder !== term.holder || row.fence !== term.fence || row.expiresAt <= this.now()) return Promise.resolve(undefined);
    if (this.stored !== undefined && this.stored.fence > term.fence) return Promise.resolve(undefined);
    const version = (this.stored?.version ?? 0) + 1;
    this.stored = { version, fetchedAt, body, fence: term.fence };
    return Promise.resolve(version);
  }

  version(): Promise<number | undefined> {
    return Promise.resolve(this.stored?.version);
  }

  read(): Promise<StoredMarketState | undefined> {
    const s = this.stored;
    return Promise.resolve(s === undefined ? undefined : { version: s.version, fetchedAt: s.fetchedAt, body: s.body });
  }

  /** The tokens' change counter (a test moves it with `tokensChanged`). */
  private tokens = 0;
  tokensChanged(): void {
    this.tokens++;
  }

  versions(): Promise<ClusterVersions> {
    return Promise.resolve({ marketState: this.stored?.version, tokens: this.tokens });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
