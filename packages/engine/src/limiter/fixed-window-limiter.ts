// The per-request counting decisions around one store round trip (upstream's fixed_cache_impl.go and base_limiter.go): which
// keys to send, by how much, and what the returned counts mean. No I/O here: the service runs
// the store calls between `plan`, `incrementOps` and `statuses`.
//
// Fixed windows are upstream's, byte for byte. Rules may opt into `sliding_window` and
// `token_bucket` (algorithms.ts; docs/ratelimit.md, "Algorithms (extension)"): their ops carry
// `previousKey` / `bucket` and go to `CounterStore.execute`; a request without them keeps the
// plain `increment` path.
import { SATURATED_COUNT, type CounterOp, type OpResult } from '../store/counter-store.js';
import type { RandomSource } from '../clock.js';
import type { LimitMatch } from '../config/rule-tree.js';
import { Code, type DescriptorEntry, type DescriptorStatus, type RequestDescriptor } from '../domain.js';
import { bucketOutcome, bucketStatus, bucketWouldRefuse, slidingAdmitsAgainAtMs, slidingEstimate } from './algorithms.js';
import { cacheKeyBase } from './cache-key.js';
import { counterStatus, localCacheStatus } from './descriptor-status.js';
import type { LocalOverLimitCache } from './local-cache.js';
import type { LimiterOptions } from './options.js';
import { expireSeconds, secondsUntilReset, windowStart } from './window.js';

/** `{OK}` for descriptors without a limit (shared, frozen). */
export const NO_LIMIT_STATUS: DescriptorStatus = Object.freeze({ code: Code.OK, limitRemaining: 0 });

export interface RequestPlan {
  readonly nowSeconds: number;
  /** The clock in ms when the request was planned (sliding windows and buckets use sub-second time). */
  readonly nowMs: number;
  /** Per descriptor; undefined when nothing is counted for it. */
  readonly matches: readonly (LimitMatch | undefined)[];
  readonly addends: readonly number[];
  readonly keys: readonly (string | undefined)[];
  /** Per descriptor: the previous window's key of a sliding window (undefined for the other algorithms). */
  readonly previousKeys: readonly (string | undefined)[] | undefined;
  /**
   * Per descriptor: answered from the local over-limit cache. Undefined when none was (the usual
   * case, so it costs nothing then); `anyLocal` is `local !== undefined`.
   */
  readonly local: readonly boolean[] | undefined;
  readonly anyLocal: boolean;
  /** Descriptor indexes whose counters go to the store, in op order. */
  readonly storeIndexes: readonly number[];
  /** Some store op is a sliding window or a token bucket: run the ops with `CounterStore.execute`. */
  readonly needsExecute: boolean;
}

/**
 * The counter keys of a prepared request (RateLimitService.prepare), per descriptor: the key up to
 * the window (`cacheKeyBase`), and the last window start with its full key. Handing the store the
 * same key string again also spares it hashing the key again.
 */
export interface KeyMemo {
  readonly bases: (string | undefined)[];
  readonly starts: number[];
  readonly keys: (string | undefined)[];
}

export function newKeyMemo(descriptors: number): KeyMemo {
  return { bases: new Array<string | undefined>(descriptors).fill(undefined), starts: new Array<number>(descriptors).fill(NaN), keys: new Array<string | undefined>(descriptors).fill(undefined) };
}

export class FixedWindowLimiter {
  constructor(
    private readonly options: LimiterOptions,
    private readonly random: RandomSource,
    private readonly localCache: LocalOverLimitCache | undefined,
  ) {}

  get stopIncrementWhenOverLimit(): boolean {
    return this.options.stopCacheKeyIncrementWhenOverlimit;
  }

  /**
   * Builds the keys, counts total_hits (before the store is asked, as upstream) and consults the
   * local over-limit cache. `matches[i]` must be undefined for descriptors not to count
   * (no rule, unlimited, replaced). `owner` maps each of `matches` to its descriptor when a
   * descriptor has several limits (slots); without it `matches[i]` is `descriptors[i]`'s. `memo`
   * (a prepared request's, for these matches) keeps the keys between calls.
   */
  plan(
    domain: string,
    descriptors: readonly RequestDescriptor[],
    owner: readonly number[] | undefined,
    matches: readonly (LimitMatch | undefined)[],
    addends: readonly number[],
    nowMs: number,
    memo?: KeyMemo,
  ): RequestPlan {
    const nowSeconds = Math.floor(nowMs / 1000);
    const n = matches.length;
    const keys = new Array<string | undefined>(n);
    // Allocated when a first descriptor is answered locally (rare): most requests need none.
    let local: boolean[] | undefined;
    // At most n indexes; cut to the count once known (an empty array grown by push over-allocates).
    const storeIndexes = new Array<number>(n);
    let stored = 0;
    let previousKeys: (string | undefined)[] | undefined;
    let anyLocal = false;
    let needsExecute = false;
    const prefix = this.options.cacheKeyPrefix;
    // The limits of one `rate_limits` descriptor are consecutive and share the key up to the window.
    let lastEntries: readonly DescriptorEntry[] | undefined;
    let lastShare: LimitMatch['sharePatterns'];
    let lastBase = '';
    for (let i = 0; i < n; i++) {
      const m = matches[i];
      if (m === undefined) continue;
      const entries = descriptors[owner === undefined ? i : owner[i]!]!.entries;
      const divider = m.limit.windowSeconds;
      const algorithm = m.limit.algorithm;
      // '' / `_sw` / `tb` for limits keyed as upstream and the algorithm extension key them; tagged
      // with the window for multiplied windows and rate_limits entries (rule-tree.ts, keyTailOf).
      const tail = m.limit.keyTail;
      let key: string;
      if (algorithm === 'fixed_window') {
        const start = windowStart(nowSeconds, divider);
        if (memo === undefined) {
          if (entries !== lastEntries || m.sharePatterns !== lastShare) {
            lastBase = cacheKeyBase(prefix, domain, entries, m.sharePatterns);
            lastEntries = entries;
            lastShare = m.sharePatterns;
          }
          key = lastBase + String(start);
          if (tail !== '') key += tail;
        } else if (memo.starts[i] === start) key = memo.keys[i]!;
        else {
          key = (memo.bases[i] ??= cacheKeyBase(prefix, domain, entries, m.sharePatterns)) + String(start) + tail;
          memo.starts[i] = start;
          memo.keys[i] = key;
        }
      } else {
        const base = memo === undefined ? cacheKeyBase(prefix, domain, entries, m.sharePatterns) : (memo.bases[i] ??= cacheKeyBase(prefix, domain, entries, m.sharePatterns));
        if (algorithm === 'sliding_window') {
          const start = windowStart(nowSeconds, divider);
          key = base + String(start) + tail;
          (previousKeys ??= new Array<string | undefined>(n))[i] = base + String(start - divider) + tail;
        } else {
          key = memo === undefined ? base + tail : (memo.keys[i] ??= base + tail);
        }
      }
      keys[i] = key;
      m.stats.totalHits.add(addends[i]!);
      if (this.localCache?.has(key) === true) {
        (local ??= new Array<boolean>(n).fill(false))[i] = true;
        anyLocal = true;
      } else {
        storeIndexes[stored++] = i;
        if (algorithm !== 'fixed_window') needsExecute = true;
      }
    }
    storeIndexes.length = stored;
    return { nowSeconds, nowMs, matches, addends, keys, previousKeys, local, anyLocal, storeIndexes, needsExecute };
  }

  /**
   * The keys STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT reads before counting, for `incrementOps`'s
   * `current`: per store op its key, and for a sliding window also its previous window's key.
   */
  readKeys(plan: RequestPlan): string[] {
    const out: string[] = [];
    for (const i of plan.storeIndexes) {
      out.push(plan.keys[i]!);
      const prev = plan.previousKeys?.[i];
      if (prev !== undefined) out.push(prev);
    }
    return out;
  }

  /**
   * The store operations. `current` (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT only) holds the
   * values read with `readKeys` before counting, or is undefined when some descriptor was already
   * over in the local cache (then nothing is added anywhere). When some descriptor would go over,
   * the others are sent with addend 0 (a check that consumes nothing).
   */
  incrementOps(plan: RequestPlan, current?: readonly number[]): CounterOp[] {
    const stop = this.options.stopCacheKeyIncrementWhenOverlimit;
    const storeIndexes = plan.storeIndexes;
    let wouldExceed: boolean[] | undefined;
    if (stop && !plan.anyLocal && current !== undefined) {
      let r = 0;
      wouldExceed = storeIndexes.map((i) => {
        const c = current[r++] ?? 0;
        const previous = plan.previousKeys?.[i] !== undefined ? (current[r++] ?? 0) : 0;
        return this.wouldExceed(plan, i, c, previous);
      });
      if (!wouldExceed.includes(true)) wouldExceed = undefined;
    }
    // A loop rather than `map`: no closure per request.
    const ops = new Array<CounterOp>(storeIndexes.length);
    for (let j = 0; j < storeIndexes.length; j++) {
      const checkOnly = (stop && plan.anyLocal) || (wouldExceed !== undefined && wouldExceed[j] !== true);
      ops[j] = this.op(plan, storeIndexes[j]!, checkOnly);
    }
    return ops;
  }

  /** The store op of descriptor `i`; `checkOnly`: it adds 0 (a check that consumes nothing). */
  private op(plan: RequestPlan, i: number, checkOnly: boolean): CounterOp {
    const jitter = this.options.expirationJitterMaxSeconds;
    const limit = plan.matches[i]!.limit;
    const divider = limit.windowSeconds;
    const addend = checkOnly ? 0 : plan.addends[i]!;
    if (limit.algorithm === 'fixed_window') {
      const ttl = expireSeconds(divider, jitter, this.random);
      // A tagged tail (rate_limits entry, multiplied window) is our own key format: the store may set its TTL once.
      // Upstream's keys keep their op shape (and their TTL re-applied on every hit).
      if (limit.keyTail !== '') return { key: plan.keys[i]!, addend, expireSeconds: ttl, windowSeconds: divider, expireOnCreate: true, limit: limit.requestsPerUnit };
      return { key: plan.keys[i]!, addend, expireSeconds: ttl, windowSeconds: divider, limit: limit.requestsPerUnit };
    }
    if (limit.algorithm === 'sliding_window') {
      // The previous window is read during the whole current one: keep each counter two windows.
      return {
        key: plan.keys[i]!,
        addend,
        expireSeconds: expireSeconds(2 * divider, jitter, this.random),
        windowSeconds: divider,
        previousKey: plan.previousKeys![i]!,
        limit: limit.requestsPerUnit,
      };
    }
    // More than burst + 1 hits are refused whatever the bucket holds: capping keeps every
    // product of the store's arithmetic exact.
    const capped = Math.min(addend, limit.burst + 1);
    return {
      key: plan.keys[i]!,
      addend: capped,
      expireSeconds: divider,
      windowSeconds: divider,
      bucket: { nowUs: plan.nowMs * 1000, emissionUs: limit.emissionUs, toleranceUs: limit.toleranceUs },
    };
  }

  /** `c`: the key's value read before counting; `previous`: a sliding window's previous counter. */
  private wouldExceed(plan: RequestPlan, i: number, c: number, previous: number): boolean {
    const limit = plan.matches[i]!.limit;
    const addend = plan.addends[i]!;
    if (limit.algorithm === 'token_bucket') return bucketWouldRefuse(limit, c, addend, plan.nowMs * 1000);
    let count = c;
    if (limit.algorithm === 'sliding_window') {
      const windowMs = limit.windowSeconds * 1000;
      count = slidingEstimate(previous, c, plan.nowMs - windowStart(plan.nowSeconds, limit.windowSeconds) * 1000, windowMs);
    }
    return count >= SATURATED_COUNT || count + addend > limit.requestsPerUnit;
  }

  /**
   * Statuses from the store's answers (aligned with `storeIndexes`): `after` from `increment`, or
   * `results` from `execute` (then `after` is ignored). Updates stats and the local cache.
   */
  statuses(plan: RequestPlan, after: readonly number[], results?: readonly OpResult[]): DescriptorStatus[] {
    const n = plan.matches.length;
    const out = new Array<DescriptorStatus>(n);
    const nearLimitRatio = this.options.nearLimitRatio;
    let j = 0;
    for (let i = 0; i < n; i++) {
      const m = plan.matches[i];
      if (m === undefined) {
        out[i] = NO_LIMIT_STATUS;
        continue;
      }
      const limit = m.limit;
      const divider = limit.windowSeconds;
      const algorithm = limit.algorithm;
      if (plan.local?.[i] === true) {
        let reset: number;
        if (algorithm === 'token_bucket') {
          // Until the remembered refusal ends (one token back): whole seconds past this clock second.
          const until = this.localCache?.expiresAt(plan.keys[i]!) ?? plan.nowMs;
          reset = Math.max(1, Math.ceil(until / 1000) - plan.nowSeconds);
        } else {
          reset = secondsUntilReset(plan.nowSeconds, divider);
        }
        out[i] = localCacheStatus(limit, m.stats, plan.addends[i]!, reset);
        continue;
      }
      const result = results?.[j];
      const value = result !== undefined ? result.value : (after[j] ?? 0);
      j++;
      if (algorithm === 'fixed_window') {
        const status = counterStatus(limit, m.stats, plan.addends[i]!, value, nearLimitRatio, secondsUntilReset(plan.nowSeconds, divider));
        if (value > limit.requestsPerUnit || value >= SATURATED_COUNT) this.localCache?.add(plan.keys[i]!, divider);
        out[i] = status;
      } else if (algorithm === 'sliding_window') {
        const startMs = windowStart(plan.nowSeconds, divider) * 1000;
        const windowMs = divider * 1000;
        const previous = result?.previous ?? 0;
        const estimate = slidingEstimate(previous, value, plan.nowMs - startMs, windowMs);
        out[i] = counterStatus(limit, m.stats, plan.addends[i]!, estimate, nearLimitRatio, secondsUntilReset(plan.nowSeconds, divider));
        if ((estimate > limit.requestsPerUnit || estimate >= SATURATED_COUNT) && this.localCache !== undefined) {
          const until = slidingAdmitsAgainAtMs(previous, value, limit.requestsPerUnit, startMs, windowMs);
          if (until > plan.nowMs) this.localCache.addUntil(plan.keys[i]!, until);
        }
      } else {
        const outcome = bucketOutcome(limit, value, result?.admitted === true, plan.nowMs * 1000);
        out[i] = bucketStatus(limit, m.stats, plan.addends[i]!, outcome, nearLimitRatio);
        if (outcome.refuseOneUntilMs > plan.nowMs) this.localCache?.addUntil(plan.keys[i]!, outcome.refuseOneUntilMs);
      }
    }
    return out;
  }
}
