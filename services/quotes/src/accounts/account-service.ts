import type { Clock } from '../clock.js';
import type { MaybePromise } from '../maybe-promise.js';
import { TOKEN_BATCH, type TokenRecord, type TokenRepository, type UsageRepository } from '../domain/repositories.js';
import type { Plan, PlanCatalog } from './plans.js';
import { displayPrefix, generateToken, hashToken, newTokenId, sameHash, type RandomBytes } from './tokens.js';
import { monthKey } from './usage-month.js';

/** Who is calling: resolved from a token on every request. */
export interface Account {
  tokenId: string;
  name: string;
  plan: Plan;
}

export interface UsageReportRow {
  tokenId: string;
  name: string;
  planId: string;
  month: string;
  count: number;
  limit: number | null;
  revoked: boolean;
}

export interface AccountServiceDeps {
  tokens: TokenRepository;
  usage: UsageRepository;
  plans: PlanCatalog;
  clock: Clock;
  random: RandomBytes;
  /**
   * See Store.changeVersion: when given, resolved tokens are cached until it changes (PostgreSQL
   * replicas pass the polled change counter of cluster/replication.ts instead).
   */
  changeVersion?: (() => number) | undefined;
}

const CACHE_ENTRIES = 10_000;
/** See AccountService.cacheUsable. */
const CHANGE_CHECK_MS = 1;

/**
 * Tokens and their plans. Resolved tokens are cached (by hash) only while the store reports no
 * change from another connection (asked at most once a millisecond), and the cache is dropped on
 * this service's own changes, so a revocation, e.g. by the CLI, takes effect within a
 * millisecond with SQLite. On PostgreSQL the version is a change counter the replicas poll
 * (QUOTES_STATE_POLL_INTERVAL), so a revocation made anywhere is seen within two polls; without a
 * version the store is asked on every request.
 */
export class AccountService {
  private readonly cache = new Map<string, Account>();
  /** Hashes of tokens found in the cache (a SHA-256 per request cost about a tenth of a cached quote); as bounded as the cache. */
  private readonly hashes = new Map<string, string>();
  private cacheVersion: number | undefined;
  private checkedAt = -Infinity;
  /** Moves with every change to the tokens this service makes or sees (see tokensVersion). */
  private generation = 0;
  constructor(private readonly deps: AccountServiceDeps) {}

  async createToken(name: string, planId: string): Promise<{ record: TokenRecord; token: string }> {
    if (!this.deps.plans.has(planId)) throw new Error(`unknown plan "${planId}" (plans: ${[...this.deps.plans.keys()].join(', ')})`);
    const token = generateToken(this.deps.random);
    const record: TokenRecord = {
      id: newTokenId(this.deps.random),
      name,
      planId,
      tokenHash: hashToken(token),
      prefix: displayPrefix(token),
      createdAt: this.deps.clock.now(),
      revokedAt: null,
    };
    await this.deps.tokens.insert(record);
    return { record, token };
  }

  /**
   * Whether the cache may be used, dropping it when the store changed. The store is asked at
   * most once per CHANGE_CHECK_MS (the question costs a few microseconds and two file-lock
   * calls in SQLite), so another process's change is seen within that bound.
   */
  private cacheUsable(): boolean {
    const changeVersion = this.deps.changeVersion;
    if (changeVersion === undefined) return false;
    const t = performance.now();
    if (t - this.checkedAt >= CHANGE_CHECK_MS || t < this.checkedAt) {
      this.checkedAt = t;
      const version = changeVersion();
      if (version !== this.cacheVersion) {
        this.cache.clear();
        this.cacheVersion = version;
        this.generation++;
      }
    }
    return true;
  }

  /**
   * The account of a token, undefined for an unknown or revoked one: at once when the cache holds
   * it (the hash of a token seen before is remembered too), else after the store's lookup.
   */
  authenticate(token: string | undefined): MaybePromise<Account | undefined> {
    if (token === undefined || token.length === 0 || token.length > 200) return undefined;
    const cached = this.cacheUsable();
    const known = this.hashes.get(token);
    const hash = known ?? hashToken(token);
    if (cached) {
      const hit = this.cache.get(hash);
      if (hit !== undefined) {
        if (known === undefined) this.rememberHash(token, hash);
        return hit;
      }
    }
    return this.lookUp(token, hash, cached);
  }

  private async lookUp(token: string, hash: string, cached: boolean): Promise<Account | undefined> {
    const version = this.cacheVersion;
    const rec = await this.deps.tokens.findByHash(hash);
    // The indexed lookup already matched; the constant-time check guards against a store that
    // matches loosely (e.g. collation) without leaking how much of a guess was right.
    if (rec === undefined || rec.revokedAt !== null || !sameHash(rec.tokenHash, hash)) return undefined;
    const plan = this.deps.plans.get(rec.planId);
    if (plan === undefined) return undefined;
    const account = { tokenId: rec.id, name: rec.name, plan };
    // Not cached when the store changed meanwhile (the record may predate the change).
    if (cached && version === this.cacheVersion) {
      if (this.cache.size >= CACHE_ENTRIES) this.cache.clear();
      this.cache.set(hash, account);
      this.rememberHash(token, hash);
    }
    return account;
  }

  /** Bounded as the cache is (all dropped when full). */
  private rememberHash(token: string, hash: string): void {
    if (this.hashes.size >= CACHE_ENTRIES) this.hashes.clear();
    this.hashes.set(token, hash);
  }

  /**
   * A number that moves whenever a token may have been revoked or moved to another plan: by this
   * service, or (seen through the store's change version, asked at most once a millisecond) by
   * another process or replica, within the same delay as the token cache. Undefined when the
   * store cannot tell (then callers must ask `livePlans` every time).
   */
  tokensVersion(): number | undefined {
    if (!this.cacheUsable()) return undefined;
    return this.generation;
  }

  /** The plan id of each live (not revoked) token among `ids`, from the store; unknown and revoked tokens are absent. */
  async livePlans(ids: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (let i = 0; i < ids.length; i += TOKEN_BATCH) {
      for (const r of await this.deps.tokens.findByIds(ids.slice(i, i + TOKEN_BATCH))) {
        if (r.revokedAt === null && this.deps.plans.has(r.planId)) out.set(r.id, r.planId);
      }
    }
    return out;
  }

  async findToken(id: string): Promise<TokenRecord | undefined> {
    return await this.deps.tokens.findById(id);
  }

  async list(): Promise<TokenRecord[]> {
    return await this.deps.tokens.list();
  }

  /** Moves a token to another plan; effective on its next request (the cache is dropped). */
  async setPlan(id: string, planId: string): Promise<boolean> {
    if (!this.deps.plans.has(planId)) throw new Error(`unknown plan "${planId}" (plans: ${[...this.deps.plans.keys()].join(', ')})`);
    this.cache.clear();
    const ok = await this.deps.tokens.setPlan(id, planId);
    this.cache.clear();
    this.generation++;
    return ok;
  }

  async revoke(id: string): Promise<boolean> {
    this.cache.clear();
    const ok = await this.deps.tokens.revoke(id, this.deps.clock.now());
    this.cache.clear();
    this.generation++;
    return ok;
  }

  /** Requests per token in a UTC month (default: the current one), tokens without requests included. */
  async usage(month = monthKey(this.deps.clock.now())): Promise<UsageReportRow[]> {
    const [tokens, rows] = await Promise.all([this.deps.tokens.list(), this.deps.usage.listMonth(month)]);
    const counts = new Map(rows.map((r) => [r.tokenId, r.count]));
    return tokens.map((t) => ({
      tokenId: t.id,
      name: t.name,
      planId: t.planId,
      month,
      count: counts.get(t.id) ?? 0,
      limit: this.deps.plans.get(t.planId)?.monthlyRequests ?? null,
      revoked: t.revokedAt !== null,
    }));
  }
}
