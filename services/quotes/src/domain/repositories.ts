import type { DailyUsageRepository, SessionRepository, UserRepository } from './dashboard-repositories.js';
import type { BaseInterval } from './intervals.js';
import type { Candle, DailyRate } from './market.js';

export interface TokenRecord {
  id: string;
  name: string;
  planId: string;
  /** Hex SHA-256 of the token; the token itself is never stored. */
  tokenHash: string;
  /** The first characters of the token, to recognise it in listings. */
  prefix: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface TokenRepository {
  insert(rec: TokenRecord): Promise<void>;
  findByHash(tokenHash: string): Promise<TokenRecord | undefined>;
  findById(id: string): Promise<TokenRecord | undefined>;
  /** The records of those of `ids` that exist (any order; at most TOKEN_BATCH ids a call). */
  findByIds(ids: readonly string[]): Promise<TokenRecord[]>;
  list(): Promise<TokenRecord[]>;
  /** Marks the token revoked; false when no live token has that id. */
  revoke(id: string, at: number): Promise<boolean>;
  /** Moves a token to another plan (operators, through the dashboard's user); false when no token has that id. */
  setPlan(id: string, planId: string): Promise<boolean>;
}

/** Most ids one `TokenRepository.findByIds` call takes (SQLite binds at most 32,766 values a statement). */
export const TOKEN_BATCH = 1000;

export interface UsageRow {
  tokenId: string;
  /** `YYYY-MM` (UTC). */
  month: string;
  count: number;
}

export interface UsageRepository {
  /**
   * Adds one request to (token, month) unless the count already reached `limit`; atomic, so
   * concurrent servers sharing the database never push a token past its quota. Returns the new
   * count, or undefined when the quota was already used up.
   */
  incrementIfBelow(tokenId: string, month: string, limit: number): Promise<number | undefined>;
  /** Adds `delta` requests at once (write-behind flushes); returns the new count. */
  add(tokenId: string, month: string, delta: number): Promise<number>;
  get(tokenId: string, month: string): Promise<number>;
  listMonth(month: string): Promise<UsageRow[]>;
}

/** Open times [from, to) of a base series known to be fully stored. */
export interface Coverage {
  from: number;
  to: number;
}

export interface CandleRepository {
  /** Inserts or replaces candles of one series (bulk: one transaction). Returns how many were written. */
  upsert(symbol: string, base: BaseInterval, candles: readonly Candle[]): Promise<number>;
  /** Candles with open time in [from, to), ascending. */
  range(symbol: string, base: BaseInterval, from: number, to: number): Promise<Candle[]>;
  coverage(symbol: string, base: BaseInterval): Promise<Coverage | undefined>;
  setCoverage(symbol: string, base: BaseInterval, coverage: Coverage): Promise<void>;
  /** How many candles have open time in [from, to). */
  count(symbol: string, base: BaseInterval, from: number, to: number): Promise<number>;
  /**
   * Candles with open time in [from, to) aggregated in the database into buckets of `step`
   * seconds whose starts are `offset` modulo `step` (UTC; `step` a multiple of the base length),
   * ascending: open of the first candle, close of the last, max high, min low, summed volume
   * (null when any candle of the bucket has none).
   */
  buckets(symbol: string, base: BaseInterval, from: number, to: number, step: number, offset: number): Promise<CandleBucket[]>;
}

/** One bucket of base candles aggregated by the store (see CandleRepository.buckets). */
export interface CandleBucket extends Candle {
  /** Open time of the bucket's last base candle. */
  lastTime: number;
}

/** Daily USD->currency fixings, kept for historical conversion. */
export interface FxRateRepository {
  /** Inserts or replaces fixings of one currency; returns how many were written. */
  upsert(currency: string, source: string, rows: readonly DailyRate[]): Promise<number>;
  /** Fixings with dates in [fromDate, toDate] (inclusive, `YYYY-MM-DD`), ascending. */
  range(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]>;
  lastDate(currency: string): Promise<string | undefined>;
}

/** Progress of one series' backfill, persisted so a restart resumes where it stopped. */
export interface BackfillState {
  symbol: string;
  base: BaseInterval;
  /** Where the backfill started (Unix seconds). */
  from: number;
  /** Next open time to fetch (Unix seconds). */
  cursor: number;
  /** True once the cursor reached the present; incremental sync takes over. */
  done: boolean;
  updatedAt: number;
  lastError: string | null;
}

export interface BackfillStateRepository {
  get(symbol: string, base: BaseInterval): Promise<BackfillState | undefined>;
  put(state: BackfillState): Promise<void>;
  list(): Promise<BackfillState[]>;
}

/** A connection pool's state, for the metrics. */
export interface PoolStats {
  /** Connections open (idle or lent). */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

export interface Store {
  /** `sqlite`, `postgres` or `memory`. */
  readonly kind: string;
  readonly tokens: TokenRepository;
  readonly usage: UsageRepository;
  readonly candles: CandleRepository;
  readonly fxRates: FxRateRepository;
  readonly backfill: BackfillStateRepository;
  readonly users: UserRepository;
  readonly sessions: SessionRepository;
  readonly dailyUsage: DailyUsageRepository;
  /**
   * A number that changes whenever another connection may have changed the data (SQLite's
   * data_version). Absent when the store cannot tell cheaply; callers then must not cache.
   */
  readonly changeVersion?: () => number;
  /** Connections of the store's pool now (PostgreSQL); absent for stores without one (SQLite, memory). */
  readonly poolStats?: () => PoolStats;
  /** Applies pending migrations; returns the names applied. */
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}
