/*
 * Several replicas on one PostgreSQL database: the ingest lease (exactly one replica polls the
 * exchanges, streams, backfills and fetches FX) and the shared market state it publishes for the
 * others. Interfaces here; PostgreSQL in postgres-cluster.ts, in memory in memory-cluster.ts.
 */

/** One holder's term of a lease: writes made under it carry the fence, so a later term wins. */
export interface LeaseTerm {
  name: string;
  holder: string;
  /** Increments every time the lease changes hands (or is taken again after expiring). */
  fence: number;
}

export interface LeaseStore {
  /**
   * Takes lease `name` for `holder` when it is free or expired, or extends it when `holder`
   * holds it and it has not expired, until `ttlMs` after the store's clock at that moment (the
   * only clock expiry is compared on). Returns the fence of the holder's term (a new, higher
   * one whenever the lease changed hands or had expired), or undefined when another holder has it.
   */
  acquire(name: string, holder: string, ttlMs: number): Promise<number | undefined>;
  /** Ends `holder`'s lease now (graceful stop), so another replica need not wait for it to expire. */
  release(name: string, holder: string): Promise<void>;
}

export interface StoredMarketState {
  /** Increments with every write, across terms. */
  version: number;
  /** When the ingesting replica fetched the data (ms since the epoch, its clock). */
  fetchedAt: number;
  /** The encoded snapshot (market-state-codec.ts). */
  body: string;
}

export interface MarketStateStore {
  /**
   * Writes the state if `term` still holds its lease unexpired and no later term has written;
   * returns the new version, or undefined when fenced out (the write did not happen).
   */
  write(term: LeaseTerm, fetchedAt: number, body: string): Promise<number | undefined>;
  /** The current version (one indexed read), undefined before the first write. */
  version(): Promise<number | undefined>;
  read(): Promise<StoredMarketState | undefined>;
}

/** What a replica polls: the shared state's version and the tokens' change counter. */
export interface ClusterVersions {
  /** Undefined before the first write of the market state. */
  marketState: number | undefined;
  /** Moves on every change to a token (revocation, plan change); kept by the database. */
  tokens: number;
}

/** What the replicas share beyond the quotes Store. */
export interface ClusterStore {
  readonly lease: LeaseStore;
  readonly state: MarketStateStore;
  /** Both versions in one round trip. */
  versions(): Promise<ClusterVersions>;
  close(): Promise<void>;
}
