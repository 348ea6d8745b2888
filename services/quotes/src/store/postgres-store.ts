import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Candle } from '../domain/market.js';
import { KyselyStore } from './kysely-store.js';
import type { Database } from './schema.js';

/** 7 parameters per row; PostgreSQL allows 65 535 parameters per statement. */
const ROWS_PER_INSERT = 5_000;
const INT8_OID = 20;

/**
 * Connects to PostgreSQL. BIGINT columns hold Unix times and counts that fit a double exactly,
 * so they are parsed as numbers for this pool only (no global type-parser change).
 */
export function openPostgresStore(url: string, poolSize = 10): KyselyStore {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (v: string) => Number(v) : (pg.types.getTypeParser(oid, format) as (v: string) => unknown)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client dropped by the server must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const bulk = async (seriesId: number, candles: readonly Candle[]): Promise<void> => {
    await db.transaction().execute(async (tx) => {
      for (let i = 0; i < candles.length; i += ROWS_PER_INSERT) {
        const rows = candles.slice(i, i + ROWS_PER_INSERT).map((k) => ({ series_id: seriesId, t: k.time, o: k.open, h: k.high, l: k.low, c: k.close, v: k.volume }));
        await tx
          .insertInto('candles')
          .values(rows)
          .onConflict((oc) =>
            oc.columns(['series_id', 't']).doUpdateSet({ o: sql`excluded.o`, h: sql`excluded.h`, l: sql`excluded.l`, c: sql`excluded.c`, v: sql`excluded.v` }),
          )
          .execute();
      }
    });
  };
  // The per-request usage increment (write-through, the default on PostgreSQL) as a named prepared
  // statement on the pool: the query builder costs more CPU than the round trip (measured with
  // bench/quotes-replicas.mjs).
  const hotPath = {
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    incrementIfBelow: async (tokenId: string, month: string, limit: number): Promise<number | undefined> => {
      if (limit <= 0) return undefined;
      const r = await pool.query<{ count: number }>({
        name: 'quotes_usage_increment',
        text: 'INSERT INTO usage AS u (token_id, month, count) VALUES ($1, $2, 1) ON CONFLICT (token_id, month) DO UPDATE SET count = u.count + 1 WHERE u.count < $3 RETURNING count',
        values: [tokenId, month, limit],
      });
      const row = r.rows[0];
      return row === undefined ? undefined : Number(row.count);
    },
  };
  // Kysely's destroy() ends the pool.
  return new KyselyStore(db, 'postgres', bulk, () => Promise.resolve(), hotPath);
}
