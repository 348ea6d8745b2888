import { join } from 'node:path';
import { MemoryStore } from './memory-store.js';
import { openPostgresStore } from './postgres-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { Store } from './types.js';

/**
 * Picks the store from DATABASE_URL: unset -> SQLite file in the data directory,
 * `postgres://` / `postgresql://` -> PostgreSQL, `sqlite:<path>` -> that SQLite file,
 * `memory:` -> nothing persisted.
 */
export function openStore(databaseUrl: string | undefined, dataDir: string): Store {
  if (databaseUrl === undefined) return openSqliteStore(join(dataDir, 'quotes.sqlite'));
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return openPostgresStore(databaseUrl);
  if (databaseUrl.startsWith('sqlite:')) return openSqliteStore(databaseUrl.slice('sqlite:'.length).replace(/^\/\//, ''));
  if (databaseUrl === 'memory:') return new MemoryStore();
  throw new Error(`unsupported DATABASE_URL scheme: ${databaseUrl.replace(/\/\/[^@/]*@/, '//***@')}`);
}

/** DATABASE_URL values accepted by openStore, for settings validation. */
export function isSupportedDatabaseUrl(v: string): boolean {
  return /^postgres(ql)?:\/\//.test(v) || v.startsWith('sqlite:') || v === 'memory:';
}
