// Rule sources -> one immutable QuotaRuleSet: per domain, the compiled quota_buckets matcher and
// the default quota. Mirrors loadRuleSet (config/rule-set.ts): sources processed in the order
// given, every YAML document one domain, the first problem thrown as ConfigError naming the
// source, the entry and the line, nothing partial returned.
import { ConfigError } from '../errors.js';
import { RuleFileError } from './rule-file.js';
import type { RuleSource } from './rule-file.js';
import { parseYamlDocuments, YamlSyntaxError } from './yaml-document.js';
import { QuotaMatcher, type QuotaMatcherOptions, type QuotaRule } from './quota-matcher.js';
import { BUILTIN_DEFAULT_QUOTA, decodeQuotaDocument, lineNote, patternKey, type QuotaDocumentSpec, type QuotaEntrySpec, type QuotaSpec } from './quota-rules.js';

export interface QuotaLoadOptions extends QuotaMatcherOptions {
  /** MERGE_DOMAIN_CONFIG: a domain's quota_buckets may come from several documents (at most one default_quota). */
  readonly mergeDomainConfig: boolean;
}

/** The rule a bucket falls under, and whether its domain has quota rules at all. */
export interface QuotaMatch {
  readonly rule: QuotaRule;
  /** False when the domain has no quota rules: `rule` is then the built-in default. */
  readonly domainKnown: boolean;
}

export interface QuotaRuleSummary {
  readonly name: string;
  readonly quota: string;
  readonly isDefault: boolean;
  readonly line: number;
}

/** The built-in default rule: what an unmatched bucket gets without a default_quota. */
export const BUILTIN_DEFAULT_RULE: QuotaRule = Object.freeze({ name: 'default', quota: BUILTIN_DEFAULT_QUOTA, isDefault: true, entryIndex: -1, line: 0 });

export class QuotaRuleSet {
  /** @internal use loadQuotaRules / buildQuotaRuleSet */
  constructor(
    private readonly byDomain: ReadonlyMap<string, QuotaMatcher>,
    private readonly entriesByDomain: ReadonlyMap<string, readonly QuotaRule[]>,
  ) {}

  /** Domains with quota rules, sorted. */
  domains(): string[] {
    return [...this.byDomain.keys()].sort();
  }

  match(domain: string, id: Parameters<QuotaMatcher['match']>[0]): QuotaMatch {
    const m = this.byDomain.get(domain);
    if (m === undefined) return { rule: BUILTIN_DEFAULT_RULE, domainKnown: false };
    return { rule: m.match(id), domainKnown: true };
  }

  /** Every rule of a domain (entries in file order, then the default), for the operator page and config check. */
  summary(domain: string): QuotaRuleSummary[] {
    const m = this.byDomain.get(domain);
    if (m === undefined) return [];
    const rules = [...(this.entriesByDomain.get(domain) ?? []), m.defaultRule];
    return rules.map((r) => ({ name: r.name, quota: describeQuota(r.quota), isDefault: r.isDefault, line: r.line }));
  }
}

/** No quota rules: every bucket of every domain gets the built-in default. */
export const EMPTY_QUOTA_RULES: QuotaRuleSet = new QuotaRuleSet(new Map(), new Map());

/** `100 per 2 SECOND (token_bucket, burst 100)`, `allow_all`. */
export function describeQuota(q: QuotaSpec): string {
  if (q.strategy === 'allow_all' || q.strategy === 'deny_all') return q.strategy;
  const units = ['', 'second', 'minute', 'hour', 'day', 'month', 'year', 'week'];
  const per = q.unitMultiplier === 1 ? units[q.unit] : `${q.unitMultiplier} ${units[q.unit]}s`;
  return `${q.requestsPerUnit} per ${per} (${q.strategy}${q.strategy === 'token_bucket' ? `, burst ${q.burst}` : ''})`;
}

/** A decoded document with the name of its source (for errors). */
export interface QuotaDocumentSource {
  readonly name: string;
  readonly spec: QuotaDocumentSpec;
}

/**
 * Validates and compiles YAML rule sources. Documents without quota keys are skipped (they may
 * hold only descriptors). Throws ConfigError(`<source>: <problem>`).
 */
export function loadQuotaRules(sources: readonly RuleSource[], opts: QuotaLoadOptions): QuotaRuleSet {
  const docs: QuotaDocumentSource[] = [];
  for (const source of sources) {
    let parsed: ReturnType<typeof parseYamlDocuments>;
    try {
      parsed = parseYamlDocuments(source.content);
    } catch (err) {
      if (err instanceof YamlSyntaxError) throw new ConfigError(`${source.name}: error loading config file: ${err.message}`);
      throw err;
    }
    const contentful = parsed.filter((d) => d !== null);
    contentful.forEach((doc, i) => {
      const where = contentful.length > 1 ? ` (document ${i + 1})` : '';
      try {
        const spec = decodeQuotaDocument(doc);
        if (spec !== undefined) docs.push({ name: `${source.name}${where}`, spec });
      } catch (err) {
        if (err instanceof RuleFileError) throw new ConfigError(`${source.name}: ${err.message}${where}`);
        throw err;
      }
    });
  }
  return buildQuotaRuleSet(docs, opts);
}

/** Compiles decoded documents (from YAML or, later, xDS resources) into a rule set. */
export function buildQuotaRuleSet(docs: readonly QuotaDocumentSource[], opts: QuotaLoadOptions): QuotaRuleSet {
  const grouped = new Map<
    string,
    { entries: QuotaEntrySpec[]; def: { quota: QuotaSpec; line: number; source: string } | undefined; source: string; patterns: Map<string, string> }
  >();
  for (const { name, spec } of docs) {
    const fail = (problem: string): never => {
      throw new ConfigError(`${name}: ${problem}`);
    };
    let g = grouped.get(spec.domain);
    if (g !== undefined && !opts.mergeDomainConfig) fail(`duplicate quota rules for domain '${spec.domain}' (first in ${g.source})`);
    if (g === undefined) grouped.set(spec.domain, (g = { entries: [], def: undefined, source: name, patterns: new Map() }));
    // Compiling the document's entries alone names the right source for a bad extension argument.
    try {
      new QuotaMatcher(spec.entries, BUILTIN_DEFAULT_RULE, opts);
    } catch (err) {
      if (err instanceof RuleFileError) fail(err.message);
      throw err;
    }
    if (spec.defaultQuota !== undefined) {
      if (g.def !== undefined) fail(`second default_quota for domain '${spec.domain}' (first in ${g.def.source})${lineNote(spec.defaultLine)}`);
      g.def = { quota: spec.defaultQuota, line: spec.defaultLine, source: name };
    }
    // Merged documents keep their entries' order; indices are renumbered so ties stay "written first".
    const offset = g.entries.length;
    for (const e of spec.entries) {
      const key = patternKey(e.bucketId);
      const first = g.patterns.get(key);
      if (first !== undefined) fail(`quota_buckets[${e.index}]: bucket_id repeats an entry of ${first}${lineNote(e.line)}`);
      g.patterns.set(key, e.line > 0 ? `${name} line ${e.line}` : name);
      g.entries.push({ ...e, index: offset + e.index });
    }
  }
  const byDomain = new Map<string, QuotaMatcher>();
  const entriesByDomain = new Map<string, QuotaRule[]>();
  for (const [domain, g] of grouped) {
    const def: QuotaRule = g.def === undefined ? BUILTIN_DEFAULT_RULE : { name: 'default', quota: g.def.quota, isDefault: true, entryIndex: -1, line: g.def.line };
    byDomain.set(domain, new QuotaMatcher(g.entries, def, opts));
    entriesByDomain.set(
      domain,
      g.entries.map((e) => ({ name: e.name, quota: e.quota, isDefault: false, entryIndex: e.index, line: e.line })),
    );
  }
  return new QuotaRuleSet(byDomain, entriesByDomain);
}
