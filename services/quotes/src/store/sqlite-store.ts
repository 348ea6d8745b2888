import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Candle } from '../domain/market.js';
import { KyselyStore } from './kysely-store.js';
import type { Database, TokensTable } from './schema.js';
import type { TokenRecord } from '../domain/repositories.js';

type TokenRow = TokensTable;

/** Rows per transaction when bulk loading: big enough to amortise the commit, small enough to keep the WAL short. */
const CHUNK = 50_000;

/** Most distinct SQL texts kept prepared; the service issues a few dozen shapes. */
const STATEMENT_CACHE = 256;

/**
 * Kysely prepares every query afresh, and preparing costs far more than running a point query.
 * The query builder yields the same SQL text for the same query shape, so prepared statements
 * are kept per text and reused (Kysely runs one query at a time per connection, and nothing
 * here streams results, so a statement is never busy when reused).
 */
function withStatementCache(raw: BetterSqlite3.Database): BetterSqlite3.Database {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return new Proxy(raw, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (text: string): BetterSqlite3.Statement => {
          let stmt = cache.get(text);
          if (stmt === undefined) {
            stmt = target.prepare(text);
            if (cache.size >= STATEMENT_CACHE) cache.clear();
            cache.set(text, stmt);
          }
          return stmt;
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * Opens (creating if needed) a SQLite database file. WAL with synchronous=NORMAL keeps commits
 * cheap while staying crash-safe; bulk candle loads bypass the query builder and run one
 * prepared statement inside large transactions.
 */
export function openSqliteStore(file: string): KyselyStore {
  if (file !== ':memory:') {
    // Tokens, sessions and password hashes live here: the directory (when created here) is the
    // owner's alone, and a new database file is created 0600 before SQLite opens it; SQLite
    // gives its -wal and -shm files the database file's permissions.
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    closeSync(openSync(file, 'a', 0o600));
  }
  const raw = new BetterSqlite3(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.pragma('busy_timeout = 5000');
  raw.pragma('cache_size = -65536');
  raw.pragma('temp_store = MEMORY');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  let insertMany: ((id: number, rows: readonly Candle[]) => void) | undefined;
  const bulk = (seriesId: number, candles: readonly Candle[]): Promise<void> => {
    if (insertMany === undefined) {
      const stmt = raw.prepare('INSERT OR REPLACE INTO candles (series_id, t, o, h, l, c, v) VALUES (?, ?, ?, ?, ?, ?, ?)');
      insertMany = raw.transaction((id: number, rows: readonly Candle[]) => {
        for (const k of rows) stmt.run(id, k.time, k.open, k.high, k.low, k.close, k.volume);
      });
    }
    for (let i = 0; i < candles.length; i += CHUNK) insertMany(seriesId, candles.slice(i, i + CHUNK));
    return Promise.resolve();
  };
  // The per-request queries as plain prepared statements: the query builder costs more than the query.
  let findByHash: BetterSqlite3.Statement<[string], TokenRow> | undefined;
  let increment: BetterSqlite3.Statement<[string, string, number], { count: number }> | undefined;
  let candleRows: BetterSqlite3.Statement<[number, number, number], [number, number, number, number, number, number | null]> | undefined;
  let dataVersion: BetterSqlite3.Statement<[], number> | undefined;
  const hotPath = {
    changeVersion: (): number => {
      dataVersion ??= raw.prepare<[], number>('PRAGMA data_version').pluck();
      return dataVersion.get() ?? 0;
    },
    candleRows: (seriesId: number, from: number, to: number): Candle[] => {
      candleRows ??= raw.prepare<[number, number, number], [number, number, number, number, number, number | null]>('SELECT t, o, h, l, c, v FROM candles WHERE series_id = ? AND t >= ? AND t < ? ORDER BY t').raw(true);
      return candleRows.all(seriesId, from, to).map(([time, open, high, low, close, volume]) => ({ time, open, high, low, close, volume }));
    },
    findByHash: (hash: string): Promise<TokenRecord | undefined> => {
      findByHash ??= raw.prepare('SELECT id, name, plan, token_hash, prefix, created_at, revoked_at FROM tokens WHERE token_hash = ?');
      const r = findByHash.get(hash);
      return Promise.resolve(
        r === undefined
          ? undefined
          : { id: r.id, name: r.name, planId: r.plan, tokenHash: r.token_hash, prefix: r.prefix, createdAt: r.created_at, revokedAt: r.revoked_at },
      );
    },
    incrementIfBelow: (tokenId: string, month: string, limit: number): Promise<number | undefined> => {
      if (limit <= 0) return Promise.resolve(undefined);
      increment ??= raw.prepare(
        'INSERT INTO usage (token_id, month, count) VALUES (?, ?, 1) ON CONFLICT (token_id, month) DO UPDATE SET count = usage.count + 1 WHERE usage.count < ? RETURNING count',
      );
      return Promise.resolve(increment.get(tokenId, month, limit)?.count);
    },
  };
  // Kysely's destroy() closes the better-sqlite3 handle itself.
  return new KyselyStore(db, 'sqlite', bulk, () => Promise.resolve(), hotPath);
}
