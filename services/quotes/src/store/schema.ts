import type { Generated } from 'kysely';

/** Table shapes as Kysely sees them (both SQLite and PostgreSQL). */
export interface TokensTable {
  id: string;
  name: string;
  plan: string;
  token_hash: string;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}

export interface UsageTable {
  token_id: string;
  month: string;
  count: number;
}

export interface CandleSeriesTable {
  id: Generated<number>;
  symbol: string;
  base: string;
  cov_from: number | null;
  cov_to: number | null;
}

export interface CandlesTable {
  series_id: number;
  t: number;
  o: number;
  h: number;
  l: number;
  c: number;
  /** Quote-asset volume in USD; null when the source reports only base volume (migration 004). */
  v: number | null;
}

export interface FxDailyTable {
  currency: string;
  date: string;
  rate: number;
  source: string;
}

export interface BackfillStateTable {
  symbol: string;
  base: string;
  from_t: number;
  cursor_t: number;
  done: number;
  updated_at: number;
  last_error: string | null;
}

/** Dashboard accounts (migration 003). */
export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  plan: string;
  token_id: string | null;
  created_at: number;
}

export interface SessionsTable {
  id_hash: string;
  user_id: string;
  created_at: number;
  expires_at: number;
}

export interface UsageDailyTable {
  token_id: string;
  day: string;
  count: number;
}

/** The ingest lease (migration 005; PostgreSQL replicas). */
export interface ClusterLeaseTable {
  name: string;
  holder: string;
  fence: number;
  expires_at: number;
}

/** The shared market state (migration 005; PostgreSQL replicas). */
export interface MarketStateTable {
  id: string;
  version: number;
  fence: number;
  fetched_at: number;
  body: string;
}

/** Change counters other replicas poll (migration 005). */
export interface ChangeCountersTable {
  name: string;
  version: number;
}

export interface Database {
  tokens: TokensTable;
  usage: UsageTable;
  candle_series: CandleSeriesTable;
  candles: CandlesTable;
  fx_daily: FxDailyTable;
  backfill_state: BackfillStateTable;
  users: UsersTable;
  sessions: SessionsTable;
  usage_daily: UsageDailyTable;
  cluster_lease: ClusterLeaseTable;
  market_state: MarketStateTable;
  change_counters: ChangeCountersTable;
}
