// The compiled rule tree: one node per configured descriptor, with everything a lookup needs
// (composite keys, compiled wildcard matchers, limit objects, static stats keys) computed when the
// rules load.
import type { CurrentLimit, JsonValue } from '../domain.js';
import { unitDivider } from '../limiter/window.js';
import type { Algorithm } from '../store/counter-store.js';
import type { RuleStats } from './rule-stats.js';
import type { WildcardMatcher } from './wildcard.js';

/** What the limiter needs to know about a limit, whether it comes from a rule or a request override. */
export interface Limit {
  readonly requestsPerUnit: number;
  /** Wire unit number; 0 (UNKNOWN) for unlimited rules. Overrides carry the client's raw number. */
  readonly unit: number;
  /** Window length in seconds; 0 when unlimited or when an override's unit is not a valid unit. */
  readonly windowSeconds: number;
  /** `rate_limit.name`; empty for overrides and unnamed rules. */
  readonly name: string;
  readonly unlimited: boolean;
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  /** Names of rules this one drops when both match in one request. */
  readonly replaces: readonly string[];
  readonly metadata: { readonly [k: string]: JsonValue } | undefined;
  /** Config path (`domain.k1_v1.k2`), or the stats key of an override. */
  readonly fullKey: string;
  readonly isOverride: boolean;
  /** Frozen `current_limit` for responses (shared; never mutate). */
  readonly currentLimit: Readonly<CurrentLimit>;
  /** Counting algorithm (extension; upstream only has fixed_window). */
  readonly algorithm: Algorithm;
  /** token_bucket: bucket size in hits; 0 for the other algorithms. */
  readonly burst: number;
  /** token_bucket: one hit's cost in µs (window ÷ requests_per_unit, at least 1); 0 otherwise. */
  readonly emissionUs: number;
  /** token_bucket: burst × emissionUs; 0 otherwise. */
  readonly toleranceUs: number;
}

/** Whole µs per hit of a token bucket of `requestsPerUnit` per `windowSeconds` (rounded, at least 1). */
export function emissionMicros(windowSeconds: number, requestsPerUnit: number): number {
  return Math.max(1, Math.round((windowSeconds * 1_000_000) / requestsPerUnit));
}

/** Result of `RuleSet.getLimit`: the limit, its stats for this request, and share-threshold substitutions. */
export interface LimitMatch {
  readonly limit: Limit;
  readonly stats: RuleStats;
  /**
   * Per request-entry index: the wildcard pattern that replaces the entry's value in the cache key
   * (share_threshold), or undefined to use the value as sent. Undefined when no entry is shared.
   */
  readonly sharePatterns: readonly (string | undefined)[] | undefined;
}

export const NO_REPLACES: readonly string[] = Object.freeze([]);

export class RateLimitRule implements Limit {
  readonly windowSeconds: number;
  readonly isOverride = false;
  readonly currentLimit: Readonly<CurrentLimit>;
  private staticMatchCache: LimitMatch | undefined;

  constructor(
    readonly requestsPerUnit: number,
    readonly unit: number,
    readonly name: string,
    readonly unlimited: boolean,
    readonly shadowMode: boolean,
    readonly quotaMode: boolean,
    readonly replaces: readonly string[],
    readonly metadata: { readonly [k: string]: JsonValue } | undefined,
    readonly fullKey: string,
    private readonly statsFor: (key: string, group?: string) => RuleStats,
    readonly algorithm: Algorithm = 'fixed_window',
    /** token_bucket only (the builder passes requests_per_unit when the rule has none). */
    readonly burst = 0,
  ) {
    this.windowSeconds = unlimited ? 0 : unitDivider(unit);
    this.currentLimit = Object.freeze({ requestsPerUnit, unit, name });
    const bucket = algorithm === 'token_bucket' && this.windowSeconds > 0 && requestsPerUnit > 0;
    this.emissionUs = bucket ? emissionMicros(this.windowSeconds, requestsPerUnit) : 0;
    this.toleranceUs = bucket ? burst * this.emissionUs : 0;
  }

  readonly emissionUs: number;
  readonly toleranceUs: number;

  /** The match for requests whose stats key is the rule's path and that share nothing: built once. */
  get staticMatch(): LimitMatch {
    this.staticMatchCache ??= Object.freeze({ limit: this, stats: this.statsFor(this.fullKey), sharePatterns: undefined });
    return this.staticMatchCache;
  }

  matchWith(statsKey: string, sharePatterns: readonly (string | undefined)[] | undefined): LimitMatch {
    if (statsKey === this.fullKey && sharePatterns === undefined) return this.staticMatch;
    // Per-value keys are capped per rule (the rule's path is their group).
    return { limit: this, stats: this.statsFor(statsKey, this.fullKey), sharePatterns };
  }
}

export class RuleNode {
  /** Exact children by composite `key` or `key_value` (wildcard nodes are listed here too). */
  readonly children = new Map<string, RuleNode>();
  /** Children whose composite contains `*`, in declaration order (first match wins). */
  readonly wildcards: RuleNode[] = [];

  constructor(
    readonly key: string,
    readonly value: string,
    /** `key` or `key_value`. */
    readonly composite: string,
    /** Dotted config path, starting with the domain. */
    readonly path: string,
    readonly limit: RateLimitRule | undefined,
    readonly matcher: WildcardMatcher | undefined,
    readonly detailedMetric: boolean,
    readonly valueToMetric: boolean,
    readonly shareThreshold: boolean,
  ) {}

  get hasChildren(): boolean {
    return this.children.size > 0;
  }
}

export class DomainNode extends RuleNode {
  /** True when some rule of the domain can produce a per-request stats key or cache-key substitution. */
  dynamic = false;
  /** True when some rule of the domain uses an algorithm other than fixed_window (overrides then look up the rule). */
  algorithmic = false;
  constructor(readonly domain: string) {
    super('', '', '', domain, undefined, undefined, false, false, false);
  }
}
