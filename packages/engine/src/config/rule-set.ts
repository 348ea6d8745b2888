// Rule sources -> one validated, immutable RuleSet, and the lookup of a request descriptor's limit
// (upstream's src/config/config_impl.go: its error texts, and GetLimit's lookup incl. share_threshold and stat names).
import type { DescriptorEntry, JsonValue, RequestDescriptor } from '../domain.js';
import { ConfigError } from '../errors.js';
import type { Algorithm } from '../store/counter-store.js';
import { StatsStore, type Counter } from '../stats/stats-store.js';
import { decodeRuleDocument, RuleFileError, type DescriptorSpec, type DomainSpec, type RateLimitSpec } from './rule-file.js';
import { RuleStatsCache, type RuleStats } from './rule-stats.js';
import { parseCidr, type Cidr } from './ip-address.js';
import { DomainNode, emissionMicros, keyTailOf, NO_REPLACES, policyParamsOf, RateLimitRule, RuleInterner, RuleNode, structuredChild, type Limit, type LimitMatch } from './rule-tree.js';
import { parseUnitName, unitDivider, unitName } from '../units.js';
import { ValueIndex } from './value-index.js';
import { compileWildcard, hasWildcard } from './wildcard.js';
import { DEFAULT_QUOTA_EXTENSIONS } from './cidr-value-matcher.js';
import type { ValueMatcherExtension } from './quota-matcher.js';
import { buildQuotaRuleSet, EMPTY_QUOTA_RULES, type QuotaDocumentSource, type QuotaRuleSet } from './quota-rule-set.js';
import { decodeQuotaDocument, type QuotaDocumentSpec } from './quota-rules.js';
import { parseYamlDocuments, YamlSyntaxError } from './yaml-document.js';

import type { RuleSource } from './rule-file.js';
export type { RuleSource };

export interface LoadOptions {
  /** MERGE_DOMAIN_CONFIG: a domain may appear in several documents; top-level descriptors are merged. */
  readonly mergeDomainConfig: boolean;
  /** Where rule counters are registered; a private store when omitted (config checking). */
  readonly stats?: StatsStore | undefined;
  /** Value matchers of quota_buckets bucket ids (`{ cidr: ... }`); DEFAULT_QUOTA_EXTENSIONS when omitted. */
  readonly quotaExtensions?: ReadonlyMap<string, ValueMatcherExtension> | undefined;
}

export interface RuleSummary {
  /** Config path, e.g. `test-domain.key1_value1.subkey1`. */
  readonly key: string;
  /** `5/SECOND`, `unlimited`, or undefined for a node without rate_limit. */
  readonly limit: string | undefined;
  readonly name: string;
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly replaces: readonly string[];
  /** Extension: the counting algorithm (fixed_window for nodes without a limit). */
  readonly algorithm: Algorithm;
  /** token_bucket: the bucket size; 0 otherwise. */
  readonly burst: number;
  /** Extension: the window is this many units (1 when not set). */
  readonly unitMultiplier: number;
}

export interface DomainSummary {
  readonly domain: string;
  readonly descriptors: readonly RuleSummary[];
}

const EXACT = 0;
const WILDCARD = 1;
const VALUELESS = 2;
/** Matched by `cidr:` or `prefix:` (statistics and share_threshold as for a wildcard). */
const STRUCTURED = 3;
type MatchKind = typeof EXACT | typeof WILDCARD | typeof VALUELESS | typeof STRUCTURED;

export class RuleSet {
  private statsCache: RuleStatsCache | undefined;
  /** `group`: the rule path (or domain) a per-value key belongs to, for the series cap (rule-stats.ts). */
  private readonly statsFor = (key: string, group?: string): RuleStats => (this.statsCache ??= new RuleStatsCache(this.stats)).get(key, group);

  /** The RLQS quota rules of the same sources (set once by the builder). */
  private quotaRuleSet: QuotaRuleSet = EMPTY_QUOTA_RULES;

  /** The RLQS quota rules (`quota_buckets:` / `default_quota:`) loaded with these rules; swapped with them on reload. */
  get quotaRules(): QuotaRuleSet {
    return this.quotaRuleSet;
  }

  /** @internal the builder sets the quota rules it compiled from the same documents */
  setQuotaRules(rules: QuotaRuleSet): void {
    this.quotaRuleSet = rules;
  }

  /** Algorithms other than fixed_window that some rule uses (filled by the builder). */
  private readonly usedAlgorithms = new Map<Algorithm, string>();

  /** @internal use loadRuleSet */
  constructor(
    private readonly domainMap: ReadonlyMap<string, DomainNode>,
    private readonly stats: StatsStore,
  ) {}

  /** @internal the builder records each non-fixed algorithm with the first rule (`<source>: descriptor '<path>'`) using it */
  noteAlgorithm(algorithm: Algorithm, where: string): void {
    if (!this.usedAlgorithms.has(algorithm)) this.usedAlgorithms.set(algorithm, where);
  }

  /** Algorithms other than fixed_window some rule uses, each with the first rule that uses it. */
  get algorithms(): ReadonlyMap<Algorithm, string> {
    return this.usedAlgorithms;
  }

  /** @internal the builder needs the cached stats factory for the rules it creates */
  get statsFactory(): (key: string, group?: string) => RuleStats {
    return this.statsFor;
  }

  /** Loaded domains, sorted. */
  domains(): string[] {
    return [...this.domainMap.keys()].sort();
  }

  get domainCount(): number {
    return this.domainMap.size;
  }

  /**
   * True when `getLimit` for this domain's descriptors (without a request override) depends only
   * on the descriptor and counts nothing itself: the domain is loaded and none of its rules has
   * per-value statistics or share_threshold. Such matches may be kept for as long as this rule set
   * is in force (RateLimitService.prepare).
   */
  hasStableMatches(domain: string): boolean {
    const root = this.domainMap.get(domain);
    return root !== undefined && !root.dynamic;
  }

  /**
   * The limit that applies to one request descriptor, or undefined (no rule, whitelisted, depth
   * mismatch, unknown domain). An unknown domain bumps `<domain>.domain_not_found`.
   */
  getLimit(domain: string, descriptor: RequestDescriptor): LimitMatch | undefined {
    const root = this.domainMap.get(domain);
    if (root === undefined) {
      this.domainNotFound(domain).inc();
      return undefined;
    }
    if (descriptor.limit !== undefined) return this.overrideMatch(root, descriptor, root.algorithmic ? this.ruleOf(root, descriptor.entries) : undefined);

    const entries = descriptor.entries;
    const n = entries.length;
    // Per-level bookkeeping is only needed when the domain has rules with dynamic stats or sharing.
    const track = root.dynamic;
    const nodes: RuleNode[] | undefined = track ? new Array<RuleNode>(n) : undefined;
    const kinds: MatchKind[] | undefined = track ? new Array<MatchKind>(n) : undefined;
    let level: RuleNode = root;
    let found: RateLimitRule | undefined;
    for (let i = 0; i < n; i++) {
      const e = entries[i]!;
      // `key_value`, built only for a probe that can find something (RuleNode.probeKeys).
      let kv: string | undefined;
      let kind: MatchKind = EXACT;
      let node = level.probeKeys.has(e.key) ? level.children.get((kv = e.key + '_' + e.value)) : undefined;
      if (node === undefined) {
        // Extension: the longest cidr / prefix rule of this key, before wildcards (docs: precedence).
        const structured = level.structured;
        if (structured !== undefined) {
          node = structuredChild(structured, e.key, e.value, kv);
          // A child found as its composite written exactly is an exact match; the kind is read only when tracking.
          kind = track && node !== undefined && node.composite === (kv ??= e.key + '_' + e.value) ? EXACT : STRUCTURED;
        }
        if (node === undefined && level.wildcards.length > 0) {
          kv ??= e.key + '_' + e.value;
          for (const w of level.wildcards) {
            if (w.matcher!(kv)) {
              node = w;
              kind = WILDCARD;
              break;
            }
          }
        }
        if (node === undefined) {
          node = level.children.get(e.key);
          kind = VALUELESS;
        }
      }
      if (node === undefined) break;
      if (track) {
        nodes![i] = node;
        kinds![i] = kind;
      }
      if (i === n - 1 && node.limit !== undefined) found = node.limit;
      if (!node.hasChildren) break;
      level = node;
    }
    if (found === undefined) return undefined;
    if (!track) return found.staticMatch;
    return this.dynamicMatch(root.domain, found, entries, nodes!, kinds!);
  }

  private dynamicMatch(
    domain: string,
    rule: RateLimitRule,
    entries: RequestDescriptor['entries'],
    nodes: RuleNode[],
    kinds: MatchKind[],
  ): LimitMatch {
    const n = entries.length;
    let patterns: (string | undefined)[] | undefined;
    for (let i = 0; i < n; i++) {
      const node = nodes[i]!;
      if ((kinds[i] === WILDCARD || kinds[i] === STRUCTURED) && node.shareThreshold) {
        patterns ??= new Array<string | undefined>(n).fill(undefined);
        patterns[i] = node.value;
      }
    }
    const leaf = nodes[n - 1]!;
    let key: string;
    if (leaf.detailedMetric) {
      key = domain;
      for (let i = 0; i < n; i++) {
        const e = entries[i]!;
        const p = patterns?.[i];
        if (patterns === undefined) key += '.' + e.key + '_' + e.value;
        else if (p !== undefined) key += '.' + e.key + '_' + p;
        else key += e.value === '' ? '.' + e.key : '.' + e.key + '_' + e.value;
      }
    } else {
      key = domain;
      for (let i = 0; i < n; i++) {
        const e = entries[i]!;
        const node = nodes[i]!;
        const kind = kinds[i];
        if ((kind === WILDCARD || kind === STRUCTURED) && node.valueToMetric && !node.shareThreshold) key += '.' + e.key + '_' + e.value;
        else if (kind === VALUELESS && node.valueToMetric && e.value !== '') key += '.' + node.key + '_' + e.value;
        else key += '.' + node.composite;
      }
    }
    return rule.matchWith(key, patterns);
  }

  /** The rule a descriptor matches when it carries no override (no stats, no sharing): for an override's algorithm. */
  private ruleOf(root: DomainNode, entries: RequestDescriptor['entries']): RateLimitRule | undefined {
    let level: RuleNode = root;
    const n = entries.length;
    for (let i = 0; i < n; i++) {
      const e = entries[i]!;
      const kv = e.key + '_' + e.value;
      let node = level.children.get(kv) ?? structuredMatch(level, e, kv);
      if (node === undefined) {
        for (const w of level.wildcards) {
          if (w.matcher!(kv)) {
            node = w;
            break;
          }
        }
        node ??= level.children.get(e.key);
      }
      if (node === undefined) return undefined;
      if (i === n - 1) return node.limit;
      if (!node.hasChildren) return undefined;
      level = node;
    }
    return undefined;
  }

  /**
   * What a descriptor (without override) matches, for looking at its counters (the debug port's
   * /counters): every limit (one, or a `rate_limits` list) and the share_threshold substitutions
   * its keys use. Unlike `getLimit` it counts nothing and creates no statistics. Undefined when no
   * rule with a limit matches (or the domain is unknown); unlimited rules give an empty list.
   */
  lookup(domain: string, entries: readonly DescriptorEntry[]): { readonly limits: readonly Limit[]; readonly sharePatterns: readonly (string | undefined)[] | undefined } | undefined {
    const root = this.domainMap.get(domain);
    if (root === undefined) return undefined;
    let level: RuleNode = root;
    let patterns: (string | undefined)[] | undefined;
    const n = entries.length;
    for (let i = 0; i < n; i++) {
      const e = entries[i]!;
      const kv = e.key + '_' + e.value;
      let shared = false;
      let node = level.children.get(kv);
      if (node === undefined) {
        node = structuredMatch(level, e, kv);
        if (node === undefined) {
          for (const w of level.wildcards) {
            if (w.matcher!(kv)) {
              node = w;
              break;
            }
          }
        }
        shared = node !== undefined && node.shareThreshold;
        node ??= level.children.get(e.key);
      }
      if (node === undefined) return undefined;
      if (shared) (patterns ??= new Array<string | undefined>(n).fill(undefined))[i] = node.value;
      if (i === n - 1) {
        const r = node.limit;
        if (r === undefined) return undefined;
        return { limits: r.unlimited ? [] : (r.group ?? [r]), sharePatterns: patterns };
      }
      if (!node.hasChildren) return undefined;
      level = node;
    }
    return undefined;
  }

  /**
   * A request override (`limit` in the descriptor). It counts with the algorithm of the rule the
   * descriptor matches without it (fixed_window when none matches, as upstream); a token bucket's
   * burst is then the override's requests_per_unit. An override of 0 requests always counts in a
   * fixed window (there is no rate to refill a bucket at).
   */
  private overrideMatch(root: DomainNode, descriptor: RequestDescriptor, rule: RateLimitRule | undefined): LimitMatch {
    const o = descriptor.limit!;
    const windowSeconds = unitDivider(o.unit);
    let algorithm: Algorithm = rule === undefined || rule.unlimited ? 'fixed_window' : rule.algorithm;
    if (algorithm === 'token_bucket' && (o.requestsPerUnit === 0 || windowSeconds === 0)) algorithm = 'fixed_window';
    const emissionUs = algorithm === 'token_bucket' ? emissionMicros(windowSeconds, o.requestsPerUnit) : 0;
    let key = root.domain + '.';
    descriptor.entries.forEach((e, i) => {
      key += (i > 0 ? '.' : '') + (e.value === '' ? e.key : e.key + '_' + e.value);
    });
    const burst = algorithm === 'token_bucket' ? o.requestsPerUnit : 0;
    const limit: Limit = {
      requestsPerUnit: o.requestsPerUnit,
      unit: o.unit,
      windowSeconds,
      unitMultiplier: 1,
      keyTail: keyTailOf(algorithm, windowSeconds, o.requestsPerUnit, false),
      policyParams: policyParamsOf(algorithm, o.requestsPerUnit, windowSeconds, burst, emissionUs),
      policyName: '',
      name: '',
      unlimited: false,
      shadowMode: false,
      quotaMode: false,
      replaces: NO_REPLACES,
      metadata: undefined,
      fullKey: key,
      isOverride: true,
      currentLimit: { requestsPerUnit: o.requestsPerUnit, unit: o.unit, name: '' },
      algorithm,
      burst,
      emissionUs,
      toleranceUs: emissionUs * burst,
    };
    return { limit, stats: this.statsFor(key, root.domain), sharePatterns: undefined };
  }

  private domainNotFound(domain: string): Counter {
    // Capped per the series limit: the domain comes from the request (rule-stats.ts).
    return (this.statsCache ??= new RuleStatsCache(this.stats)).domainNotFound(domain);
  }

  /**
   * The `/rlconfig` text: one line per rule with a rate_limit, depth first, domains and siblings
   * sorted (upstream prints them in random order).
   */
  dump(): string {
    let out = '';
    const visit = (node: RuleNode): void => {
      for (const composite of node.sortedComposites()) {
        const child = node.childByComposite(composite)!;
        for (const r of limitsOf(child)) {
          const unit = r.unlimited ? 'UNKNOWN' : unitName(r.unit);
          out += `${r.fullKey}: unit=${unit} requests_per_unit=${r.requestsPerUnit}, shadow_mode: ${String(r.shadowMode)}, quota_mode: ${String(r.quotaMode)}${algorithmText(r)}\n`;
        }
        visit(child);
      }
    };
    for (const domain of this.domains()) visit(this.domainMap.get(domain)!);
    return out;
  }

  /** Every domain and descriptor with its limit, sorted as in `dump()`; for start-up logging. */
  summary(): DomainSummary[] {
    return this.domains().map((domain) => {
      const descriptors: RuleSummary[] = [];
      const visit = (node: RuleNode): void => {
        for (const composite of node.sortedComposites()) {
          const child = node.childByComposite(composite)!;
          const limits = limitsOf(child);
          for (const r of limits.length === 0 ? [undefined] : limits) {
            descriptors.push({
              key: r?.fullKey ?? child.path,
              limit: r === undefined ? undefined : r.unlimited ? 'unlimited' : `${r.requestsPerUnit}/${r.unitMultiplier === 1 ? '' : `${r.unitMultiplier} × `}${unitName(r.unit)}`,
              name: r?.name ?? '',
              shadowMode: r?.shadowMode ?? false,
              quotaMode: r?.quotaMode ?? false,
              replaces: r?.replaces ?? NO_REPLACES,
              algorithm: r?.algorithm ?? 'fixed_window',
              burst: r?.burst ?? 0,
              unitMultiplier: r?.unitMultiplier ?? 1,
            });
          }
          visit(child);
        }
      };
      visit(this.domainMap.get(domain)!);
      return { domain, descriptors };
    });
  }
}

/** The cidr:/prefix: child a value matches (structuredChild). */
function structuredMatch(level: RuleNode, e: DescriptorEntry, kv: string): RuleNode | undefined {
  const structured = level.structured;
  return structured === undefined ? undefined : structuredChild(structured, e.key, e.value, kv);
}

/** Every limit of a node: one, the entries of its `rate_limits` list, or none. */
function limitsOf(node: RuleNode): readonly RateLimitRule[] {
  const r = node.limit;
  if (r === undefined) return [];
  return r.group ?? [r];
}

/** `/rlconfig`'s extension text: nothing for a fixed window of one unit (upstream's line unchanged). */
function algorithmText(r: RateLimitRule): string {
  const multiplier = r.unitMultiplier === 1 ? '' : `, unit_multiplier: ${r.unitMultiplier}`;
  if (r.algorithm === 'fixed_window') return multiplier;
  return multiplier + (r.algorithm === 'token_bucket' ? `, algorithm: token_bucket, burst: ${r.burst}` : `, algorithm: ${r.algorithm}`);
}

/**
 * Validates and compiles rule sources, processed in the order given (callers sort them). Every
 * YAML document of a source is one domain config. Throws ConfigError(`<name>: <problem>`) on the
 * first problem; nothing partial is returned.
 */
export function loadRuleSet(sources: readonly RuleSource[], opts: LoadOptions): RuleSet {
  const builder = new RuleSetBuilder(opts);
  for (const source of sources) {
    const fail = (message: string): never => {
      throw new ConfigError(`${source.name}: ${message}`);
    };
    let docs: ReturnType<typeof parseYamlDocuments>;
    try {
      docs = parseYamlDocuments(source.content);
    } catch (err) {
      if (err instanceof YamlSyntaxError) return fail(`error loading config file: ${err.message}`);
      throw err;
    }
    const contentful = docs.filter((d) => d !== null);
    const list = contentful.length > 0 ? contentful : [null];
    list.forEach((doc, docIndex) => {
      const where = list.length > 1 ? ` (document ${docIndex + 1})` : '';
      let spec;
      try {
        spec = decodeRuleDocument(doc);
        const quota = decodeQuotaDocument(doc);
        if (quota !== undefined) builder.quotaDocs.push({ name: source.name + where, spec: quota });
      } catch (err) {
        if (err instanceof RuleFileError) return fail(err.message + where);
        throw err;
      }
      builder.sourceName = source.name;
      builder.add(spec, fail, where);
      return undefined;
    });
  }
  return builder.finish();
}

/** Rule sources whose content is already decoded (xDS resources): one domain spec per source. */
export interface DecodedRuleSource {
  /** Name used in error messages (the xDS resource name). */
  readonly name: string;
  readonly spec: DomainSpec;
  /** The resource's quota rules, when it carries any. */
  readonly quota?: QuotaDocumentSpec | undefined;
}

/**
 * Same validation and result as `loadRuleSet`, for sources that arrive as typed objects instead
 * of YAML text. Errors read `<name>: <problem>`.
 */
export function loadRuleSetFromSpecs(sources: readonly DecodedRuleSource[], opts: LoadOptions): RuleSet {
  const builder = new RuleSetBuilder(opts);
  for (const source of sources) {
    builder.sourceName = source.name;
    builder.add(source.spec, (message: string): never => {
      throw new ConfigError(`${source.name}: ${message}`);
    }, '');
    if (source.quota !== undefined) builder.quotaDocs.push({ name: source.name, spec: source.quota });
  }
  return builder.finish();
}

class RuleSetBuilder {
  private readonly domains = new Map<string, DomainNode>();
  readonly ruleSet: RuleSet;
  constructor(private readonly opts: LoadOptions) {
    this.ruleSet = new RuleSet(this.domains, opts.stats ?? new StatsStore());
  }

  /** Name of the source being added (for RuleSet.algorithms). */
  sourceName = '';

  /** The cidr/prefix indexes built, to trim once every rule is in. */
  private readonly indexes: ValueIndex<RuleNode>[] = [];

  /** The quota parts of the documents added, compiled by finish(). */
  readonly quotaDocs: QuotaDocumentSource[] = [];

  /** The rule set, its indexes trimmed to what they hold (no rule is added after this). */
  finish(): RuleSet {
    for (const index of this.indexes) index.trim();
    this.indexes.length = 0;
    if (this.quotaDocs.length > 0) {
      this.ruleSet.setQuotaRules(
        buildQuotaRuleSet(this.quotaDocs, { mergeDomainConfig: this.opts.mergeDomainConfig, extensions: this.opts.quotaExtensions ?? DEFAULT_QUOTA_EXTENSIONS }),
      );
    }
    return this.ruleSet;
  }

  add(spec: DomainSpec, fail: (message: string) => never, where: string): void {
    if (spec.domain === '') fail('config file cannot have empty domain' + where);
    let root = this.domains.get(spec.domain);
    if (root !== undefined && !this.opts.mergeDomainConfig) fail(`duplicate domain '${spec.domain}' in config file`);
    if (root === undefined) {
      root = new DomainNode(spec.domain);
      this.domains.set(spec.domain, root);
    }
    addDescriptors(root, root, spec.descriptors, spec.domain + '.', fail, this.ruleSet.statsFactory, (algorithm, path) =>
      this.ruleSet.noteAlgorithm(algorithm, `${this.sourceName}: descriptor '${path}'`),
    this.shared, () => {
      const index = new ValueIndex<RuleNode>();
      this.indexes.push(index);
      return index;
    });
  }

  /** Texts and current_limit objects the rules of this load share (dropped with the builder). */
  private readonly shared = new RuleInterner();
}

function addDescriptors(
  root: DomainNode,
  parent: RuleNode,
  specs: readonly DescriptorSpec[],
  parentPath: string,
  fail: (message: string) => never,
  statsFor: (key: string, group?: string) => RuleStats,
  noteAlgorithm: (algorithm: Algorithm, path: string) => void,
  shared: RuleInterner,
  newIndex: () => ValueIndex<RuleNode>,
): void {
  specs.forEach((d, index) => {
    // Decoded sources (xDS) have no lines: line 0 leaves the position out.
    const line = d.line > 0 ? `, line ${d.line}` : '';
    const at = (path: string): string => ` (descriptor '${path}'${line})`;
    if (d.key === '') fail(`descriptor has empty key (descriptor #${index + 1} under '${parentPath.slice(0, -1)}'${line})`);
    const valueMatch = d.cidr !== undefined ? 'cidr' : d.prefix !== undefined ? 'prefix' : undefined;
    const key = shared.text(d.key);
    let value = shared.text(d.value);
    // The blocks (or prefixes) the rule matches by: one, or a list's (one rule for all of them).
    let blocks: Cidr[] | undefined;
    let prefixes: readonly string[] | undefined;
    if (valueMatch !== undefined) {
      // Extension (docs/ratelimit.md, "Matching by CIDR and prefix"); xDS can carry value and cidr together.
      const where = at(parentPath + d.key);
      if (d.value !== '') fail(`a descriptor matches by one of value, cidr or prefix, not value and ${valueMatch}` + where);
      if (d.cidr !== undefined && d.prefix !== undefined) fail('a descriptor matches by one of value, cidr or prefix, not cidr and prefix' + where);
      const list = typeof d.cidr === 'string' || typeof d.prefix === 'string' ? undefined : (d.cidr ?? d.prefix)!;
      const entry = (i: number): string => (list === undefined ? '' : `${valueMatch} list entry #${i + 1}: `);
      if (d.cidr !== undefined) {
        const texts = typeof d.cidr === 'string' ? [d.cidr] : d.cidr;
        blocks = texts.map((text, i) => {
          const cidr = parseCidr(text);
          if (typeof cidr === 'string') return fail(entry(i) + cidr + where);
          return cidr;
        });
        value = blocks[0]!.text;
      } else {
        prefixes = typeof d.prefix === 'string' ? [d.prefix] : d.prefix!;
        prefixes.forEach((p, i) => {
          if (p === '') fail(entry(i) + 'prefix must not be empty (a descriptor without value matches every value)' + where);
        });
        value = [prefixes[0]!, '*'].join('');
      }
      // A list is named by its first entry and how many follow: `10.0.0.0/8+2` (docs: lists).
      if (list !== undefined && list.length > 1) value = [value, '+', String(list.length - 1)].join('');
    }
    // Kept by the rule: built by joining, so each is one flat string (not a chain of concatenations).
    const composite = value === '' ? key : [key, value].join('_');
    const path = [parentPath, composite].join('');
    if (parent.hasComposite(composite)) fail(`duplicate descriptor composite key '${path}'`);

    const metadata = d.metadata === undefined ? undefined : deepFreeze(d.metadata);
    let rule: RateLimitRule | undefined;
    if (d.rateLimit !== undefined) {
      rule = ruleOfSpec(d.rateLimit, '', path, at(path), d, metadata);
    } else if (d.rateLimits !== undefined) {
      rule = listOfSpecs(d.rateLimits, path, d, metadata);
    }
    for (const r of rule?.group ?? (rule === undefined ? [] : [rule])) {
      if (r.algorithm !== 'fixed_window') {
        root.algorithmic = true;
        noteAlgorithm(r.algorithm, path);
      }
    }
    const wildcard = valueMatch === undefined && hasWildcard(composite);
    if (d.shareThreshold && !wildcard && valueMatch === undefined) {
      fail(`share_threshold can only be used with wildcard values (containing '*'), but found key '${composite}'`);
    }
    const node = new RuleNode(
      key,
      value,
      composite,
      path,
      rule,
      wildcard ? compileWildcard(composite) : undefined,
      d.detailedMetric,
      d.valueToMetric,
      d.shareThreshold,
      valueMatch,
    );
    if (d.detailedMetric || d.valueToMetric || d.shareThreshold) root.dynamic = true;
    addDescriptors(root, node, d.descriptors, path + '.', fail, statsFor, noteAlgorithm, shared, newIndex);
    if (valueMatch === undefined) {
      parent.addChild(node);
    } else {
      const byKey = parent.addStructured(node, newIndex);
      // A block or prefix is in one rule of a key at one level: written twice (in one list, or in two
      // rules) it is refused, saying which (looked up only then: nothing extra on a list that loads).
      const twice = (text: string, earlierInList: boolean): never =>
        fail(`${valueMatch} ${text} is written twice under key '${d.key}' (${earlierInList ? 'in this list' : 'by another rule of this level'})` + at(path));
      if (blocks !== undefined) {
        blocks.forEach((b, i) => {
          if (!byKey.addCidr(b, node)) twice(b.text, blocks.findIndex((x) => x.text === b.text) < i);
        });
      } else {
        prefixes!.forEach((p, i) => {
          if (!byKey.addPrefix(p, node)) twice(JSON.stringify(p), prefixes!.indexOf(p) < i);
        });
      }
    }
  });

  /** One limit (`rate_limit`, or an entry of `rate_limits` with its stats suffix). */
  function ruleOfSpec(
    rl: RateLimitSpec,
    statsSuffix: string,
    path: string,
    where: string,
    d: DescriptorSpec,
    metadata: { readonly [k: string]: JsonValue } | undefined,
  ): RateLimitRule {
    const parsed = parseUnitName(rl.unit);
    const validUnit = parsed !== undefined && parsed !== 0;
    if (rl.unlimited) {
      if (validUnit) fail('should not specify rate limit unit when unlimited' + where);
    } else if (!validUnit) {
      fail(`invalid rate limit unit '${rl.unit}'` + where);
    }
    for (const r of rl.replaces) {
      if (r.name === '') fail('should not have an empty replaces entry' + where);
      if (r.name === rl.name) fail('replaces should not contain name of same descriptor' + where);
    }
    const unit = rl.unlimited ? 0 : (parsed ?? 0);
    const unitMultiplier = unitMultiplierOf(rl, unit, (problem) => fail(problem + where));
    const { algorithm, burst } = algorithmOf(rl, unitDivider(unit) * unitMultiplier, (problem) => fail(problem + where));
    return new RateLimitRule(
      rl.requestsPerUnit,
      unit,
      shared.text(rl.name),
      rl.unlimited,
      d.shadowMode,
      d.quotaMode,
      rl.replaces.length === 0 ? NO_REPLACES : Object.freeze(rl.replaces.map((r) => shared.text(r.name))),
      metadata,
      statsSuffix === '' ? path : [path, statsSuffix].join(''),
      statsFor,
      algorithm,
      burst,
      unitMultiplier,
      statsSuffix,
      shared,
    );
  }

  /** `rate_limits`: every entry a limit of its own, tagged keys, statistics under `<path>.<name or index>`. */
  function listOfSpecs(list: readonly RateLimitSpec[], path: string, d: DescriptorSpec, metadata: { readonly [k: string]: JsonValue } | undefined): RateLimitRule | undefined {
    const descriptorAt = ` (descriptor '${path}'${d.line > 0 ? `, line ${d.line}` : ''})`;
    if (list.length === 0) fail('rate_limits must list at least one limit' + descriptorAt);
    if (list.length > MAX_LIMITS_PER_DESCRIPTOR) fail(`rate_limits lists ${list.length} limits; at most ${MAX_LIMITS_PER_DESCRIPTOR} (each costs a counter per request)` + descriptorAt);
    const rules = list.map((rl, i) => {
      const where = ` (descriptor '${path}', rate_limits entry ${i + 1}${rl.line > 0 ? `, line ${rl.line}` : d.line > 0 ? `, line ${d.line}` : ''})`;
      if (rl.unlimited) fail('a rate_limits entry cannot be unlimited (use rate_limit: {unlimited: true} for the whole descriptor)' + where);
      return ruleOfSpec(rl, '.' + (rl.name !== '' ? rl.name : String(i)), path, where, d, metadata);
    });
    for (let i = 0; i < rules.length; i++) {
      for (let j = 0; j < i; j++) {
        const a = rules[j]!;
        const b = rules[i]!;
        if (a.statsSuffix === b.statsSuffix) fail(`rate_limits entries ${j + 1} and ${i + 1} have the same name '${b.name}'` + descriptorAt);
        if (a.keyTail === b.keyTail) {
          fail(`rate_limits entries ${j + 1} and ${i + 1} count the same ${b.algorithm} window of ${b.windowSeconds} seconds${b.algorithm === 'token_bucket' ? ` at ${b.requestsPerUnit} per window` : ''}, so they would share one counter; keep one of them` + descriptorAt);
        }
      }
    }
    const group = Object.freeze(rules);
    for (const r of rules) r.group = group;
    return rules[0];
  }
}

/** Most limits one `rate_limits` list may carry: every limit is one more counter (store op) per request. */
export const MAX_LIMITS_PER_DESCRIPTOR = 16;
/** Longest window (unit × unit_multiplier): 10 years, as for a token bucket's refill. */
const MAX_WINDOW_SECONDS = 10 * 31_536_000;

/** Validates `unit_multiplier` (docs/ratelimit.md, "Windows of several units"). */
function unitMultiplierOf(rl: RateLimitSpec, unit: number, fail: (problem: string) => never): number {
  const m = rl.unitMultiplier;
  if (m === undefined) return 1;
  if (rl.unlimited) fail('should not specify unit_multiplier when unlimited');
  const max = Math.floor(MAX_WINDOW_SECONDS / Math.max(1, unitDivider(unit)));
  if (typeof m === 'string' || !Number.isSafeInteger(m) || m < 1) fail(`unit_multiplier must be an integer from 1 to ${max}, got ${typeof m === 'string' ? `'${m}'` : String(m)}`);
  if (m > max) fail(`unit_multiplier ${m} × ${unitName(unit)} is a window longer than 10 years; at most ${max}`);
  return m;
}

const ALGORITHMS: readonly Algorithm[] = ['fixed_window', 'sliding_window', 'token_bucket'];
const MAX_BURST = 4294967295;
/** A bucket may run at most this far ahead of now (10 years in µs), so every TAT stays an exact integer below 2^53. */
const MAX_TOLERANCE_US = 10 * 31_536_000 * 1_000_000;

/** Validates the extension fields of one rate_limit (docs/ratelimit.md, "Algorithms (extension)"); `windowSeconds`: unit × unit_multiplier. */
function algorithmOf(
  rl: { readonly algorithm: string; readonly burst: number | string | undefined; readonly unlimited: boolean; readonly requestsPerUnit: number },
  windowSeconds: number,
  fail: (problem: string) => never,
): { algorithm: Algorithm; burst: number } {
  const written = rl.algorithm;
  const algorithm = written === '' ? 'fixed_window' : ALGORITHMS.find((a) => a === written);
  if (algorithm === undefined) fail(`unknown rate limit algorithm '${written}' (expected one of ${ALGORITHMS.join(', ')})`);
  if (rl.unlimited && written !== '') fail('should not specify algorithm when unlimited');
  const b = rl.burst;
  if (b === undefined) {
    if (algorithm === 'token_bucket' && rl.requestsPerUnit === 0) fail('token_bucket needs requests_per_unit of at least 1 (it is the refill rate)');
    return algorithm === 'token_bucket' ? { algorithm, burst: rl.requestsPerUnit } : { algorithm, burst: 0 };
  }
  if (algorithm !== 'token_bucket') fail(`burst is only valid with algorithm token_bucket, not ${algorithm}`);
  if (typeof b === 'string') fail(`burst must be an integer from 1 to ${MAX_BURST}, got '${b}'`);
  if (b < 1 || b > MAX_BURST) fail(`burst must be an integer from 1 to ${MAX_BURST}, got ${String(b)}`);
  if (rl.requestsPerUnit === 0) fail('token_bucket needs requests_per_unit of at least 1 (it is the refill rate)');
  const toleranceUs = b * emissionMicros(windowSeconds, rl.requestsPerUnit);
  if (toleranceUs > MAX_TOLERANCE_US) fail(`burst ${b} at ${rl.requestsPerUnit} per unit takes more than 10 years to refill; lower burst or raise requests_per_unit`);
  return { algorithm: 'token_bucket', burst: b };
}

function deepFreeze<T extends { readonly [k: string]: JsonValue }>(obj: T): T {
  for (const v of Object.values(obj)) if (v !== null && typeof v === 'object') deepFreeze(v as { [k: string]: JsonValue });
  return Object.freeze(obj);
}
