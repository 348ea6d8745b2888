// ShouldRateLimit end to end (reference §3.1): match descriptors against the current rule set,
// one counter-store round trip for the whole request, then statuses, overall code, headers,
// shadow mode and dynamic metadata. Transports call `shouldRateLimit` and map errors by code.
import type { CounterStore } from './backends/counter-store.js';
import type { Clock, RandomSource } from './clock.js';
import type { RuleSet } from './config/rule-set.js';
import type { LimitMatch } from './config/rule-tree.js';
import { unitName } from './config/units.js';
import { Code, MAX_UINT32, type DescriptorStatus, type RateLimitRequest, type RateLimitResponse } from './domain.js';
import { RateLimitError, StoreError } from './errors.js';
import { buildDynamicMetadata } from './limiter/dynamic-metadata.js';
import { FixedWindowLimiter } from './limiter/fixed-window-limiter.js';
import { countLocalCacheAnswer } from './limiter/descriptor-status.js';
import { hitsAddendFor } from './limiter/hits-addend.js';
import { LocalOverLimitCache } from './limiter/local-cache.js';
import type { LimiterOptions } from './limiter/options.js';
import { overallCode, isQuotaDescriptor } from './limiter/overall-code.js';
import { headerStatusIndex, rateLimitHeaders } from './limiter/response-headers.js';
import type { Counter, StatsStore } from './stats/stats-store.js';

export interface RateLimitServiceDeps {
  readonly store: CounterStore;
  readonly stats: StatsStore;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly options: LimiterOptions;
}

export type RulesChangedListener = (rules: RuleSet) => void;

/**
 * A decision made entirely from the local over-limit cache: every descriptor matched a rule and
 * its key was remembered as over limit, so no store was asked. Within the same second, with the
 * same rules and the keys still remembered, the same request gets the same answer; a transport
 * may then resend the encoded response after `replayLocalAnswer` has counted the stats.
 */
export interface LocalAnswer {
  readonly rules: RuleSet;
  readonly nowSeconds: number;
  readonly keys: readonly string[];
  readonly matches: readonly LimitMatch[];
  readonly addends: readonly number[];
  /** The global SHADOW_MODE turned an OVER_LIMIT into OK (counted once per answer). */
  readonly globalShadow: boolean;
}

/** What shouldRateLimit answers, with the LocalAnswer when the decision qualifies (internal). */
export interface ServiceResponse extends RateLimitResponse {
  localAnswer?: LocalAnswer | undefined;
}

/** `{OK, remaining MAX_UINT32}` of an unlimited rule (shared, frozen). */
const UNLIMITED_STATUS: DescriptorStatus = Object.freeze({ code: Code.OK, limitRemaining: MAX_UINT32 });

const CALL = 'ratelimit.service.call.should_rate_limit.';

export class RateLimitService {
  private rules: RuleSet | undefined;
  private readonly listeners: RulesChangedListener[] = [];
  private readonly store: CounterStore;
  private readonly clock: Clock;
  private readonly options: LimiterOptions;
  private readonly limiter: FixedWindowLimiter;
  /** The local over-limit cache, when LOCAL_CACHE_SIZE_IN_BYTES > 0 (exposed for gauge refresh). */
  readonly localCache: LocalOverLimitCache | undefined;
  private readonly counters: {
    serviceError: Counter;
    redisError: Counter;
    configLoadSuccess: Counter;
    configLoadError: Counter;
    globalShadowMode: Counter;
  };

  constructor(deps: RateLimitServiceDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.options = deps.options;
    this.localCache =
      deps.options.localCacheSizeInBytes > 0 ? new LocalOverLimitCache(deps.options.localCacheSizeInBytes, deps.clock, deps.stats) : undefined;
    this.limiter = new FixedWindowLimiter(deps.options, deps.random, this.localCache);
    this.counters = {
      serviceError: deps.stats.counter(CALL + 'service_error'),
      redisError: deps.stats.counter(CALL + 'redis_error'),
      configLoadSuccess: deps.stats.counter('ratelimit.service.config_load_success'),
      configLoadError: deps.stats.counter('ratelimit.service.config_load_error'),
      globalShadowMode: deps.stats.counter('ratelimit.service.global_shadow_mode'),
    };
  }

  /** Swaps in a newly loaded rule set (requests in flight keep the one they started with). */
  setRuleSet(rules: RuleSet): void {
    this.rules = rules;
    this.counters.configLoadSuccess.inc();
    for (const l of this.listeners) l(rules);
  }

  /** Records a rejected load; the previous rules stay in force. */
  recordConfigError(_err: unknown): void {
    this.counters.configLoadError.inc();
  }

  currentRuleSet(): RuleSet | undefined {
    return this.rules;
  }

  /** Called after each successful swap (health, logging). Returns an unsubscribe function. */
  onRulesChanged(listener: RulesChangedListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** The service clock (milliseconds since the epoch). */
  nowMs(): number {
    return this.clock.now();
  }

  /**
   * Counts what deciding `a`'s request again now would count (total_hits, over_limit,
   * over_limit_with_local_cache, shadow_mode, the local cache's hits, global_shadow_mode), when
   * that decision is certain to be the same: same second, same rules, every key still remembered.
   * Returns false, having counted nothing, otherwise. `nowMs` is the service clock's reading.
   */
  replayLocalAnswer(a: LocalAnswer, nowMs: number): boolean {
    const cache = this.localCache;
    if (cache === undefined || a.rules !== this.rules || a.nowSeconds !== Math.floor(nowMs / 1000)) return false;
    const keys = a.keys;
    for (let i = 0; i < keys.length; i++) if (!cache.isFresh(keys[i]!, nowMs)) return false;
    cache.countHits(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const m = a.matches[i]!;
      const addend = a.addends[i]!;
      m.stats.totalHits.add(addend);
      countLocalCacheAnswer(m.limit, m.stats, addend);
    }
    if (a.globalShadow) this.counters.globalShadowMode.inc();
    return true;
  }

  async shouldRateLimit(req: RateLimitRequest): Promise<ServiceResponse> {
    const rules = this.rules;
    if (req.domain === '') throw this.serviceError('invalid_request', 'rate limit domain must not be empty');
    if (req.descriptors.length === 0) throw this.serviceError('invalid_request', 'rate limit descriptor list must not be empty');
    if (rules === undefined) throw this.serviceError('no_config', 'no rate limit configuration loaded');

    const descriptors = req.descriptors;
    const n = descriptors.length;
    const matches = new Array<LimitMatch | undefined>(n);
    const unlimited = new Array<boolean>(n).fill(false);
    let replaced: Set<string> | undefined;
    for (let i = 0; i < n; i++) {
      const m = rules.getLimit(req.domain, descriptors[i]!);
      if (m === undefined) continue;
      const limit = m.limit;
      if (limit.isOverride && limit.windowSeconds === 0) {
        // Upstream crashes on this (reference §3.5); we reject the request instead.
        throw this.serviceError(
          'invalid_request',
          `descriptor ${i}: rate limit override has invalid unit ${limit.unit} (${unitName(limit.unit)}); expected 1..7`,
        );
      }
      for (const name of limit.replaces) (replaced ??= new Set()).add(name);
      if (limit.unlimited) unlimited[i] = true;
      else matches[i] = m;
    }
    if (replaced !== undefined) {
      for (let i = 0; i < n; i++) {
        const name = matches[i]?.limit.name;
        if (name !== undefined && name !== '' && replaced.has(name)) matches[i] = undefined;
      }
    }

    const addends = descriptors.map((d) => hitsAddendFor(d, req.hitsAddend));
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    const plan = this.limiter.plan(req.domain, (i) => descriptors[i]!.entries, matches, addends, nowSeconds);
    let after: number[] = [];
    if (plan.storeIndexes.length > 0) {
      try {
        let current: number[] | undefined;
        if (this.limiter.stopIncrementWhenOverLimit && !plan.anyLocal) {
          current = await this.store.get(plan.storeIndexes.map((i) => plan.keys[i]!));
        }
        after = await this.store.increment(this.limiter.incrementOps(plan, current));
      } catch (err) {
        this.counters.redisError.inc();
        if (err instanceof StoreError) throw err;
        throw new StoreError(err instanceof Error ? err.message : String(err), { cause: err });
      }
    }
    const statuses = this.limiter.statuses(plan, after);
    for (let i = 0; i < n; i++) if (unlimited[i]) statuses[i] = UNLIMITED_STATUS;

    const opts = this.options;
    let code = overallCode(statuses, matches, unlimited, opts.quotaMode);
    const response: ServiceResponse = { overallCode: code, statuses, responseHeadersToAdd: [] };
    if (opts.responseHeaders.enabled) {
      const chosen = headerStatusIndex(statuses, (i) => isQuotaDescriptor(matches[i], opts.quotaMode));
      if (chosen >= 0) response.responseHeadersToAdd = rateLimitHeaders(opts.responseHeaders, statuses[chosen]!);
    }
    let globalShadow = false;
    if (opts.shadowMode && code === Code.OVER_LIMIT) {
      code = Code.OK;
      response.overallCode = code;
      this.counters.globalShadowMode.inc();
      globalShadow = true;
    }
    if (opts.responseDynamicMetadata) response.dynamicMetadata = buildDynamicMetadata(req, statuses, matches);
    if (plan.storeIndexes.length === 0 && plan.local.every(Boolean)) {
      response.localAnswer = { rules, nowSeconds, keys: plan.keys as string[], matches: matches as LimitMatch[], addends, globalShadow };
    }
    return response;
  }

  private serviceError(code: 'invalid_request' | 'no_config', message: string): RateLimitError {
    this.counters.serviceError.inc();
    return new RateLimitError(code, message);
  }
}
