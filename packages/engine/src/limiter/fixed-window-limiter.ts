// The per-request counting decisions around one store round trip (upstream's fixed_cache_impl.go and base_limiter.go): which
// keys to send, by how much, and what the returned counts mean. No I/O here: the service runs
// the store calls between `plan`, `incrementOps` and `statuses`.
import { SATURATED_COUNT, type CounterOp } from '../store/counter-store.js';
import type { RandomSource } from '../clock.js';
import type { LimitMatch } from '../config/rule-tree.js';
import { Code, type DescriptorEntry, type DescriptorStatus } from '../domain.js';
import { buildCacheKey } from './cache-key.js';
import { counterStatus, localCacheStatus } from './descriptor-status.js';
import type { LocalOverLimitCache } from './local-cache.js';
import type { LimiterOptions } from './options.js';
import { expireSeconds, secondsUntilReset, windowStart } from './window.js';

/** `{OK}` for descriptors without a limit (shared, frozen). */
export const NO_LIMIT_STATUS: DescriptorStatus = Object.freeze({ code: Code.OK, limitRemaining: 0 });

export interface RequestPlan {
  readonly nowSeconds: number;
  /** Per descriptor; undefined when nothing is counted for it. */
  readonly matches: readonly (LimitMatch | undefined)[];
  readonly addends: readonly number[];
  readonly keys: readonly (string | undefined)[];
  /** Per descriptor: answered from the local over-limit cache. */
  readonly local: readonly boolean[];
  readonly anyLocal: boolean;
  /** Descriptor indexes whose counters go to the store, in op order. */
  readonly storeIndexes: readonly number[];
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
   * (no rule, unlimited, replaced).
   */
  plan(
    domain: string,
    entriesOf: (i: number) => readonly DescriptorEntry[],
    matches: readonly (LimitMatch | undefined)[],
    addends: readonly number[],
    nowSeconds: number,
  ): RequestPlan {
    const n = matches.length;
    const keys = new Array<string | undefined>(n);
    const local = new Array<boolean>(n).fill(false);
    const storeIndexes: number[] = [];
    let anyLocal = false;
    for (let i = 0; i < n; i++) {
      const m = matches[i];
      if (m === undefined) continue;
      const divider = m.limit.windowSeconds;
      const key = buildCacheKey(this.options.cacheKeyPrefix, domain, entriesOf(i), m.sharePatterns, windowStart(nowSeconds, divider));
      keys[i] = key;
      m.stats.totalHits.add(addends[i]!);
      if (this.localCache?.has(key) === true) {
        local[i] = true;
        anyLocal = true;
      } else {
        storeIndexes.push(i);
      }
    }
    return { nowSeconds, matches, addends, keys, local, anyLocal, storeIndexes };
  }

  /**
   * The store operations. `current` (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT only) holds the
   * counters read before incrementing, aligned with `storeIndexes`, or is undefined when some
   * descriptor was already over in the local cache (then nothing is added anywhere).
   */
  incrementOps(plan: RequestPlan, current?: readonly number[]): CounterOp[] {
    const stop = this.options.stopCacheKeyIncrementWhenOverlimit;
    let wouldExceed: boolean[] | undefined;
    if (stop && !plan.anyLocal && current !== undefined) {
      wouldExceed = plan.storeIndexes.map((i, j) => {
        const c = current[j] ?? 0;
        return c >= SATURATED_COUNT || c + plan.addends[i]! > plan.matches[i]!.limit.requestsPerUnit;
      });
      if (!wouldExceed.includes(true)) wouldExceed = undefined;
    }
    return plan.storeIndexes.map((i, j) => {
      const divider = plan.matches[i]!.limit.windowSeconds;
      let addend = plan.addends[i]!;
      if (stop && plan.anyLocal) addend = 0;
      else if (wouldExceed !== undefined && wouldExceed[j] !== true) addend = 0;
      return {
        key: plan.keys[i]!,
        addend,
        expireSeconds: expireSeconds(divider, this.options.expirationJitterMaxSeconds, this.random),
        windowSeconds: divider,
      };
    });
  }

  /** Statuses from the post-increment counters (aligned with `storeIndexes`); updates stats and the local cache. */
  statuses(plan: RequestPlan, after: readonly number[]): DescriptorStatus[] {
    const n = plan.matches.length;
    const out = new Array<DescriptorStatus>(n);
    let j = 0;
    for (let i = 0; i < n; i++) {
      const m = plan.matches[i];
      if (m === undefined) {
        out[i] = NO_LIMIT_STATUS;
        continue;
      }
      const divider = m.limit.windowSeconds;
      const reset = secondsUntilReset(plan.nowSeconds, divider);
      if (plan.local[i] === true) {
        out[i] = localCacheStatus(m.limit, m.stats, plan.addends[i]!, reset);
        continue;
      }
      const count = after[j++] ?? 0;
      const status = counterStatus(m.limit, m.stats, plan.addends[i]!, count, this.options.nearLimitRatio, reset);
      if (count > m.limit.requestsPerUnit || count >= SATURATED_COUNT) this.localCache?.add(plan.keys[i]!, divider);
      out[i] = status;
    }
    return out;
  }
}
