import pg from 'pg';
import type { ClusterStore, ClusterVersions, LeaseStore, LeaseTerm, MarketStateStore, StoredMarketState } from './types.js';

/** The database's clock in milliseconds: the one clock lease expiry is compared on. */
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

const ACQUIRE = `
INSERT INTO cluster_lease AS l (name, holder, fence, expires_at)
VALUES ($1, $2, 1, ${NOW_MS} + $3)
ON CONFLICT (name) DO UPDATE
  SET holder = excluded.holder,
      fence = CASE WHEN l.holder = excluded.holder AND l.expires_at > ${NOW_MS} THEN l.fence ELSE l.fence + 1 END,
      expires_at = excluded.expires_at
  WHERE l.holder = excluded.holder OR l.expires_at <= ${NOW_MS}
RETURNING fence`;

const RELEASE = `UPDATE cluster_lease SET expires_at = 0 WHERE name = $1 AND holder = $2`;

// The lease row is read FOR SHARE: a replica taking the lease over waits for this write to
// commit, so a write is never accepted under a term that has already ended. The fence check on
// conflict keeps a late write of an older term from replacing a newer term's state.
const WRITE_STATE = `
INSERT INTO market_state AS m (id, version, fence, fetched_at, body)
SELECT 'latest', 1, $3, $4, $5 FROM cluster_lease
 WHERE name = $1 AND holder = $2 AND fence = $3 AND expires_at > ${NOW_MS}
 FOR SHARE
ON CONFLICT (id) DO UPDATE
  SET version = m.version + 1, fence = excluded.fence, fetched_at = excluded.fetched_at, body = excluded.body
  WHERE m.fence <= excluded.fence
RETURNING version`;

export interface PostgresClusterOptions {
  /** Longest a lease statement may run (ms): a renewal that takes longer is a failed renewal. */
  leaseStatementMs: number;
  /** Longest a market state statement may run (ms). */
  stateStatementMs?: number;
}

/**
 * The lease and the shared market state on PostgreSQL (tables of migration 005). The lease has
 * its own single connection, so renewals never queue behind request traffic on the store's pool;
 * both pools have server-side statement timeouts, so no call waits unbounded.
 */
export function openPostgresCluster(url: string, o: PostgresClusterOptions): ClusterStore {
  const leasePool = new pg.Pool({ connectionString: url, max: 1, statement_timeout: o.leaseStatementMs, query_timeout: o.leaseStatementMs + 500, connectionTimeoutMillis: o.leaseStatementMs + 500 });
  const statePool = new pg.Pool({ connectionString: url, max: 2, statement_timeout: o.stateStatementMs ?? 10_000, query_timeout: (o.stateStatementMs ?? 10_000) + 500, connectionTimeoutMillis: 5_000 });
  // A connection dropped by the server must not crash the process; the next call reconnects.
  leasePool.on('error', () => undefined);
  statePool.on('error', () => undefined);
  const lease: LeaseStore = {
    async acquire(name, holder, ttlMs) {
      const r = await leasePool.query<{ fence: string }>(ACQUIRE, [name, holder, Math.round(ttlMs)]);
      const row = r.rows[0];
      return row === undefined ? undefined : Number(row.fence);
    },
    async release(name, holder) {
      await leasePool.query(RELEASE, [name, holder]);
    },
  };
  const state: MarketStateStore = {
    async write(term: LeaseTerm, fetchedAt: number, body: string) {
      const r = await statePool.query<{ version: string }>(WRITE_STATE, [term.name, term.holder, term.fence, Math.round(fetchedAt), body]);
      const row = r.rows[0];
      return row === undefined ? undefined : Number(row.version);
    },
    async version() {
      const r = await statePool.query<{ version: string }>(`SELECT version FROM market_state WHERE id = 'latest'`);
      const row = r.rows[0];
      return row === undefined ? undefined : Number(row.version);
    },
    async read(): Promise<StoredMarketState | undefined> {
      const r = await statePool.query<{ version: string; fetched_at: string; body: string }>(`SELECT version, fetched_at, body FROM market_state WHERE id = 'latest'`);
      const row = r.rows[0];
      return row === undefined ? undefined : { version: Number(row.version), fetchedAt: Number(row.fetched_at), body: row.body };
    },
  };
  return {
    lease,
    state,
    async versions(): Promise<ClusterVersions> {
      const r = await statePool.query<{ state: string | null; tokens: string | null }>(
        `SELECT (SELECT version FROM market_state WHERE id = 'latest') AS state, (SELECT version FROM change_counters WHERE name = 'tokens') AS tokens`,
      );
      const row = r.rows[0];
      return { marketState: row?.state == null ? undefined : Number(row.state), tokens: Number(row?.tokens ?? 0) };
    },
    async close() {
      await Promise.allSettled([leasePool.end(), statePool.end()]);
    },
  };
}
