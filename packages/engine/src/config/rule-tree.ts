// The compiled rule tree: one node per configured descriptor, with everything a lookup needs
// (composite keys, compiled wildcard matchers, limit objects, static stats keys) computed when the
// rules load.
import type { CurrentLimit, JsonValue } from '../domain.js';
import { unitDivider } from '../units.js';
import type { Algorithm } from '../store/counter-store.js';
import type { RuleStats } from './rule-stats.js';
import { NOT_AN_ADDRESS, type ValueIndex } from './value-index.js';
import type { WildcardMatcher } from './wildcard.js';

/** What the limiter needs to know about a limit, whether it comes from a rule or a request override. */
export interface Limit {
  readonly requestsPerUnit: number;
  /** Wire unit number; 0 (UNKNOWN) for unlimited rules. Overrides carry the client's raw number. */
  readonly unit: number;
  /**
   * Window length in seconds: the unit's length × unit_multiplier; 0 when unlimited or when an
   * override's unit is not a valid unit.
   */
  readonly windowSeconds: number;
  /** Extension: the window is this many units (1 unless the rule sets unit_multiplier). */
  readonly unitMultiplier: number;
  /**
   * What follows the window start in the counter key (fixed and sliding windows), or the key base
   * (token buckets): '', `_sw` or `tb` for a limit keyed as before (upstream's fixed window, the
   * algorithm extension's keys); tagged with the window for multiplied windows and `rate_limits`
   * entries (`keyTailOf`), so their keys never equal one of those.
   */
  readonly keyTail: string;
  /**
   * RateLimit-Policy parameters (`;q=<quota>;w=<window seconds>`, draft-ietf-httpapi-ratelimit-headers-11)
   * and the policy name as a structured-field string (`"name"`; empty for unnamed limits).
   */
  readonly policyParams: string;
  readonly policyName: string;
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

/**
 * The key tail of a limit (Limit.keyTail). `tagged`: a multiplied window or a `rate_limits` entry.
 * Every tagged tail ends in something other than the plain tails: a fixed window's `_w<seconds>`
 * and a sliding window's `_sw<seconds>` are not all digits after the last `_` (a plain fixed key
 * is), nor `_sw`; a bucket's `tb<seconds>r<requests_per_unit>` is not `tb`. Two limits of one
 * descriptor get the same tail only when they count the same thing (the rule builder refuses that).
 */
export function keyTailOf(algorithm: Algorithm, windowSeconds: number, requestsPerUnit: number, tagged: boolean): string {
  // Plain tails: a sliding window's `<base><windowStart>_sw` (fixed-window keys end in `_<digits>`,
  // so it never equals one) and a bucket's `<base>tb` (one key per descriptor, no window).
  if (algorithm === 'sliding_window') return tagged ? `_sw${windowSeconds}` : '_sw';
  if (algorithm === 'token_bucket') return tagged ? `tb${windowSeconds}r${requestsPerUnit}` : 'tb';
  return tagged ? `_w${windowSeconds}` : '';
}

/** A structured-field String (RFC 8941 §3.3.3) of `text`: printable ASCII, `"` and `\\` escaped, anything else as `?`. */
export function sfString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x5c) out += '\\' + text[i];
    else if (c >= 0x20 && c <= 0x7e) out += text[i];
    else out += '?';
  }
  return out + '"';
}

/** RateLimit-Policy parameters of a limit: the quota and its window in seconds (a bucket: burst, and the time to refill it). */
export function policyParamsOf(algorithm: Algorithm, requestsPerUnit: number, windowSeconds: number, burst: number, emissionUs: number): string {
  if (algorithm === 'token_bucket' && emissionUs > 0) return `;q=${burst};w=${Math.max(1, Math.ceil((burst * emissionUs) / 1_000_000))}`;
  return windowSeconds > 0 ? `;q=${requestsPerUnit};w=${windowSeconds}` : `;q=${requestsPerUnit}`;
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
  /**
   * A `rate_limits` descriptor: every limit of the list with its own stats, in list order (the
   * first is this match's own limit). Undefined for a descriptor with one limit.
   */
  readonly group?: readonly LimitMatch[] | undefined;
}

export const NO_REPLACES: readonly string[] = Object.freeze([]);

/**
 * What rules of one load share instead of holding copies (a list of 100,000 `cidr:` rules with one
 * limit is 100,000 rules that differ only in their block): equal texts as one flat string, and one
 * frozen `current_limit` per (requests, unit, name). The texts the parser hands over are often
 * slices of the whole rule file or chains of concatenations; a kept rule holds neither.
 */
export class RuleInterner {
  private readonly texts = new Map<string, string>();
  private readonly limits = new Map<string, Readonly<CurrentLimit>>();

  /** The shared flat copy of `text`. */
  text(text: string): string {
    if (text.length < 2) return text;
    let t = this.texts.get(text);
    if (t === undefined) {
      t = flatCopy(text);
      this.texts.set(t, t);
    }
    return t;
  }

  currentLimit(requestsPerUnit: number, unit: number, name: string): Readonly<CurrentLimit> {
    const key = `${requestsPerUnit}/${unit}/${name}`;
    let l = this.limits.get(key);
    if (l === undefined) this.limits.set(key, (l = Object.freeze({ requestsPerUnit, unit, name: this.text(name) })));
    return l;
  }
}

/**
 * A flat string equal to `text` that shares no storage with it: joining two or more parts builds a
 * new flat string (a single part, or `+`, would give back the original or a chain of it).
 */
export function flatCopy(text: string): string {
  return text.length < 2 ? text : [text.slice(0, 1), text.slice(1)].join('');
}

export class RateLimitRule implements Limit {
  readonly windowSeconds: number;
  readonly isOverride = false;
  readonly currentLimit: Readonly<CurrentLimit>;
  readonly keyTail: string;
  readonly policyParams: string;
  readonly policyName: string;
  /** A `rate_limits` list: all of its limits, this one included (set by the builder); undefined for one limit. */
  group: readonly RateLimitRule[] | undefined;
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
    /** Extension: the window is this many units. */
    readonly unitMultiplier = 1,
    /**
     * Extension: `.<name or index>` for a `rate_limits` entry (its statistics and /rlconfig line
     * are `<path>.<name or index>`), '' otherwise. Entries and multiplied windows get tagged keys.
     */
    readonly statsSuffix = '',
    /** The load's shared texts and current_limit objects (none: each rule its own). */
    shared?: RuleInterner,
  ) {
    this.windowSeconds = unlimited ? 0 : unitDivider(unit) * unitMultiplier;
    this.currentLimit = shared?.currentLimit(requestsPerUnit, unit, name) ?? Object.freeze({ requestsPerUnit, unit, name });
    const bucket = algorithm === 'token_bucket' && this.windowSeconds > 0 && requestsPerUnit > 0;
    this.emissionUs = bucket ? emissionMicros(this.windowSeconds, requestsPerUnit) : 0;
    this.toleranceUs = bucket ? burst * this.emissionUs : 0;
    const keyTail = keyTailOf(algorithm, this.windowSeconds, requestsPerUnit, unitMultiplier !== 1 || statsSuffix !== '');
    const policyParams = policyParamsOf(algorithm, requestsPerUnit, this.windowSeconds, burst, this.emissionUs);
    const policyName = name === '' ? '' : sfString(name);
    this.keyTail = shared?.text(keyTail) ?? keyTail;
    this.policyParams = shared?.text(policyParams) ?? policyParams;
    this.policyName = shared?.text(policyName) ?? policyName;
    this.path = statsSuffix === '' ? fullKey : fullKey.slice(0, fullKey.length - statsSuffix.length);
  }

  readonly emissionUs: number;
  readonly toleranceUs: number;
  /** The descriptor's config path (fullKey without a `rate_limits` entry's suffix). */
  readonly path: string;

  /** The match for requests whose stats key is the rule's path and that share nothing: built once. */
  get staticMatch(): LimitMatch {
    if (this.staticMatchCache === undefined) {
      const group = this.group;
      if (group === undefined) this.staticMatchCache = Object.freeze({ limit: this, stats: this.statsFor(this.fullKey), sharePatterns: undefined });
      else {
        const members = Object.freeze(group.map((r): LimitMatch => Object.freeze({ limit: r, stats: r.statsFor(r.fullKey), sharePatterns: undefined })));
        this.staticMatchCache = Object.freeze({ ...members[0]!, group: members });
      }
    }
    return this.staticMatchCache;
  }

  /** `statsKey`: the descriptor's stats key (a `rate_limits` entry appends its suffix). */
  matchWith(statsKey: string, sharePatterns: readonly (string | undefined)[] | undefined): LimitMatch {
    if (statsKey === this.path && sharePatterns === undefined) return this.staticMatch;
    const group = this.group;
    // Per-value keys are capped per rule (the rule's path is their group).
    if (group === undefined) return { limit: this, stats: this.statsFor(statsKey, this.fullKey), sharePatterns };
    const members = group.map((r): LimitMatch => ({ limit: r, stats: r.statsFor(statsKey + r.statsSuffix, r.fullKey), sharePatterns }));
    return { ...members[0]!, group: members };
  }
}

/** The children of a leaf (most nodes are leaves): one shared empty map instead of one map per node. */
const NO_CHILDREN: ReadonlyMap<string, RuleNode> = new Map<string, RuleNode>();
const NO_WILDCARDS: readonly RuleNode[] = Object.freeze([]);
const NO_PROBE_KEYS: ReadonlySet<string> = new Set<string>();

/**
 * The `cidr:` and `prefix:` children of a node, kept apart from the exact ones: a lookup of an
 * exact value then probes a map of the exact children only, however many blocks a list holds.
 */
export interface StructuredChildren {
  /**
   * By composite (`key_10.0.0.0/8`, `key_team-*`): for duplicates, the listings, and a request
   * value written exactly like one of them, which matches that rule as an exact value does.
   */
  readonly byComposite: Map<string, RuleNode>;
  /** By descriptor key: the index that finds the longest block or prefix. */
  readonly byKey: Map<string, ValueIndex<RuleNode>>;
}

/**
 * True when `key_value` could be the composite of a cidr: or prefix: rule, judged on the request's
 * value alone: a block's composite ends in `/<digits>` and a prefix's in `*`, and since the key and
 * the value are joined by the last `_` before that tail (a block or a `*` has none after it), a
 * value that could complete such a composite has the `/` or ends in the `*` itself.
 */
function mayBeStructuredValue(value: string): boolean {
  return value.charCodeAt(value.length - 1) === 42 || value.indexOf('/') >= 0;
}

/**
 * The cidr: or prefix: child of `structured` that the entry `key`/`value` matches: for an IP
 * address the longest block containing it, else its longest prefix (an address is never written
 * as a composite); for other text a composite written exactly as `key_value` (`kv`, when the
 * caller has built it), else the longest prefix.
 */
export function structuredChild(structured: StructuredChildren, key: string, value: string, kv: string | undefined): RuleNode | undefined {
  const index = structured.byKey.get(key);
  if (index !== undefined) {
    const found = index.lookupAddress(value);
    if (found !== NOT_AN_ADDRESS) return found;
  }
  const exact = mayBeStructuredValue(value) ? structured.byComposite.get(kv ?? key + '_' + value) : undefined;
  return exact ?? index?.lookupPrefix(value);
}

export class RuleNode {
  /**
   * Exact children by composite `key` or `key_value` (wildcard nodes are listed here too; cidr:
   * and prefix: ones are in `structured`). A leaf shares one empty map (addChild replaces it).
   */
  children: ReadonlyMap<string, RuleNode> = NO_CHILDREN;
  /**
   * Every `k` such that some key of `children` starts with `k_` (a composite may hold several
   * `_`: each text before one counts). `children.get(k + '_' + v)` can only find a child when `k`
   * is here, so a lookup asks this set first and builds the `key_value` string only when needed.
   */
  probeKeys: ReadonlySet<string> = NO_PROBE_KEYS;
  /** Children whose composite contains `*`, in declaration order (first match wins). */
  wildcards: readonly RuleNode[] = NO_WILDCARDS;
  /** Extension: children matching by `cidr:` or `prefix:` (undefined when none). */
  structured: StructuredChildren | undefined;

  constructor(
    readonly key: string,
    readonly value: string,
    /** `key` or `key_value`. */
    readonly composite: string,
    /** Dotted config path, starting with the domain. */
    readonly path: string,
    /** The descriptor's limit (of a `rate_limits` list: the first; `limit.group` has them all). */
    readonly limit: RateLimitRule | undefined,
    readonly matcher: WildcardMatcher | undefined,
    readonly detailedMetric: boolean,
    readonly valueToMetric: boolean,
    readonly shareThreshold: boolean,
    /** Extension: how the node matches the value when it is neither exact nor a wildcard. */
    readonly valueMatch: 'cidr' | 'prefix' | undefined = undefined,
  ) {}

  get hasChildren(): boolean {
    return this.children.size > 0 || this.structured !== undefined;
  }

  /** True when some child (exact, wildcard, cidr or prefix) has this composite. */
  hasComposite(composite: string): boolean {
    return this.children.has(composite) || this.structured?.byComposite.has(composite) === true;
  }

  /** Adds an exact, wildcard or value-less child (the builder checked the composite is new). */
  addChild(child: RuleNode): void {
    if (this.children === NO_CHILDREN) this.children = new Map<string, RuleNode>();
    (this.children as Map<string, RuleNode>).set(child.composite, child);
    const composite = child.composite;
    for (let p = composite.indexOf('_'); p >= 0; p = composite.indexOf('_', p + 1)) {
      if (this.probeKeys === NO_PROBE_KEYS) this.probeKeys = new Set<string>();
      (this.probeKeys as Set<string>).add(composite.slice(0, p));
    }
    if (child.matcher !== undefined) {
      if (this.wildcards === NO_WILDCARDS) this.wildcards = [];
      (this.wildcards as RuleNode[]).push(child);
    }
  }

  /** Adds a cidr: or prefix: child; returns the index of its descriptor key, for the caller to add the block or prefix to. */
  addStructured(child: RuleNode, newIndex: () => ValueIndex<RuleNode>): ValueIndex<RuleNode> {
    const s = (this.structured ??= { byComposite: new Map<string, RuleNode>(), byKey: new Map<string, ValueIndex<RuleNode>>() });
    s.byComposite.set(child.composite, child);
    let index = s.byKey.get(child.key);
    if (index === undefined) s.byKey.set(child.key, (index = newIndex()));
    return index;
  }

  /** Every child's composite, sorted (the listings: /rlconfig, the start-up summary). */
  sortedComposites(): string[] {
    const all = [...this.children.keys()];
    if (this.structured !== undefined) all.push(...this.structured.byComposite.keys());
    return all.sort();
  }

  /** The child with this composite, of any kind. */
  childByComposite(composite: string): RuleNode | undefined {
    return this.children.get(composite) ?? this.structured?.byComposite.get(composite);
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
