import type { DailyUsageRepository, DailyUsageRow, SessionRecord, SessionRepository, UserRecord, UserRepository } from '../domain/dashboard-repositories.js';

export class MemoryUsers implements UserRepository {
  private readonly byId = new Map<string, UserRecord>();
  insert(rec: UserRecord): Promise<void> {
    for (const u of this.byId.values()) if (u.email === rec.email) return Promise.reject(new Error('duplicate email'));
    if (this.byId.has(rec.id)) return Promise.reject(new Error('duplicate user id'));
    this.byId.set(rec.id, { ...rec });
    return Promise.resolve();
  }
  findByEmail(email: string): Promise<UserRecord | undefined> {
    for (const u of this.byId.values()) if (u.email === email) return Promise.resolve({ ...u });
    return Promise.resolve(undefined);
  }
  findById(id: string): Promise<UserRecord | undefined> {
    const u = this.byId.get(id);
    return Promise.resolve(u === undefined ? undefined : { ...u });
  }
  setToken(userId: string, tokenId: string): Promise<void> {
    const u = this.byId.get(userId);
    if (u !== undefined) u.tokenId = tokenId;
    return Promise.resolve();
  }
  setPlan(userId: string, planId: string): Promise<boolean> {
    const u = this.byId.get(userId);
    if (u !== undefined) u.planId = planId;
    return Promise.resolve(u !== undefined);
  }
}

export class MemorySessions implements SessionRepository {
  private readonly byHash = new Map<string, SessionRecord>();
  insert(rec: SessionRecord): Promise<void> {
    if (this.byHash.has(rec.idHash)) return Promise.reject(new Error('duplicate session'));
    this.byHash.set(rec.idHash, { ...rec });
    return Promise.resolve();
  }
  find(idHash: string): Promise<SessionRecord | undefined> {
    const s = this.byHash.get(idHash);
    return Promise.resolve(s === undefined ? undefined : { ...s });
  }
  delete(idHash: string): Promise<void> {
    this.byHash.delete(idHash);
    return Promise.resolve();
  }
  deleteExpired(now: number): Promise<number> {
    let n = 0;
    for (const [k, s] of this.byHash) {
      if (s.expiresAt < now) {
        this.byHash.delete(k);
        n++;
      }
    }
    return Promise.resolve(n);
  }
}

export class MemoryDailyUsage implements DailyUsageRepository {
  private readonly counts = new Map<string, number>();
  add(tokenId: string, day: string, delta: number): Promise<void> {
    const key = `${tokenId}\u0000${day}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + delta);
    return Promise.resolve();
  }
  range(tokenId: string, fromDay: string, toDay: string): Promise<DailyUsageRow[]> {
    const out: DailyUsageRow[] = [];
    for (const [key, count] of this.counts) {
      const [id, day = ''] = key.split('\u0000');
      if (id === tokenId && day >= fromDay && day <= toDay) out.push({ day, count });
    }
    return Promise.resolve(out.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0)));
  }
}
