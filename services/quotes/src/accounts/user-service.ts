import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { QuotesError } from '../errors.js';
import type { DailyUsageRow, SessionRepository, UserRecord, UserRepository } from '../domain/dashboard-repositories.js';
import type { TokenRecord, UsageRepository } from '../domain/repositories.js';
import type { AccountService } from './account-service.js';
import type { UsageCounter } from './buffered-usage.js';
import { dayKey, type DailyUsage } from './daily-usage.js';
import { DEFAULT_SCRYPT, hashPassword, verifyPassword, type ScryptParams } from './passwords.js';
import type { Plan, PlanCatalog } from './plans.js';
import type { RandomBytes } from './tokens.js';
import { monthKey, nextMonthStart } from './usage-month.js';

export interface UserServiceDeps {
  users: UserRepository;
  sessions: SessionRepository;
  accounts: AccountService;
  plans: PlanCatalog;
  /** Monthly counts as the quota sees them (pending write-behind counts included). */
  usage: UsageCounter;
  /** The stored monthly counts, to carry a rotated token's usage over. */
  usageStore: Pick<UsageRepository, 'add'>;
  daily: DailyUsage;
  /** Writes buffered usage, so a rotation carries over every counted request. */
  flushUsage: () => Promise<void>;
  clock: Clock;
  random: RandomBytes;
  /** Plan of new sign-ups (DASHBOARD_SIGNUP_PLAN). */
  signupPlan: string;
  sessionTtlMs: number;
  scrypt?: ScryptParams;
}

export interface AccountOverview {
  email: string;
  plan: Plan;
  token: { id: string; prefix: string; createdAt: string } | null;
  usage: {
    month: string;
    count: number;
    limit: number;
    remaining: number;
    resetAt: string;
    /** Every UTC day of the month so far (zeros included), oldest first. */
    daily: DailyUsageRow[];
  };
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@.]{1,63}$/;
export const PASSWORD_MIN = 10;
const PASSWORD_MAX = 200;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Hex SHA-256 of a session id: what the store keeps instead of the id. */
export function sessionHash(sessionId: string): string {
  return createHash('sha256').update(sessionId, 'utf8').digest('hex');
}

function daysOfMonthSoFar(now: number): string[] {
  const d = new Date(now);
  const out: string[] = [];
  for (let day = 1; day <= d.getUTCDate(); day++) out.push(dayKey(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), day)));
  return out;
}

/**
 * Dashboard users: sign-up and sign-in with scrypt-hashed passwords, sessions by random id (only
 * its hash stored), the user's one live API token (rotation revokes the old one at once and
 * carries this month's usage over, so rotating never resets a quota), and plan changes.
 */
export class UserService {
  private dummyHash: Promise<string> | undefined;
  constructor(private readonly deps: UserServiceDeps) {
    if (!deps.plans.has(deps.signupPlan)) throw new Error(`DASHBOARD_SIGNUP_PLAN: unknown plan "${deps.signupPlan}"`);
  }

  /**
   * Registers `email` with `password` unless the email is taken. The caller's answer must not
   * depend on the result (sign-up would otherwise tell anyone which emails have accounts), so the
   * work is the same either way: the password is hashed before the email is looked up, and a
   * taken email costs the lookup that a free one costs before its insert. No token yet: the
   * first sign-in issues it (`issueFirstToken`), so it is only ever shown to whoever knows the
   * password. Returns the new user, or undefined when the email was taken.
   */
  async signUp(emailRaw: string, password: string): Promise<UserRecord | undefined> {
    const email = normalizeEmail(emailRaw);
    if (!EMAIL.test(email)) throw new QuotesError('SIGNUP_INVALID', { reason: 'Enter a valid email address' });
    if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
      throw new QuotesError('SIGNUP_INVALID', { reason: `The password must have ${PASSWORD_MIN} to ${PASSWORD_MAX} characters` });
    }
    const passwordHash = await hashPassword(password, this.deps.scrypt ?? DEFAULT_SCRYPT, this.deps.random);
    if ((await this.deps.users.findByEmail(email)) !== undefined) return undefined;
    const user: UserRecord = {
      id: 'usr_' + this.deps.random(9).toString('hex'),
      email,
      passwordHash,
      planId: this.deps.signupPlan,
      tokenId: null,
      createdAt: this.deps.clock.now(),
    };
    try {
      await this.deps.users.insert(user);
    } catch {
      // The unique index caught a concurrent sign-up with the same email.
      return undefined;
    }
    return user;
  }

  /**
   * The user's first API token, created at their first sign-in and returned once (only its hash
   * is stored); undefined when they already have one. Two first sign-ins at once leave exactly
   * one live token: the loser revokes its own.
   */
  async issueFirstToken(user: UserRecord): Promise<string | undefined> {
    if (user.tokenId !== null) return undefined;
    const { record, token } = await this.deps.accounts.createToken(`dashboard:${user.email}`, user.planId);
    await this.deps.users.setToken(user.id, record.id);
    const now = await this.deps.users.findById(user.id);
    if (now?.tokenId !== record.id) {
      await this.deps.accounts.revoke(record.id);
      return undefined;
    }
    return token;
  }

  /** The user when the password matches; the same work is done for unknown emails (no timing oracle). */
  async signIn(emailRaw: string, password: string): Promise<UserRecord | undefined> {
    const user = password.length > PASSWORD_MAX ? undefined : await this.deps.users.findByEmail(normalizeEmail(emailRaw));
    if (user === undefined) {
      this.dummyHash ??= hashPassword('not a password of anyone', this.deps.scrypt ?? DEFAULT_SCRYPT, this.deps.random);
      await verifyPassword(password.slice(0, PASSWORD_MAX), await this.dummyHash);
      return undefined;
    }
    return (await verifyPassword(password, user.passwordHash)) ? user : undefined;
  }

  /** A fresh session id (256 random bits) for the user; only its hash is stored. */
  async startSession(userId: string): Promise<string> {
    const now = this.deps.clock.now();
    const id = this.deps.random(32).toString('base64url');
    await this.deps.sessions.insert({ idHash: sessionHash(id), userId, createdAt: now, expiresAt: now + this.deps.sessionTtlMs });
    // Expired sessions are swept on sign-in, which is rare enough to cost nothing.
    await this.deps.sessions.deleteExpired(now);
    return id;
  }

  async resolveSession(sessionId: string | undefined): Promise<UserRecord | undefined> {
    if (sessionId === undefined || sessionId.length === 0 || sessionId.length > 100) return undefined;
    const s = await this.deps.sessions.find(sessionHash(sessionId));
    if (s === undefined || s.expiresAt <= this.deps.clock.now()) return undefined;
    return await this.deps.users.findById(s.userId);
  }

  async endSession(sessionId: string | undefined): Promise<void> {
    if (sessionId !== undefined && sessionId.length > 0 && sessionId.length <= 100) await this.deps.sessions.delete(sessionHash(sessionId));
  }

  /** New token on the user's plan; the old one is revoked before this returns. */
  async rotateToken(user: UserRecord): Promise<{ record: TokenRecord; token: string }> {
    const fresh = await this.deps.accounts.createToken(`dashboard:${user.email}`, user.planId);
    const old = user.tokenId;
    if (old !== null) await this.deps.accounts.revoke(old);
    await this.deps.users.setToken(user.id, fresh.record.id);
    if (old !== null) {
      const now = this.deps.clock.now();
      await this.deps.flushUsage();
      const month = monthKey(now);
      const used = await this.deps.usage.get(old, month);
      if (used > 0) await this.deps.usageStore.add(fresh.record.id, month, used);
      const days = daysOfMonthSoFar(now);
      for (const row of await this.deps.daily.range(old, days[0] ?? '', days[days.length - 1] ?? '')) await this.deps.daily.add(fresh.record.id, row.day, row.count);
    }
    return fresh;
  }

  /** Operators (CLI): moves the user and their live token to another plan. */
  async setPlan(emailRaw: string, planId: string): Promise<UserRecord | undefined> {
    if (!this.deps.plans.has(planId)) throw new Error(`unknown plan "${planId}" (plans: ${[...this.deps.plans.keys()].join(', ')})`);
    const user = await this.deps.users.findByEmail(normalizeEmail(emailRaw));
    if (user === undefined) return undefined;
    await this.deps.users.setPlan(user.id, planId);
    if (user.tokenId !== null) await this.deps.accounts.setPlan(user.tokenId, planId);
    return { ...user, planId };
  }

  async overview(user: UserRecord): Promise<AccountOverview> {
    const plan = this.deps.plans.get(user.planId);
    if (plan === undefined) throw new Error(`user ${user.id} has unknown plan ${user.planId}`);
    const now = this.deps.clock.now();
    const month = monthKey(now);
    const days = daysOfMonthSoFar(now);
    let token: AccountOverview['token'] = null;
    let count = 0;
    let daily: DailyUsageRow[] = days.map((day) => ({ day, count: 0 }));
    if (user.tokenId !== null) {
      const rec = await this.deps.accounts.findToken(user.tokenId);
      if (rec !== undefined) token = { id: rec.id, prefix: rec.prefix, createdAt: new Date(rec.createdAt).toISOString() };
      count = await this.deps.usage.get(user.tokenId, month);
      const stored = new Map((await this.deps.daily.range(user.tokenId, days[0] ?? '', days[days.length - 1] ?? '')).map((r) => [r.day, r.count]));
      daily = days.map((day) => ({ day, count: stored.get(day) ?? 0 }));
    }
    const limit = plan.monthlyRequests;
    return {
      email: user.email,
      plan,
      token,
      usage: { month, count, limit, remaining: Math.max(0, limit - count), resetAt: new Date(nextMonthStart(now)).toISOString(), daily },
    };
  }
}
