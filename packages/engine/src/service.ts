// ShouldRateLimit end to end (docs/architecture.md, "A ShouldRateLimit call"): match descriptors against the current rule set,
// one counter-store round trip for the whole request, then statuses, overall code, headers,
// shadow mode and dynamic metadata. Transports call `shouldRateLimit` and map errors by code.
import type { CounterStore, OpResult } from './store/counter-store.js';
import { unsupportedAlgorithmError } from './config/algorithm-support.js';
import type { Clock, RandomSource } from './clock.js';
import { isPromise, type MaybePromise } from './maybe-promise.js';
import type { RuleSet } from './config/rule-set.js';
import type { LimitMatch } from './config/rule-tree.js';
import { unitName } from './units.js';
import { Code, MAX_UINT32, type DescriptorStatus, type RateLimitRequest, type RateLimitResponse } from './domain.js';
import { RateLimitError, StoreError } from './errors.js';
import { buildDynamicMetadata } from './limiter/dynamic-metadata.js';
import { FixedWindowLimiter, newKeyMemo, type KeyMemo, type RequestPlan } from './limiter/fixed-window-limiter.js';
import { countLocalCacheAnswer } from './limiter/descriptor-status.js';
import { hitsAddendFor } from './limiter/hits-addend.js';
import { decidingIndex } from './limiter/limit-group.js';
import { LocalOverLimitCache } from './limiter/local-cache.js';
import type { LimiterOptions } from './limiter/options.js';
import { overallCode, isQuotaDescriptor } from './limiter/overall-code.js';
import { policyHeaders } from './limiter/policy-headers.js';
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
 * Where a response came from, when it came from local state alone: every descriptor matched a
 * rule and was answered from the local over-limit cache, so no store was asked. Such a decision
 * depends only on the rule set, the clock second (duration_until_reset) and the remembered keys,
 * so the same request decided again is certain to get the same response while `repeat()`
 * succeeds. Callers that keep responses (of any kind) use it to skip deciding again; the service
 * neither knows nor cares who keeps what.
 */
export interface LocalDecision {
  /** The clock second the decision was made in (`Math.floor(ms / 1000)`). */
  readonly second: number;
  /**
   * Decides the same request again from local state: true, with every statistic counted as the
   * full decision counts it, when the response would be identical (same second, same rules, every
   * key still remembered); false, having counted nothing, otherwise.
   */
  repeat(): boolean;
}

/** A response with its provenance when it was decided from local state alone. */
export interface DecidedResponse extends RateLimitResponse {
  localDecision?: LocalDecision | undefined;
}

/** What a LocalDecision needs of the service: read when repeated, so a rule swap is seen. */
interface LocalState {
  rules: RuleSet | undefined;
  readonly cache: LocalOverLimitCache;
  readonly clock: Clock;
  readonly globalShadowMode: Counter;
}

class LocalDecisionRecord implements LocalDecision {
  constructor(
    private readonly state: LocalState,
    private readonly rules: RuleSet,
    readonly second: number,
    private readonly keys: readonly string[],
    private readonly matches: readonly LimitMatch[],
    private readonly addends: readonly number[],
    /** The global SHADOW_MODE turned an OVER_LIMIT into OK (counted once per decision). */
    private readonly globalShadow: boolean,
  ) {}

  repeat(): boolean {
    const state = this.state;
    const nowMs = state.clock.now();
    if (this.rules !== state.rules || this.second !== Math.floor(nowMs / 1000)) return false;
    const cache = state.cache;
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) if (!cache.isFresh(keys[i]!, nowMs)) return false;
    cache.countHits(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const m = this.matches[i]!;
      const addend = this.addends[i]!;
      m.stats.totalHits.add(addend);
      countLocalCacheAnswer(m.limit, m.stats, addend);
    }
    if (this.globalShadow) state.globalShadowMode.inc();
    return true;
  }
}

/** The slots of a request with `rate_limits` descriptors: each limit of a group, or the descriptor's one match. */
function slotsOf(matches: readonly (LimitMatch | undefined)[], addends: readonly number[]): Slots {
  const out: Slots = { matches: [], owner: [], addends: [] };
  for (let i = 0; i < matches.length; i++) {
    const m = matches[i];
    const group = m?.group;
    if (group === undefined) {
      out.matches.push(m);
      out.owner.push(i);
      out.addends.push(addends[i]!);
      continue;
    }
    for (let g = 0; g < group.length; g++) {
      out.matches.push(group[g]);
      out.owner.push(i);
      out.addends.push(addends[i]!);
    }
  }
  return out;
}

/** `names` added to `set` (created when there is a first name). */
function addReplaces(set: Set<string> | undefined, names: readonly string[]): Set<string> | undefined {
  if (names.length === 0) return set;
  const out = set ?? new Set<string>();
  for (let i = 0; i < names.length; i++) out.add(names[i]!);
  return out;
}

/** Per descriptor, the status of the limit that decides it (limit-group.ts); slots of one descriptor are consecutive. */
function decidedStatuses(slotStatuses: readonly DescriptorStatus[], owner: readonly number[], n: number): DescriptorStatus[] {
  const out = new Array<DescriptorStatus>(n);
  let from = 0;
  while (from < owner.length) {
    const d = owner[from]!;
    let to = from + 1;
    while (to < owner.length && owner[to] === d) to++;
    out[d] = slotStatuses[to - from === 1 ? from : decidingIndex(slotStatuses, from, to)]!;
    from = to;
  }
  return out;
}

/** `{OK, remaining MAX_UINT32}` of an unlimited rule (shared, frozen). */
const UNLIMITED_STATUS: DescriptorStatus = Object.freeze({ code: Code.OK, limitRemaining: MAX_UINT32 });

/** `Matched.unlimited` of a request without unlimited descriptors (shared, frozen; every index reads as not true). */
const NO_UNLIMITED: readonly boolean[] = Object.freeze([]);

const CALL = 'ratelimit.service.call.should_rate_limit.';

/**
 * The limits a request counts when some descriptor carries several (`rate_limits`): one slot per
 * limit, each counted as if it were a descriptor of its own, with the descriptor it belongs to. A
 * descriptor without a counted limit keeps one empty slot, so every descriptor has at least one.
 */
interface Slots {
  readonly matches: (LimitMatch | undefined)[];
  /** Per slot: the descriptor index. */
  readonly owner: number[];
  readonly addends: number[];
}

/** A request's descriptors matched against one rule set. */
interface Matched {
  readonly rules: RuleSet;
  /** Per descriptor (a `rate_limits` descriptor: the first limit still counted, with its group). */
  readonly matches: (LimitMatch | undefined)[];
  /** True for a descriptor whose rule is unlimited; NO_UNLIMITED (empty) when none is. */
  readonly unlimited: readonly boolean[];
  readonly addends: number[];
  /** Undefined when no descriptor has several limits (then slots are the descriptors). */
  readonly slots: Slots | undefined;
  /** The prepared request's keys, per slot (only kept with the matches). */
  readonly memo: KeyMemo | undefined;
}

/**
 * A request decided again and again with the same descriptors (the quotes service's per-token
 * burst limits): `RateLimitService.prepare` keeps its descriptors' matches for the rule set in
 * force and its counter keys for the current window, so `shouldRateLimitPrepared` skips the
 * rule lookup and the key building. Responses, statistics and errors are those of
 * `shouldRateLimit(request)`; matches are kept only where that is exact (a loaded domain
 * without per-value statistics or share_threshold, no request overrides), else looked up per call.
 * `request` must not change once prepared.
 */
export class PreparedRequest {
  /** @internal the matches of `request` under the rule set last used */
  matched: Matched | undefined;
  constructor(readonly request: RateLimitRequest) {}
}

export class RateLimitService {
  private rules: RuleSet | undefined;
  /** Shared with the LocalDecisions this service hands out (when the local cache is on). */
  private readonly localState: LocalState | undefined;
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
    this.localState =
      this.localCache === undefined ? undefined : { rules: undefined, cache: this.localCache, clock: deps.clock, globalShadowMode: this.counters.globalShadowMode };
  }

  /**
   * Swaps in a newly loaded rule set (requests in flight keep the one they started with). Throws
   * ConfigError, changing nothing, when a rule uses an algorithm the store cannot run (rule
   * providers record that like any other load error).
   */
  setRuleSet(rules: RuleSet): void {
    const refused = unsupportedAlgorithmError(rules, this.store);
    if (refused !== undefined) throw refused;
    this.rules = rules;
    if (this.localState !== undefined) this.localState.rules = rules;
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

  /**
   * The decision: the response itself when every step answered at once (the memory store, or no
   * store needed: every key answered from the local over-limit cache), else a promise of it. A
   * request the service refuses (RateLimitError) is thrown; a store failure (StoreError, counted
   * as redis_error) is thrown when the store failed at once and rejected when it failed later
   * (maybe-promise.ts): callers handle both.
   */
  shouldRateLimit(req: RateLimitRequest): MaybePromise<DecidedResponse> {
    return this.decide(req, undefined);
  }

  /** A request to decide repeatedly with `shouldRateLimitPrepared` (see PreparedRequest). */
  prepare(req: RateLimitRequest): PreparedRequest {
    return new PreparedRequest(req);
  }

  /** `shouldRateLimit(prepared.request)`, reusing what `prepared` keeps. */
  shouldRateLimitPrepared(prepared: PreparedRequest): MaybePromise<DecidedResponse> {
    return this.decide(prepared.request, prepared);
  }

  private decide(req: RateLimitRequest, prepared: PreparedRequest | undefined): MaybePromise<DecidedResponse> {
    const matched = this.begin(req, prepared);
    // Planned per slot (per descriptor when `matched.slots` is undefined).
    const plan = this.plan(req, matched);
    if (plan.storeIndexes.length === 0) return this.finish(req, matched, plan, [], undefined);
    if (!this.limiter.stopIncrementWhenOverLimit || plan.anyLocal) return this.count(req, matched, plan, undefined);
    let current: MaybePromise<number[]>;
    try {
      current = this.store.get(this.limiter.readKeys(plan));
    } catch (err) {
      throw this.storeFailure(err);
    }
    if (isPromise(current)) return current.then((c) => this.count(req, matched, plan, c), this.rejectStore);
    return this.count(req, matched, plan, current);
  }

  /** One increment (or execute) round trip for the planned keys, then `finish`. */
  private count(req: RateLimitRequest, matched: Matched, plan: RequestPlan, current: number[] | undefined): MaybePromise<DecidedResponse> {
    const store = this.store;
    let after: MaybePromise<number[]> | undefined;
    let results: MaybePromise<OpResult[]> | undefined;
    try {
      const ops = this.limiter.incrementOps(plan, current);
      if (plan.needsExecute) {
        // setRuleSet refused rules this store cannot run, so `execute` is present here.
        if (store.execute === undefined) throw new StoreError(`the ${store.kind} store cannot run sliding_window or token_bucket`);
        results = store.execute(ops);
      } else {
        after = store.increment(ops);
      }
    } catch (err) {
      throw this.storeFailure(err);
    }
    if (results !== undefined) {
      if (isPromise(results)) return results.then((r) => this.finish(req, matched, plan, [], r), this.rejectStore);
      return this.finish(req, matched, plan, [], results);
    }
    if (isPromise(after)) return after.then((a) => this.finish(req, matched, plan, a, undefined), this.rejectStore);
    return this.finish(req, matched, plan, after!, undefined);
  }

  /** Validates the request and matches its descriptors (or takes the prepared request's matches). */
  private begin(req: RateLimitRequest, prepared?: PreparedRequest): Matched {
    const rules = this.rules;
    if (req.domain === '') throw this.serviceError('invalid_request', 'rate limit domain must not be empty');
    if (req.descriptors.length === 0) throw this.serviceError('invalid_request', 'rate limit descriptor list must not be empty');
    if (rules === undefined) throw this.serviceError('no_config', 'no rate limit configuration loaded');

    let matched = prepared?.matched;
    if (matched === undefined || matched.rules !== rules) {
      matched = this.match(req, rules, prepared !== undefined);
      if (prepared !== undefined) prepared.matched = matched.memo === undefined ? undefined : matched;
    }
    return matched;
  }

  /** Plans the counting of a matched request, per slot (counts total_hits). */
  private plan(req: RateLimitRequest, matched: Matched): RequestPlan {
    const slots = matched.slots;
    const nowMs = this.clock.now();
    return slots === undefined
      ? this.limiter.plan(req.domain, req.descriptors, undefined, matched.matches, matched.addends, nowMs, matched.memo)
      : this.limiter.plan(req.domain, req.descriptors, slots.owner, slots.matches, slots.addends, nowMs, matched.memo);
  }

  /**
   * Each descriptor's rule (undefined: none, unlimited or replaced) and addend. `keep`: the caller
   * keeps the result for later calls, so it gets a key memo when keeping it is exact
   * (PreparedRequest).
   */
  private match(req: RateLimitRequest, rules: RuleSet, keep: boolean): Matched {
    const descriptors = req.descriptors;
    const n = descriptors.length;
    const matches = new Array<LimitMatch | undefined>(n);
    // Allocated at the first unlimited descriptor (most requests have none).
    let unlimited: boolean[] | undefined;
    const addends = new Array<number>(n);
    let replaced: Set<string> | undefined;
    let grouped = false;
    for (let i = 0; i < n; i++) {
      const d = descriptors[i]!;
      addends[i] = hitsAddendFor(d, req.hitsAddend);
      const m = rules.getLimit(req.domain, d);
      if (m === undefined) continue;
      const limit = m.limit;
      if (limit.isOverride && limit.windowSeconds === 0) {
        // Upstream crashes on a request-level limit with an unknown unit; we reject the request instead.
        throw this.serviceError(
          'invalid_request',
          `descriptor ${i}: rate limit override has invalid unit ${limit.unit} (${unitName(limit.unit)}); expected 1..7`,
        );
      }
      const group = m.group;
      if (group !== undefined) {
        grouped = true;
        for (let g = 0; g < group.length; g++) replaced = addReplaces(replaced, group[g]!.limit.replaces);
      } else {
        replaced = addReplaces(replaced, limit.replaces);
      }
      if (limit.unlimited) (unlimited ??= new Array<boolean>(n).fill(false))[i] = true;
      else matches[i] = m;
    }
    if (replaced !== undefined) {
      for (let i = 0; i < n; i++) {
        const m = matches[i];
        if (m === undefined) continue;
        if (m.group !== undefined) {
          // Each limit of a list is replaced on its own name; the descriptor keeps the others.
          const kept = m.group.filter((g) => g.limit.name === '' || !replaced.has(g.limit.name));
          if (kept.length !== m.group.length) matches[i] = kept.length === 0 ? undefined : { ...kept[0]!, group: kept };
          continue;
        }
        const name = m.limit.name;
        if (name !== '' && replaced.has(name)) matches[i] = undefined;
      }
    }

    const slots = grouped ? slotsOf(matches, addends) : undefined;
    const stable = keep && rules.hasStableMatches(req.domain) && descriptors.every((d) => d.limit === undefined);
    return { rules, matches, unlimited: unlimited ?? NO_UNLIMITED, addends, slots, memo: stable ? newKeyMemo(slots === undefined ? n : slots.owner.length) : undefined };
  }

  /** A store's rejection as the decision's: counted and mapped to StoreError. */
  private readonly rejectStore = (err: unknown): never => {
    throw this.storeFailure(err);
  };

  private storeFailure(err: unknown): StoreError {
    this.counters.redisError.inc();
    if (err instanceof StoreError) return err;
    return new StoreError(err instanceof Error ? err.message : String(err), { cause: err });
  }

  /** Statuses, overall code, headers, shadow mode and dynamic metadata from the store's answer. */
  private finish(req: RateLimitRequest, matched: Matched, plan: RequestPlan, after: number[], results: OpResult[] | undefined): DecidedResponse {
    const { rules, matches, unlimited, slots } = matched;
    const n = matches.length;
    const slotStatuses = this.limiter.statuses(plan, after, results);
    const statuses = slots === undefined ? slotStatuses : decidedStatuses(slotStatuses, slots.owner, n);
    for (let i = 0; i < unlimited.length; i++) if (unlimited[i]) statuses[i] = UNLIMITED_STATUS;

    const opts = this.options;
    let code = overallCode(statuses, matches, unlimited, opts.quotaMode);
    const response: DecidedResponse = { overallCode: code, statuses, responseHeadersToAdd: [] };
    const headers = opts.responseHeaders;
    if (headers.enabled || headers.policyHeaders === true) {
      const chosen = headerStatusIndex(statuses, (i) => isQuotaDescriptor(matches[i], opts.quotaMode));
      if (headers.enabled && chosen >= 0) response.responseHeadersToAdd = rateLimitHeaders(headers, statuses[chosen]!);
      if (headers.policyHeaders === true) {
        // The slot behind the chosen descriptor's status (the limit that decided it).
        let slot = chosen;
        if (slots !== undefined && chosen >= 0) slot = slots.owner.findIndex((d, s) => d === chosen && slotStatuses[s] === statuses[chosen]);
        const extra = policyHeaders(plan.matches, slotStatuses, slots?.owner, unlimited[chosen] === true ? -1 : slot);
        response.responseHeadersToAdd = response.responseHeadersToAdd.length === 0 ? extra : [...response.responseHeadersToAdd, ...extra];
      }
    }
    let globalShadow = false;
    if (opts.shadowMode && code === Code.OVER_LIMIT) {
      code = Code.OK;
      response.overallCode = code;
      this.counters.globalShadowMode.inc();
      globalShadow = true;
    }
    if (opts.responseDynamicMetadata) response.dynamicMetadata = buildDynamicMetadata(req, statuses, matches);
    if (this.localState !== undefined && plan.storeIndexes.length === 0 && plan.local !== undefined && plan.local.every(Boolean)) {
      // plan.local is true only for matched slots with a key, so `keys` and `matches` are dense.
      response.localDecision = new LocalDecisionRecord(this.localState, rules, plan.nowSeconds, plan.keys as readonly string[], plan.matches as LimitMatch[], plan.addends, globalShadow);
    }
    return response;
  }

  private serviceError(code: 'invalid_request' | 'no_config', message: string): RateLimitError {
    this.counters.serviceError.inc();
    return new RateLimitError(code, message);
  }
}
