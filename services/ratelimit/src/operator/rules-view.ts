// The rules as the operator page shows them: each domain's descriptor tree with the source it came
// from (a rule file, or an xDS resource and the update's version), and the reload history. Built
// from the same sources the last good load compiled — once per load, never per request — and
// bounded: at most MAX_NODES descriptors, every string escaped and cut by displayText
// (display-text.ts: MAX_TEXT characters), the history to MAX_RELOADS entries and each error text
// to MAX_ERROR characters.
import { decodeRateLimitConfig } from '@rls/rls-proto';
import {
  decodeQuotaDocument,
  decodeRuleDocument,
  describeQuota,
  domainSpecOf,
  quotaSpecOf,
  parseYamlDocuments,
  renderNode,
  type DescriptorSpec,
  type DomainSpec,
  type QuotaDocumentSpec,
  type RateLimitSpec,
  type RuleSource,
  type ValuePatternSpec,
} from '@rls/engine';
import type { RuleSnapshot } from '../provider/rule-snapshot.js';
import { displayText } from './display-text.js';

export const MAX_NODES = 5000;
export const MAX_RELOADS = 50;
export const MAX_ERROR = 1000;
/** Bound of the longer texts: sources, versions, file names. */
export const MAX_LONG_TEXT = 256;

export interface LimitView {
  readonly requestsPerUnit: number;
  readonly unit: string;
  readonly unlimited: boolean;
  readonly name: string;
  readonly algorithm: string;
  /** token_bucket only: the bucket size (requests_per_unit when the rule sets none). */
  readonly burst?: number | string;
  readonly replaces: readonly string[];
}

export interface DescriptorView {
  readonly key: string;
  /** The value as written; `cidr:<block>` or `prefix:<text>` for the matching extensions. */
  readonly value: string;
  readonly limit?: LimitView;
  /** A `rate_limits` descriptor: every limit (`limit` is then the first). */
  readonly limits?: readonly LimitView[];
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly detailedMetric: boolean;
  readonly children: DescriptorView[];
}

/** One RLQS quota rule (a quota_buckets entry or the default_quota) as the page shows it. */
export interface QuotaBucketView {
  /** The bucket_id pattern, `name=api, tenant=*`; `(default)` for default_quota. */
  readonly bucketId: string;
  /** The statistics name. */
  readonly name: string;
  /** `100 per second (token_bucket, burst 100)`, `allow_all`, ... */
  readonly quota: string;
  readonly isDefault: boolean;
}

export interface DomainView {
  readonly domain: string;
  /** `file <path>` or `xds resource <name>`. */
  readonly source: string;
  readonly descriptors: DescriptorView[];
  /** The document's RLQS quota rules (entries in file order, then its default_quota); absent when it has none. */
  readonly quotaBuckets?: QuotaBucketView[];
}

export type SourceKind = 'file' | 'xds';

export interface RulesView {
  /** Changes with every good load and every recorded reload. */
  readonly generation: number;
  /** When the rules in force were loaded (ms since the epoch); 0 before the first load. */
  readonly loadedAt: number;
  readonly source: { readonly kind: SourceKind | 'none'; readonly version?: string; readonly directory?: string; readonly files?: number };
  readonly domains: readonly DomainView[];
  readonly descriptorCount: number;
  /** True when the tree was cut at MAX_NODES descriptors. */
  readonly truncated: boolean;
  readonly reloads: readonly ReloadEntry[];
}

export interface ReloadEntry {
  readonly at: number;
  readonly ok: boolean;
  /** `file`, `xds`, or `primary` (worker mode: a snapshot from the primary process). */
  readonly source: string;
  readonly version?: string;
  /** The file the error names, when it names one. */
  readonly file?: string;
  readonly error?: string;
  readonly domains?: number;
  /** Descriptors with a rate_limit. */
  readonly rules?: number;
}

interface Budget {
  nodes: number;
  truncated: boolean;
  rules: number;
}

function rateLimitView(rl: RateLimitSpec | undefined): LimitView | undefined {
  if (rl === undefined) return undefined;
  // The extension fields are read defensively: an engine without them means fixed_window.
  const ext = rl as { algorithm?: unknown; burst?: unknown };
  const algorithm = typeof ext.algorithm === 'string' && ext.algorithm !== '' ? displayText(ext.algorithm) : 'fixed_window';
  const multiplier = typeof rl.unitMultiplier === 'number' && rl.unitMultiplier !== 1 ? `${rl.unitMultiplier} × ` : '';
  const view: LimitView = {
    requestsPerUnit: rl.requestsPerUnit,
    unit: displayText(multiplier + String(rl.unit).toUpperCase()),
    unlimited: rl.unlimited,
    name: displayText(rl.name),
    algorithm,
    replaces: rl.replaces.slice(0, 16).map((r) => displayText(r.name)),
  };
  if (algorithm === 'token_bucket') {
    const burst = typeof ext.burst === 'number' ? ext.burst : typeof ext.burst === 'string' ? displayText(ext.burst) : rl.requestsPerUnit;
    return { ...view, burst };
  }
  return view;
}

function patternText(p: ValuePatternSpec): string {
  switch (p.kind) {
    case 'exact':
      return p.value;
    case 'any':
      return '*';
    case 'wildcard':
      return p.pattern;
    case 'extension':
      return `{ ${p.name}: ${renderNode(p.argument)} }`;
  }
}

/** Quota entries count against the same MAX_NODES budget as descriptors (a rule file bounds both). */
function quotaViews(q: QuotaDocumentSpec, budget: Budget): QuotaBucketView[] {
  const out: QuotaBucketView[] = [];
  for (const e of q.entries) {
    if (budget.nodes >= MAX_NODES) {
      budget.truncated = true;
      return out;
    }
    budget.nodes += 1;
    budget.rules += 1;
    const bucketId = [...e.bucketId].map(([k, p]) => `${k}=${patternText(p)}`).join(', ');
    out.push({ bucketId: displayText(bucketId), name: displayText(e.name), quota: displayText(describeQuota(e.quota)), isDefault: false });
  }
  if (q.defaultQuota !== undefined) out.push({ bucketId: '(default)', name: 'default', quota: describeQuota(q.defaultQuota), isDefault: true });
  return out;
}

/** What a list's text may take, so that with `prefix:` before it the page's 64-character cut never hides the count. */
const LIST_TEXT_BUDGET = 56;

/** A `cidr:`/`prefix:` value for the page: the text, or a list's first entries that fit and how many more. */
function matchText(m: string | readonly string[]): string {
  if (typeof m === 'string') return m;
  let shown = 1;
  const text = (k: number): string => `[${m.slice(0, k).join(', ')}${k < m.length ? `, … ${m.length - k} more` : ''}]`;
  while (shown < m.length && text(shown + 1).length <= LIST_TEXT_BUDGET) shown++;
  return text(shown);
}

function descriptorViews(list: readonly DescriptorSpec[], budget: Budget): DescriptorView[] {
  const out: DescriptorView[] = [];
  for (const d of list) {
    if (budget.nodes >= MAX_NODES) {
      budget.truncated = true;
      break;
    }
    budget.nodes += 1;
    const limits = d.rateLimits?.slice(0, 16).map((rl) => rateLimitView(rl)!);
    const limit = limits?.[0] ?? rateLimitView(d.rateLimit);
    if (limit !== undefined) budget.rules += 1;
    const value = d.cidr !== undefined ? `cidr:${matchText(d.cidr)}` : d.prefix !== undefined ? `prefix:${matchText(d.prefix)}` : d.value;
    out.push({
      key: displayText(d.key),
      value: displayText(value),
      ...(limit !== undefined ? { limit } : {}),
      ...(limits !== undefined ? { limits } : {}),
      shadowMode: d.shadowMode,
      quotaMode: d.quotaMode,
      detailedMetric: d.detailedMetric,
      children: descriptorViews(d.descriptors, budget),
    });
  }
  return out;
}

/** A loaded rule set's sources, as the rule builder reads them. */
export interface LoadedSources {
  readonly kind: SourceKind;
  readonly version?: string;
  readonly directory?: string;
  /** File mode: the rule files; xDS: one entry per RateLimitConfig resource (its name) with its spec. */
  readonly specs: readonly LoadedSpec[];
  readonly files?: number;
}

/** One document (or xDS resource): its descriptors and, when it has any, its quota rules. */
export interface LoadedSpec {
  readonly source: string;
  readonly spec: DomainSpec;
  readonly quota?: QuotaDocumentSpec | undefined;
}

/** The specs of rule files (same parse as the loader; a source that fails here is skipped, it loaded before). */
export function specsOfFiles(sources: readonly RuleSource[]): LoadedSpec[] {
  const out: LoadedSpec[] = [];
  for (const s of sources) {
    try {
      for (const doc of parseYamlDocuments(s.content)) {
        const spec = decodeRuleDocument(doc);
        const quota = decodeQuotaDocument(doc);
        if (spec.domain !== '' || spec.descriptors.length > 0) out.push({ source: `file ${s.name}`, spec, ...(quota !== undefined ? { quota } : {}) });
      }
    } catch {
      // Not expected: these bytes were loaded successfully.
    }
  }
  return out;
}

/** The specs of a worker's snapshot from the primary. */
export function sourcesOfSnapshot(snapshot: RuleSnapshot): LoadedSources {
  if (snapshot.kind === 'file') return { kind: 'file', version: snapshot.version, specs: specsOfFiles(snapshot.sources), files: snapshot.sources.length };
  const specs: LoadedSpec[] = [];
  for (const b64 of snapshot.resources) {
    try {
      const r = decodeRateLimitConfig(Buffer.from(b64, 'base64'));
      const quota = quotaSpecOf(r);
      specs.push({ source: `xds resource ${r.name}`, spec: domainSpecOf(r), ...(quota !== undefined ? { quota } : {}) });
    } catch {
      // Not expected: the primary decoded the same bytes.
    }
  }
  return { kind: 'xds', version: snapshot.version, specs };
}

export class RulesRecorder {
  private generation = 0;
  private loadedAt = 0;
  private source: RulesView['source'] = { kind: 'none' };
  private domains: DomainView[] = [];
  private descriptorCount = 0;
  private truncated = false;
  private readonly reloads: ReloadEntry[] = [];

  /** A good load: its tree replaces the shown one and a history entry is added. */
  loaded(sources: LoadedSources, nowMs: number, historySource: string = sources.kind): void {
    const budget: Budget = { nodes: 0, truncated: false, rules: 0 };
    const domains: DomainView[] = [];
    for (const { source, spec, quota } of sources.specs) {
      const descriptors = descriptorViews(spec.descriptors, budget);
      const quotaBuckets = quota === undefined ? undefined : quotaViews(quota, budget);
      domains.push({ domain: displayText(spec.domain), source: displayText(source, MAX_LONG_TEXT), descriptors, ...(quotaBuckets !== undefined ? { quotaBuckets } : {}) });
    }
    domains.sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : a.source < b.source ? -1 : 1));
    this.domains = domains;
    this.descriptorCount = budget.nodes;
    this.truncated = budget.truncated;
    this.loadedAt = nowMs;
    this.source = {
      kind: sources.kind,
      ...(sources.version !== undefined && sources.version !== '' ? { version: displayText(sources.version, MAX_LONG_TEXT) } : {}),
      ...(sources.directory !== undefined ? { directory: displayText(sources.directory, MAX_LONG_TEXT) } : {}),
      ...(sources.files !== undefined ? { files: sources.files } : {}),
    };
    this.push({
      at: nowMs,
      ok: true,
      source: historySource,
      ...(this.source.version !== undefined ? { version: this.source.version } : {}),
      domains: new Set(domains.map((d) => d.domain)).size,
      rules: budget.rules,
    });
  }

  /** A rejected load: the shown tree stays (the previous rules keep serving). */
  failed(source: string, error: unknown, nowMs: number, file?: string, version?: string): void {
    const text = error instanceof Error ? error.message : String(error);
    this.push({
      at: nowMs,
      ok: false,
      source,
      ...(version !== undefined && version !== '' ? { version: displayText(version, MAX_LONG_TEXT) } : {}),
      ...(file !== undefined ? { file: displayText(file, MAX_LONG_TEXT) } : {}),
      error: displayText(text, MAX_ERROR),
    });
  }

  private push(e: ReloadEntry): void {
    this.generation += 1;
    this.reloads.push(e);
    if (this.reloads.length > MAX_RELOADS) this.reloads.splice(0, this.reloads.length - MAX_RELOADS);
  }

  get currentGeneration(): number {
    return this.generation;
  }

  view(): RulesView {
    return {
      generation: this.generation,
      loadedAt: this.loadedAt,
      source: this.source,
      domains: this.domains,
      descriptorCount: this.descriptorCount,
      truncated: this.truncated,
      // Newest first.
      reloads: [...this.reloads].reverse(),
    };
  }
}
