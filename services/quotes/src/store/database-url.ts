import { join } from 'node:path';

/** Which database a DATABASE_URL names; the composition root opens the matching store. */
export type DatabaseTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string } | { kind: 'memory' };

/**
 * Reads DATABASE_URL: unset -> SQLite file in the data directory, `postgres://` /
 * `postgresql://` -> PostgreSQL, `sqlite:<path>` -> that SQLite file, `memory:` -> nothing
 * persisted; undefined for any other value.
 */
export function parseDatabaseUrl(databaseUrl: string | undefined, dataDir: string): DatabaseTarget | undefined {
  if (databaseUrl === undefined) return { kind: 'sqlite', file: join(dataDir, 'quotes.sqlite') };
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return { kind: 'postgres', url: databaseUrl };
  if (databaseUrl.startsWith('sqlite:')) return { kind: 'sqlite', file: databaseUrl.slice('sqlite:'.length).replace(/^\/\//, '') };
  if (databaseUrl === 'memory:') return { kind: 'memory' };
  return undefined;
}

/** DATABASE_URL values parseDatabaseUrl accepts, for settings validation. */
export function isSupportedDatabaseUrl(v: string): boolean {
  return parseDatabaseUrl(v, '') !== undefined;
}

/** The URL with its password hidden, for error messages and logs. */
export function redactDatabaseUrl(databaseUrl: string): string {
  return databaseUrl.replace(/\/\/[^@/]*@/, '//***@');
}
