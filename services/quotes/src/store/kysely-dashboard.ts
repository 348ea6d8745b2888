import { sql, type Kysely } from 'kysely';
import type { DailyUsageRepository, DailyUsageRow, SessionRecord, SessionRepository, UserRecord, UserRepository } from '../domain/dashboard-repositories.js';
import type { Database, UsersTable } from './schema.js';

function toUser(r: UsersTable): UserRecord {
  return { id: r.id, email: r.email, passwordHash: r.password_hash, planId: r.plan, tokenId: r.token_id, createdAt: Number(r.created_at) };
}

export class KyselyUsers implements UserRepository {
  constructor(private readonly db: Kysely<Database>) {}
  async insert(rec: UserRecord): Promise<void> {
    await this.db
      .insertInto('users')
      .values({ id: rec.id, email: rec.email, password_hash: rec.passwordHash, plan: rec.planId, token_id: rec.tokenId, created_at: rec.createdAt })
      .execute();
  }
  async findByEmail(email: string): Promise<UserRecord | undefined> {
    const r = await this.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
    return r === undefined ? undefined : toUser(r);
  }
  async findById(id: string): Promise<UserRecord | undefined> {
    const r = await this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
    return r === undefined ? undefined : toUser(r);
  }
  async setToken(userId: string, tokenId: string): Promise<void> {
    await this.db.updateTable('users').set({ token_id: tokenId }).where('id', '=', userId).execute();
  }
  async setPlan(userId: string, planId: string): Promise<boolean> {
    const res = await this.db.updateTable('users').set({ plan: planId }).where('id', '=', userId).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }
}

export class KyselySessions implements SessionRepository {
  constructor(private readonly db: Kysely<Database>) {}
  async insert(rec: SessionRecord): Promise<void> {
    await this.db.insertInto('sessions').values({ id_hash: rec.idHash, user_id: rec.userId, created_at: rec.createdAt, expires_at: rec.expiresAt }).execute();
  }
  async find(idHash: string): Promise<SessionRecord | undefined> {
    const r = await this.db.selectFrom('sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
    return r === undefined ? undefined : { idHash: r.id_hash, userId: r.user_id, createdAt: Number(r.created_at), expiresAt: Number(r.expires_at) };
  }
  async delete(idHash: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
  }
  async deleteExpired(now: number): Promise<number> {
    const res = await this.db.deleteFrom('sessions').where('expires_at', '<', now).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}

export class KyselyDailyUsage implements DailyUsageRepository {
  constructor(private readonly db: Kysely<Database>) {}
  async add(tokenId: string, day: string, delta: number): Promise<void> {
    await this.db
      .insertInto('usage_daily')
      .values({ token_id: tokenId, day, count: delta })
      .onConflict((oc) => oc.columns(['token_id', 'day']).doUpdateSet({ count: sql<number>`usage_daily.count + ${delta}` }))
      .execute();
  }
  async range(tokenId: string, fromDay: string, toDay: string): Promise<DailyUsageRow[]> {
    const rows = await this.db.selectFrom('usage_daily').select(['day', 'count']).where('token_id', '=', tokenId).where('day', '>=', fromDay).where('day', '<=', toDay).orderBy('day').execute();
    return rows.map((r) => ({ day: r.day, count: Number(r.count) }));
  }
}
