// Rule sources -> one validated, immutable RuleSet, and the lookup of a request descriptor's limit
// (upstream's src/config/config_impl.go: its error texts, and GetLimit's lookup incl. share_threshold and stat names).
import type { JsonValue, RequestDescriptor } from '../domain.js';
import { ConfigError } from '../errors.js';
import { unitDivider } from '../limiter/window.js';
import type { Algorithm } from '../store/counter-store.js';
import { StatsStore, type Counter } from '../stats/stats-store.js';
import { decodeRuleDocument, RuleFileError, type DescriptorSpec, type DomainSpec } from './rule-file.js';
import { RuleStatsCache, type RuleStats } from './rule-stats.js';
import { DomainNode, emissionMicros, NO_REPLACES, RateLimitRule, RuleNode, type Limit, type LimitMatch } from './rule-tree.js';
import { parseUnitName, unitName } from './units.js';
import { compileWildcard, hasWildcard } from './wildcard.js';
import { parseYamlDocuments, YamlSyntaxError } from './yaml-document.js';

export interface RuleSource {
  /** Name used in error messages: the file path relative to the rule directory, or an xDS resource name. */
  readonly name: string;
  readonly content: string;
}

export interface LoadOptions {
  /** MERGE_DOMAIN_CONFIG: a domain may appear in several documents; top-level descriptors are merged. */
  readonly mergeDomainConfig: boolean;
  /** Where rule counters are registered; a private store when omitted (config checking). */
  readonly stats?: StatsStore | undefined;
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
}

export interface DomainSummary {
  readonly domain: string;
  readonly descriptors: readonly RuleSummary[];
}

const EXACT = 0;
const WILDCARD = 1;
const VALUELESS = 2;
type MatchKind = typeof EXACT | typeof WILDCARD | typeof VALUELESS;

export class RuleSet {
  private statsCache: RuleStatsCache | undefined;
  /** `group`: the rule path (or domain) a per-value key belongs to, for the series cap (rule-stats.ts). */
  private readonly statsFor = (key: string, group?: string): RuleStats => (this.statsCache ??= new RuleStatsCache(this.stats)).get(key, group);

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
      const kv = e.key + '_' + e.value;
      let kind: MatchKind = EXACT;
      let node = level.children.get(kv);
      if (node === undefined) {
        for (const w of level.wildcards) {
          if (w.matcher!(kv)) {
            node = w;
            kind = WILDCARD;
            break;
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
      if (kinds[i] === WILDCARD && node.shareThreshold) {
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
        if (kind === WILDCARD && node.valueToMetric && !node.shareThreshold) key += '.' + e.key + '_' + e.value;
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
      let node = level.children.get(kv);
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
    const limit: Limit = {
      requestsPerUnit: o.requestsPerUnit,
      unit: o.unit,
      windowSeconds,
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
      burst: algorithm === 'token_bucket' ? o.requestsPerUnit : 0,
      emissionUs,
      toleranceUs: emissionUs * (algorithm === 'token_bucket' ? o.requestsPerUnit : 0),
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
      for (const composite of [...node.children.keys()].sort()) {
        const child = node.children.get(composite)!;
        const r = child.limit;
        if (r !== undefined) {
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
        for (const composite of [...node.children.keys()].sort()) {
          const child = node.children.get(composite)!;
          const r = child.limit;
          descriptors.push({
            key: child.path,
            limit: r === undefined ? undefined : r.unlimited ? 'unlimited' : `${r.requestsPerUnit}/${unitName(r.unit)}`,
            name: r?.name ?? '',
            shadowMode: r?.shadowMode ?? false,
            quotaMode: r?.quotaMode ?? false,
            replaces: r?.replaces ?? NO_REPLACES,
            algorithm: r?.algorithm ?? 'fixed_window',
            burst: r?.burst ?? 0,
          });
          visit(child);
        }
      };
      visit(this.domainMap.get(domain)!);
      return { domain, descriptors };
    });
  }
}

/** `/rlconfig`'s extension text: nothing for fixed_window (upstream's line unchanged). */
function algorithmText(r: RateLimitRule): string {
  if (r.algorithm === 'fixed_window') return '';
  return r.algorithm === 'token_bucket' ? `, algorithm: token_bucket, burst: ${r.burst}` : `, algorithm: ${r.algorithm}`;
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
      } catch (err) {
        if (err instanceof RuleFileError) return fail(err.message + where);
        throw err;
      }
      builder.sourceName = source.name;
      builder.add(spec, fail, where);
      return undefined;
    });
  }
  return builder.ruleSet;
}

/** Rule sources whose content is already decoded (xDS resources): one domain spec per source. */
export interface DecodedRuleSource {
  /** Name used in error messages (the xDS resource name). */
  readonly name: string;
  readonly spec: DomainSpec;
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
  }
  return builder.ruleSet;
}

class RuleSetBuilder {
  private readonly domains = new Map<string, DomainNode>();
  readonly ruleSet: RuleSet;
  constructor(private readonly opts: LoadOptions) {
    this.ruleSet = new RuleSet(this.domains, opts.stats ?? new StatsStore());
  }

  /** Name of the source being added (for RuleSet.algorithms). */
  sourceName = '';

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
    );
  }
}

function addDescriptors(
  root: DomainNode,
  parent: RuleNode,
  specs: readonly DescriptorSpec[],
  parentPath: string,
  fail: (message: string) => never,
  statsFor: (key: string, group?: string) => RuleStats,
  noteAlgorithm: (algorithm: Algorithm, path: string) => void,
): void {
  specs.forEach((d, index) => {
    // Decoded sources (xDS) have no lines: line 0 leaves the position out.
    const line = d.line > 0 ? `, line ${d.line}` : '';
    const at = (path: string): string => ` (descriptor '${path}'${line})`;
    if (d.key === '') fail(`descriptor has empty key (descriptor #${index + 1} under '${parentPath.slice(0, -1)}'${line})`);
    const composite = d.value === '' ? d.key : d.key + '_' + d.value;
    const path = parentPath + composite;
    if (parent.children.has(composite)) fail(`duplicate descriptor composite key '${path}'`);

    let rule: RateLimitRule | undefined;
    if (d.rateLimit !== undefined) {
      const rl = d.rateLimit;
      const parsed = parseUnitName(rl.unit);
      const validUnit = parsed !== undefined && parsed !== 0;
      if (rl.unlimited) {
        if (validUnit) fail('should not specify rate limit unit when unlimited' + at(path));
      } else if (!validUnit) {
        fail(`invalid rate limit unit '${rl.unit}'` + at(path));
      }
      for (const r of rl.replaces) {
        if (r.name === '') fail('should not have an empty replaces entry' + at(path));
        if (r.name === rl.name) fail('replaces should not contain name of same descriptor' + at(path));
      }
      const { algorithm, burst } = algorithmOf(rl, parsed ?? 0, (problem) => fail(problem + at(path)));
      if (algorithm !== 'fixed_window') {
        root.algorithmic = true;
        noteAlgorithm(algorithm, path);
      }
      rule = new RateLimitRule(
        rl.requestsPerUnit,
        rl.unlimited ? 0 : (parsed ?? 0),
        rl.name,
        rl.unlimited,
        d.shadowMode,
        d.quotaMode,
        rl.replaces.length === 0 ? NO_REPLACES : Object.freeze(rl.replaces.map((r) => r.name)),
        d.metadata === undefined ? undefined : deepFreeze(d.metadata),
        path,
        statsFor,
        algorithm,
        burst,
      );
    }
    const wildcard = hasWildcard(composite);
    if (d.shareThreshold && !wildcard) {
      fail(`share_threshold can only be used with wildcard values (containing '*'), but found key '${composite}'`);
    }
    const node = new RuleNode(
      d.key,
      d.value,
      composite,
      path,
      rule,
      wildcard ? compileWildcard(composite) : undefined,
      d.detailedMetric,
      d.valueToMetric,
      d.shareThreshold,
    );
    if (d.detailedMetric || d.valueToMetric || d.shareThreshold) root.dynamic = true;
    addDescriptors(root, node, d.descriptors, path + '.', fail, statsFor, noteAlgorithm);
    parent.children.set(composite, node);
    if (wildcard) parent.wildcards.push(node);
  });
}

const ALGORITHMS: readonly Algorithm[] = ['fixed_window', 'sliding_window', 'token_bucket'];
const MAX_BURST = 4294967295;
/** A bucket may run at most this far ahead of now (10 years in µs), so every TAT stays an exact integer below 2^53. */
const MAX_TOLERANCE_US = 10 * 31_536_000 * 1_000_000;

/** Validates the extension fields of one rate_limit (docs/ratelimit.md, "Algorithms (extension)"). */
function algorithmOf(
  rl: { readonly algorithm: string; readonly burst: number | string | undefined; readonly unlimited: boolean; readonly requestsPerUnit: number },
  unit: number,
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
  const toleranceUs = b * emissionMicros(unitDivider(unit), rl.requestsPerUnit);
  if (toleranceUs > MAX_TOLERANCE_US) fail(`burst ${b} at ${rl.requestsPerUnit} per unit takes more than 10 years to refill; lower burst or raise requests_per_unit`);
  return { algorithm: 'token_bucket', burst: b };
}

function deepFreeze<T extends { readonly [k: string]: JsonValue }>(obj: T): T {
  for (const v of Object.values(obj)) if (v !== null && typeof v === 'object') deepFreeze(v as { [k: string]: JsonValue });
  return Object.freeze(obj);
}
