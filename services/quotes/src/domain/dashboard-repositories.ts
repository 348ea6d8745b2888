/** Dashboard accounts, sessions and daily usage: the store side of the account dashboard. */

export interface UserRecord {
  id: string;
  /** Lower-cased and trimmed; unique. */
  email: string;
  /** `scrypt$N$r$p$salt$hash` (see accounts/passwords.ts); the password itself is never stored. */
  passwordHash: string;
  planId: string;
  /** The user's live API token (tokens.id); null before the first one is issued. */
  tokenId: string | null;
  createdAt: number;
}

export interface UserRepository {
  /** Rejects when the email (or id) is already taken. */
  insert(rec: UserRecord): Promise<void>;
  findByEmail(email: string): Promise<UserRecord | undefined>;
  findById(id: string): Promise<UserRecord | undefined>;
  setToken(userId: string, tokenId: string): Promise<void>;
  /** False when no user has that id. */
  setPlan(userId: string, planId: string): Promise<boolean>;
}

export interface SessionRecord {
  /** Hex SHA-256 of the session id; the id itself lives only in the browser's cookie. */
  idHash: string;
  userId: string;
  createdAt: number;
  expiresAt: number;
}

export interface SessionRepository {
  insert(rec: SessionRecord): Promise<void>;
  find(idHash: string): Promise<SessionRecord | undefined>;
  delete(idHash: string): Promise<void>;
  /** Removes sessions that expired before `now`; returns how many. */
  deleteExpired(now: number): Promise<number>;
}

export interface DailyUsageRow {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  count: number;
}

/** Requests per token per UTC day, for the dashboard's chart (the quota itself is monthly). */
export interface DailyUsageRepository {
  add(tokenId: string, day: string, delta: number): Promise<void>;
  /** Days in [fromDay, toDay] (inclusive) with at least one request, ascending. */
  range(tokenId: string, fromDay: string, toDay: string): Promise<DailyUsageRow[]>;
}
