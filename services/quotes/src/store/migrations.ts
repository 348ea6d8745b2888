import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

/**
 * One list of migrations for both databases; the few dialect differences (identity columns,
 * integer widths, SQLite's WITHOUT ROWID clustering) are spelled out where they occur.
 */
export function migrations(dialect: Dialect): Record<string, Migration> {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  const real = dialect === 'postgres' ? 'double precision' : 'real';
  return {
    '001_initial': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('tokens')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('plan', 'text', (c) => c.notNull())
          .addColumn('token_hash', 'text', (c) => c.notNull().unique())
          .addColumn('prefix', 'text', (c) => c.notNull())
          .addColumn('created_at', big, (c) => c.notNull())
          .addColumn('revoked_at', big)
          .execute();
        await db.schema
          .createTable('usage')
          .addColumn('token_id', 'text', (c) => c.notNull())
          .addColumn('month', 'text', (c) => c.notNull())
          .addColumn('count', 'integer', (c) => c.notNull())
          .addPrimaryKeyConstraint('usage_pk', ['token_id', 'month'])
          .execute();
        await db.schema
          .createTable('candle_series')
          .addColumn('id', dialect === 'postgres' ? 'serial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
          .addColumn('symbol', 'text', (c) => c.notNull())
          .addColumn('base', 'text', (c) => c.notNull())
          .addColumn('cov_from', big)
          .addColumn('cov_to', big)
          .addUniqueConstraint('candle_series_symbol_base', ['symbol', 'base'])
          .execute();
        // Candles are clustered by (series, time): range reads are one index walk.
        const candles = db.schema
          .createTable('candles')
          .addColumn('series_id', 'integer', (c) => c.notNull())
          .addColumn('t', big, (c) => c.notNull())
          .addColumn('o', real, (c) => c.notNull())
          .addColumn('h', real, (c) => c.notNull())
          .addColumn('l', real, (c) => c.notNull())
          .addColumn('c', real, (c) => c.notNull())
          .addColumn('v', real, (c) => c.notNull())
          .addPrimaryKeyConstraint('candles_pk', ['series_id', 't']);
        await (dialect === 'sqlite' ? candles.modifyEnd(sql`without rowid`) : candles).execute();
      },
    },
    // Real market data: daily FX fixings for historical conversion, and backfill progress.
    '002_market_data': {
      async up(db: Kysely<unknown>) {
        const fx = db.schema
          .createTable('fx_daily')
          .addColumn('currency', 'text', (c) => c.notNull())
          .addColumn('date', 'text', (c) => c.notNull())
          .addColumn('rate', real, (c) => c.notNull())
          .addColumn('source', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('fx_daily_pk', ['currency', 'date']);
        await (dialect === 'sqlite' ? fx.modifyEnd(sql`without rowid`) : fx).execute();
        await db.schema
          .createTable('backfill_state')
          .addColumn('symbol', 'text', (c) => c.notNull())
          .addColumn('base', 'text', (c) => c.notNull())
          .addColumn('from_t', big, (c) => c.notNull())
          .addColumn('cursor_t', big, (c) => c.notNull())
          .addColumn('done', 'integer', (c) => c.notNull())
          .addColumn('updated_at', big, (c) => c.notNull())
          .addColumn('last_error', 'text')
          .addPrimaryKeyConstraint('backfill_state_pk', ['symbol', 'base'])
          .execute();
      },
    },
    // Account dashboard (issue 8): users with password hashes, sessions by hashed id, and daily
    // request counts per token for the usage chart.
    '003_dashboard_accounts': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('users')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('email', 'text', (c) => c.notNull().unique())
          .addColumn('password_hash', 'text', (c) => c.notNull())
          .addColumn('plan', 'text', (c) => c.notNull())
          .addColumn('token_id', 'text')
          .addColumn('created_at', big, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('sessions')
          .addColumn('id_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('created_at', big, (c) => c.notNull())
          .addColumn('expires_at', big, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();
        const daily = db.schema
          .createTable('usage_daily')
          .addColumn('token_id', 'text', (c) => c.notNull())
          .addColumn('day', 'text', (c) => c.notNull())
          .addColumn('count', 'integer', (c) => c.notNull())
          .addPrimaryKeyConstraint('usage_daily_pk', ['token_id', 'day']);
        await (dialect === 'sqlite' ? daily.modifyEnd(sql`without rowid`) : daily).execute();
      },
    },
    // Issue 14: a candle's volume is the exchange's own quote-asset volume, or NULL when the
    // exchange reports only base volume (it used to be approximated as base volume x close).
    // SQLite cannot drop NOT NULL in place, so the table is rebuilt (same clustering, same rows).
    '004_candle_volume_nullable': {
      async up(db: Kysely<unknown>) {
        if (dialect === 'postgres') {
          await sql`ALTER TABLE candles ALTER COLUMN v DROP NOT NULL`.execute(db);
          return;
        }
        await db.schema
          .createTable('candles_004')
          .addColumn('series_id', 'integer', (c) => c.notNull())
          .addColumn('t', big, (c) => c.notNull())
          .addColumn('o', real, (c) => c.notNull())
          .addColumn('h', real, (c) => c.notNull())
          .addColumn('l', real, (c) => c.notNull())
          .addColumn('c', real, (c) => c.notNull())
          .addColumn('v', real)
          .addPrimaryKeyConstraint('candles_pk', ['series_id', 't'])
          .modifyEnd(sql`without rowid`)
          .execute();
        await sql`INSERT INTO candles_004 (series_id, t, o, h, l, c, v) SELECT series_id, t, o, h, l, c, v FROM candles`.execute(db);
        await db.schema.dropTable('candles').execute();
        await sql`ALTER TABLE candles_004 RENAME TO candles`.execute(db);
      },
    },
    // Issue 14, several replicas on PostgreSQL: the ingest lease (one row per lease name; the
    // fence increments with every new holder) and the shared market state the ingesting replica
    // writes and the others read (version increments with every write). Created on SQLite too,
    // where one process never uses them, so both dialects keep one migration list.
    '005_replicas': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('cluster_lease')
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('holder', 'text', (c) => c.notNull())
          .addColumn('fence', big, (c) => c.notNull())
          // Milliseconds since the epoch on the database's clock (the only clock compared).
          .addColumn('expires_at', big, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('market_state')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('version', big, (c) => c.notNull())
          .addColumn('fence', big, (c) => c.notNull())
          .addColumn('fetched_at', big, (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .execute();
        // Counters other replicas poll to know when to drop a cache: `tokens` moves on every
        // change to a token (revocation, plan), so a replica caching resolved tokens sees a
        // revocation made anywhere within one poll. Kept by a trigger, so no writer can forget.
        await db.schema
          .createTable('change_counters')
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('version', big, (c) => c.notNull())
          .execute();
        await sql`INSERT INTO change_counters (name, version) VALUES ('tokens', 0)`.execute(db);
        if (dialect === 'postgres') {
          await sql`CREATE FUNCTION bump_tokens_version() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE change_counters SET version = version + 1 WHERE name = 'tokens'; RETURN NULL; END $$`.execute(db);
          await sql`CREATE TRIGGER tokens_changed AFTER UPDATE OR DELETE ON tokens FOR EACH STATEMENT EXECUTE FUNCTION bump_tokens_version()`.execute(db);
        }
      },
    },
  };
}

class StaticProvider implements MigrationProvider {
  constructor(private readonly list: Record<string, Migration>) {}
  getMigrations(): Promise<Record<string, Migration>> {
    return Promise.resolve(this.list);
  }
}

export async function migrateToLatest(db: Kysely<unknown>, dialect: Dialect): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new StaticProvider(migrations(dialect)) });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) throw error instanceof Error ? error : new Error('migration failed', { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
