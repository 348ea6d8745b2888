import type { DailyUsageRepository, SessionRepository, UserRepository } from '../domain/dashboard-repositories.js';
import { KyselyDailyUsage, KyselySessions, KyselyUsers } from './kysely-dashboard.js';
import { sql, type Kysely } from 'kysely';
import type { BaseInterval } from '../domain/intervals.js';
import type { Candle, DailyRate } from '../domain/market.js';
import { migrateToLatest, type Dialect } from './migrations.js';
import type { Database, TokensTable } from './schema.js';
import type { BackfillState, BackfillStateRepository, CandleBucket, CandleRepository, Coverage, FxRateRepository, PoolStats, Store, TokenRecord, TokenRepository, UsageRepository, UsageRow } from '../domain/repositories.js';

/** Writes many candles of one series at once; each dialect has its own fastest way. */
export type BulkCandleWriter = (seriesId: number, candles: readonly Candle[]) => Promise<void>;

function toRecord(r: TokensTable): TokenRecord {
  return {
    id: r.id,
    name: r.name,
    planId: r.plan,
    tokenHash: r.token_hash,
    prefix: r.prefix,
    createdAt: Number(r.created_at),
    revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
  };
}

/** A dialect's own answer to a repository's per-request query (prepared statement), used instead of the query builder. */
type FindByHash = TokenRepository['findByHash'];
type IncrementIfBelow = UsageRepository['incrementIfBelow'];

class KyselyTokens implements TokenRepository {
  constructor(
    private readonly db: Kysely<Database>,
    /** The dialect's token lookup, when it has one (SQLite's prepared statement). */
    private readonly lookup: FindByHash | undefined = undefined,
  ) {}
  async insert(rec: TokenRecord): Promise<void> {
    await this.db
      .insertInto('tokens')
      .values({ id: rec.id, name: rec.name, plan: rec.planId, token_hash: rec.tokenHash, prefix: rec.prefix, created_at: rec.createdAt, revoked_at: rec.revokedAt })
      .execute();
  }
  findByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    // Handed on as it is (no extra promise hop on the per-request path).
    return this.lookup !== undefined ? this.lookup(tokenHash) : this.queryByHash(tokenHash);
  }
  private async queryByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    const r = await this.db.selectFrom('tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    return r === undefined ? undefined : toRecord(r);
  }
  async findById(id: string): Promise<TokenRecord | undefined> {
    const r = await this.db.selectFrom('tokens').selectAll().where('id', '=', id).executeTakeFirst();
    return r === undefined ? undefined : toRecord(r);
  }
  async findByIds(ids: readonly string[]): Promise<TokenRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('tokens').selectAll().where('id', 'in', [...ids]).execute();
    return rows.map(toRecord);
  }
  async list(): Promise<TokenRecord[]> {
    const rows = await this.db.selectFrom('tokens').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }
  async setPlan(id: string, planId: string): Promise<boolean> {
    const res = await this.db.updateTable('tokens').set({ plan: planId }).where('id', '=', id).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }
  async revoke(id: string, at: number): Promise<boolean> {
    const res = await this.db.updateTable('tokens').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }
}

class KyselyUsage implements UsageRepository {
  constructor(
    private readonly db: Kysely<Database>,
    /** The dialect's conditional increment, when it has one (SQLite's prepared statement). */
    private readonly increment: IncrementIfBelow | undefined = undefined,
  ) {}
  incrementIfBelow(tokenId: string, month: string, limit: number): Promise<number | undefined> {
    return this.increment !== undefined ? this.increment(tokenId, month, limit) : this.queryIncrement(tokenId, month, limit);
  }
  private async queryIncrement(tokenId: string, month: string, limit: number): Promise<number | undefined> {
    if (limit <= 0) return undefined;
    const row = await this.db
      .insertInto('usage')
      .values({ token_id: tokenId, month, count: 1 })
      .onConflict((oc) =>
        oc
          .columns(['token_id', 'month'])
          .doUpdateSet({ count: sql<number>`usage.count + 1` })
          .where('usage.count', '<', limit),
      )
      .returning('count')
      .executeTakeFirst();
    return row === undefined ? undefined : Number(row.count);
  }
  async add(tokenId: string, month: string, delta: number): Promise<number> {
    const row = await this.db
      .insertInto('usage')
      .values({ token_id: tokenId, month, count: delta })
      .onConflict((oc) => oc.columns(['token_id', 'month']).doUpdateSet({ count: sql<number>`usage.count + ${delta}` }))
      .returning('count')
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }
  async get(tokenId: string, month: string): Promise<number> {
    const r = await this.db.selectFrom('usage').select('count').where('token_id', '=', tokenId).where('month', '=', month).executeTakeFirst();
    return r === undefined ? 0 : Number(r.count);
  }
  async listMonth(month: string): Promise<UsageRow[]> {
    const rows = await this.db.selectFrom('usage').selectAll().where('month', '=', month).orderBy('token_id').execute();
    return rows.map((r) => ({ tokenId: r.token_id, month: r.month, count: Number(r.count) }));
  }
}

/** Reads candles of a series id with open time in [from, to), ascending. */
export type CandleRowReader = (seriesId: number, from: number, to: number) => Candle[];

class KyselyCandles implements CandleRepository {
  private readonly ids = new Map<string, number>();
  constructor(
    private readonly db: Kysely<Database>,
    private readonly bulk: BulkCandleWriter,
    private readonly rows?: CandleRowReader,
  ) {}

  private async seriesId(symbol: string, base: BaseInterval, create: boolean): Promise<number | undefined> {
    const key = `${symbol}\u0000${base}`;
    const cached = this.ids.get(key);
    if (cached !== undefined) return cached;
    const find = async (): Promise<number | undefined> => {
      const r = await this.db.selectFrom('candle_series').select('id').where('symbol', '=', symbol).where('base', '=', base).executeTakeFirst();
      return r === undefined ? undefined : Number(r.id);
    };
    let id = await find();
    if (id === undefined && create) {
      await this.db
        .insertInto('candle_series')
        .values({ symbol, base, cov_from: null, cov_to: null })
        .onConflict((oc) => oc.columns(['symbol', 'base']).doNothing())
        .execute();
      id = await find();
    }
    if (id !== undefined) this.ids.set(key, id);
    return id;
  }

  async upsert(symbol: string, base: BaseInterval, candles: readonly Candle[]): Promise<number> {
    if (candles.length === 0) return 0;
    const id = await this.seriesId(symbol, base, true);
    if (id === undefined) throw new Error(`could not create series ${symbol}/${base}`);
    await this.bulk(id, candles);
    return candles.length;
  }

  async range(symbol: string, base: BaseInterval, from: number, to: number): Promise<Candle[]> {
    const id = await this.seriesId(symbol, base, false);
    if (id === undefined) return [];
    if (this.rows !== undefined) return this.rows(id, from, to);
    const rows = await this.db
      .selectFrom('candles')
      .select(['t', 'o', 'h', 'l', 'c', 'v'])
      .where('series_id', '=', id)
      .where('t', '>=', from)
      .where('t', '<', to)
      .orderBy('t')
      .execute();
    return rows.map((r) => ({ time: Number(r.t), open: r.o, high: r.h, low: r.l, close: r.c, volume: r.v }));
  }

  async coverage(symbol: string, base: BaseInterval): Promise<Coverage | undefined> {
    const r = await this.db.selectFrom('candle_series').select(['cov_from', 'cov_to']).where('symbol', '=', symbol).where('base', '=', base).executeTakeFirst();
    if (r === undefined || r.cov_from === null || r.cov_to === null) return undefined;
    return { from: Number(r.cov_from), to: Number(r.cov_to) };
  }

  async setCoverage(symbol: string, base: BaseInterval, coverage: Coverage): Promise<void> {
    const id = await this.seriesId(symbol, base, true);
    if (id === undefined) throw new Error(`could not create series ${symbol}/${base}`);
    await this.db.updateTable('candle_series').set({ cov_from: coverage.from, cov_to: coverage.to }).where('id', '=', id).execute();
  }

  async count(symbol: string, base: BaseInterval, from: number, to: number): Promise<number> {
    const id = await this.seriesId(symbol, base, false);
    if (id === undefined) return 0;
    const r = await this.db
      .selectFrom('candles')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('series_id', '=', id)
      .where('t', '>=', from)
      .where('t', '<', to)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  async buckets(symbol: string, base: BaseInterval, from: number, to: number, step: number, offset: number): Promise<CandleBucket[]> {
    if (!Number.isSafeInteger(step) || step <= 0 || !Number.isSafeInteger(offset)) throw new Error(`bad bucket step ${step} / offset ${offset}`);
    const id = await this.seriesId(symbol, base, false);
    if (id === undefined) return [];
    // Bucket start = t - ((t - offset) mod step), with a mod that stays positive in both dialects.
    // Step and offset are validated integers, inlined so each shape is one prepared statement.
    const len = sql.lit(step);
    const off = sql.lit(offset);
    const res = await sql<{ b: number; t0: number; t1: number; h: number; l: number; v: number | null; nv: number; n: number; o: number; c: number }>`
      SELECT g.b, g.t0, g.t1, g.h, g.l, g.v, g.nv, g.n, fo.o, lc.c
      FROM (
        SELECT t - ((((t - ${off}) % ${len}) + ${len}) % ${len}) AS b, MIN(t) AS t0, MAX(t) AS t1, MAX(h) AS h, MIN(l) AS l, SUM(v) AS v, COUNT(v) AS nv, COUNT(*) AS n
        FROM candles WHERE series_id = ${id} AND t >= ${from} AND t < ${to}
        GROUP BY t - ((((t - ${off}) % ${len}) + ${len}) % ${len})
      ) g
      JOIN candles fo ON fo.series_id = ${id} AND fo.t = g.t0
      JOIN candles lc ON lc.series_id = ${id} AND lc.t = g.t1
      ORDER BY g.b`.execute(this.db);
    return res.rows.map((r) => ({
      time: Number(r.b),
      lastTime: Number(r.t1),
      open: Number(r.o),
      high: Number(r.h),
      low: Number(r.l),
      close: Number(r.c),
      volume: Number(r.nv) < Number(r.n) || r.v === null ? null : Number(r.v),
    }));
  }
}

class KyselyFxRates implements FxRateRepository {
  constructor(private readonly db: Kysely<Database>) {}
  async upsert(currency: string, source: string, rows: readonly DailyRate[]): Promise<number> {
    if (rows.length === 0) return 0;
    await this.db.transaction().execute(async (tx) => {
      for (let i = 0; i < rows.length; i += 1000) {
        await tx
          .insertInto('fx_daily')
          .values(rows.slice(i, i + 1000).map((r) => ({ currency, date: r.date, rate: r.rate, source })))
          .onConflict((oc) => oc.columns(['currency', 'date']).doUpdateSet({ rate: sql`excluded.rate`, source: sql`excluded.source` }))
          .execute();
      }
    });
    return rows.length;
  }
  async range(currency: string, fromDate: string, toDate: string): Promise<DailyRate[]> {
    const rows = await this.db.selectFrom('fx_daily').select(['date', 'rate']).where('currency', '=', currency).where('date', '>=', fromDate).where('date', '<=', toDate).orderBy('date').execute();
    return rows.map((r) => ({ date: r.date, rate: Number(r.rate) }));
  }
  async lastDate(currency: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('fx_daily').select('date').where('currency', '=', currency).orderBy('date', 'desc').limit(1).executeTakeFirst();
    return r?.date;
  }
}

class KyselyBackfillState implements BackfillStateRepository {
  constructor(private readonly db: Kysely<Database>) {}
  private static toState(r: { symbol: string; base: string; from_t: number; cursor_t: number; done: number; updated_at: number; last_error: string | null }): BackfillState {
    return { symbol: r.symbol, base: r.base as BaseInterval, from: Number(r.from_t), cursor: Number(r.cursor_t), done: Number(r.done) === 1, updatedAt: Number(r.updated_at), lastError: r.last_error };
  }
  async get(symbol: string, base: BaseInterval): Promise<BackfillState | undefined> {
    const r = await this.db.selectFrom('backfill_state').selectAll().where('symbol', '=', symbol).where('base', '=', base).executeTakeFirst();
    return r === undefined ? undefined : KyselyBackfillState.toState(r);
  }
  async put(st: BackfillState): Promise<void> {
    const row = { symbol: st.symbol, base: st.base, from_t: st.from, cursor_t: st.cursor, done: st.done ? 1 : 0, updated_at: st.updatedAt, last_error: st.lastError };
    await this.db
      .insertInto('backfill_state')
      .values(row)
      .onConflict((oc) => oc.columns(['symbol', 'base']).doUpdateSet({ from_t: row.from_t, cursor_t: row.cursor_t, done: row.done, updated_at: row.updated_at, last_error: row.last_error }))
      .execute();
  }
  async list(): Promise<BackfillState[]> {
    const rows = await this.db.selectFrom('backfill_state').selectAll().orderBy('symbol').orderBy('base').execute();
    return rows.map((r) => KyselyBackfillState.toState(r));
  }
}

/** The SQL store: one implementation over Kysely for SQLite and PostgreSQL. */
export class KyselyStore implements Store {
  readonly changeVersion?: () => number;
  readonly poolStats?: () => PoolStats;
  readonly tokens: TokenRepository;
  readonly usage: UsageRepository;
  readonly candles: CandleRepository;
  readonly fxRates: FxRateRepository;
  readonly backfill: BackfillStateRepository;
  readonly users: UserRepository;
  readonly sessions: SessionRepository;
  readonly dailyUsage: DailyUsageRepository;
  /**
   * `hotPath` lets a dialect answer the two per-request queries (token lookup, usage increment)
   * without the query builder; everything else goes through Kysely.
   */
  constructor(
    readonly db: Kysely<Database>,
    readonly kind: Dialect,
    bulk: BulkCandleWriter,
    private readonly onClose: () => Promise<void>,
    hotPath: Partial<Pick<TokenRepository, 'findByHash'> & Pick<UsageRepository, 'incrementIfBelow'> & { candleRows: CandleRowReader; changeVersion: () => number; poolStats: () => PoolStats }> = {},
  ) {
    if (hotPath.changeVersion !== undefined) this.changeVersion = hotPath.changeVersion;
    if (hotPath.poolStats !== undefined) this.poolStats = hotPath.poolStats;
    // The dialect's hot-path statements are handed to the repositories (no method is replaced).
    this.tokens = new KyselyTokens(db, hotPath.findByHash);
    this.usage = new KyselyUsage(db, hotPath.incrementIfBelow);
    this.candles = new KyselyCandles(db, bulk, hotPath.candleRows);
    this.fxRates = new KyselyFxRates(db);
    this.backfill = new KyselyBackfillState(db);
    this.users = new KyselyUsers(db);
    this.sessions = new KyselySessions(db);
    this.dailyUsage = new KyselyDailyUsage(db);
  }
  async migrate(): Promise<string[]> {
    return await migrateToLatest(this.db as unknown as Kysely<unknown>, this.kind);
  }
  async close(): Promise<void> {
    await this.db.destroy();
    await this.onClose();
  }
}
