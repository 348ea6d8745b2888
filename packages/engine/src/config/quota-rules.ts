// The RLQS quota rules of one domain document: `quota_buckets:` (entries of a bucket_id pattern and
// a quota) and `default_quota:` (for buckets no entry matches), validated into typed specs. Only
// these two keys (and `domain`) are read here; `descriptors:` and the rest of the document belong
// to the rule loader (rule-file.ts), which validates them on its own.
//
//   domain: edge
//   quota_buckets:
//     - bucket_id: { name: api, tenant: "*" }
//       name: api_per_tenant                  # optional: the statistics name
//       quota: { unit: second, requests_per_unit: 100 }
//   default_quota: { strategy: allow_all }
//
// Problems are RuleFileError (the loader prefixes the source name), each naming the entry and line.
import type { UnitNumber } from '../domain.js';
import { unitDivider } from '../units.js';
import { RuleFileError } from './rule-file.js';
import { parseUnitName } from '../units.js';
import { renderNode, type YMap, type YNode, type YScalar } from './yaml-document.js';

/** How the server enforces a bucket's quota through the data plane. */
export type QuotaStrategyKind = 'token_bucket' | 'requests_per_time_unit' | 'allow_all' | 'deny_all';
export const QUOTA_STRATEGIES: readonly QuotaStrategyKind[] = ['token_bucket', 'requests_per_time_unit', 'allow_all', 'deny_all'];

/** What the server pushes for a bucket while the shared counter store cannot be reached. */
export type StoreFailureMode = 'keep_last' | 'allow_all' | 'deny_all';
export const STORE_FAILURE_MODES: readonly StoreFailureMode[] = ['keep_last', 'allow_all', 'deny_all'];

/** A validated `quota:` map. */
export interface QuotaSpec {
  readonly strategy: QuotaStrategyKind;
  /** The wire unit number; 0 for allow_all / deny_all. */
  readonly unit: UnitNumber;
  /** Requests per period, shared by every data plane instance reporting the bucket. */
  readonly requestsPerUnit: number;
  /** The period is `unit_multiplier` units (default 1). */
  readonly unitMultiplier: number;
  /** Seconds in one period (unit length × multiplier); 0 for blanket strategies. */
  readonly periodSeconds: number;
  /** token_bucket: the global bucket's capacity (default requests_per_unit); 0 otherwise. */
  readonly burst: number;
  readonly onStoreFailure: StoreFailureMode;
}

/** One value of a bucket_id pattern. */
export type ValuePatternSpec =
  /** The value must equal `value`. */
  | { readonly kind: 'exact'; readonly value: string }
  /** `*`: any value. */
  | { readonly kind: 'any' }
  /** A value with `*` inside (`api-*`): matched like descriptor wildcards. */
  | { readonly kind: 'wildcard'; readonly pattern: string }
  /** `{ <extension>: <argument> }`, e.g. `{ cidr: 10.0.0.0/8 }`: compiled by a plugged-in extension. */
  | { readonly kind: 'extension'; readonly name: string; readonly argument: YNode };

export interface QuotaEntrySpec {
  /** Pattern per bucket id key; an id matches only with exactly these keys. */
  readonly bucketId: ReadonlyMap<string, ValuePatternSpec>;
  /** The statistics name (`name:`), or a name made from the pattern. */
  readonly name: string;
  readonly quota: QuotaSpec;
  /** Position in the document's list (0-based), for errors and ties. */
  readonly index: number;
  readonly line: number;
}

export interface QuotaDocumentSpec {
  readonly domain: string;
  readonly entries: readonly QuotaEntrySpec[];
  /** Undefined when the document has no `default_quota:`. */
  readonly defaultQuota: QuotaSpec | undefined;
  /** Line of `default_quota:` (0 when absent). */
  readonly defaultLine: number;
}

const ENTRY_KEYS = new Set(['bucket_id', 'quota', 'name']);
const QUOTA_KEYS = new Set(['unit', 'requests_per_unit', 'unit_multiplier', 'strategy', 'burst', 'on_store_failure']);
const MAX_UINT32 = 4294967295n;
/** A period longer than ten years cannot be enforced with integer microsecond arithmetic downstream. */
const MAX_PERIOD_SECONDS = 10 * 31_536_000;

/** The quota a bucket gets when its domain has rules but no entry matches and no default_quota is written. */
export const BUILTIN_DEFAULT_QUOTA: QuotaSpec = Object.freeze({
  strategy: 'allow_all',
  unit: 0,
  requestsPerUnit: 0,
  unitMultiplier: 1,
  periodSeconds: 0,
  burst: 0,
  onStoreFailure: 'keep_last',
});

/**
 * The quota part of one parsed document, or undefined when it has neither `quota_buckets:` nor
 * `default_quota:`. `null` (an empty document) has none.
 */
export function decodeQuotaDocument(doc: YNode | null): QuotaDocumentSpec | undefined {
  if (doc === null || doc.kind !== 'map') return undefined;
  const buckets = present(field(doc, 'quota_buckets'));
  const def = present(field(doc, 'default_quota'));
  if (buckets === undefined && def === undefined) return undefined;
  const domainNode = present(field(doc, 'domain'));
  const domain = domainNode?.kind === 'scalar' ? domainNode.text : '';
  if (domain === '') throw new RuleFileError('quota_buckets: the document needs a domain');
  let entries: QuotaEntrySpec[] = [];
  if (buckets !== undefined) {
    if (buckets.kind !== 'seq') throw new RuleFileError(`quota_buckets must be a list of entries${lineNote(buckets.line)}`);
    entries = buckets.items.map((item, i) => entry(item, i));
    checkDuplicates(entries);
  }
  let defaultQuota: QuotaSpec | undefined;
  if (def !== undefined) {
    if (def.kind !== 'map') throw new RuleFileError(`default_quota must be a map${lineNote(def.line)}`);
    defaultQuota = quota(def, 'default_quota');
  }
  return { domain, entries, defaultQuota, defaultLine: def?.line ?? 0 };
}

function entry(item: YNode, index: number): QuotaEntrySpec {
  const where = `quota_buckets[${index}]`;
  if (item.kind !== 'map') throw new RuleFileError(`${where}: an entry must be a map with bucket_id and quota${lineNote(item.line)}`);
  const at = (problem: string, line = item.line): RuleFileError => new RuleFileError(`${where}: ${problem}${lineNote(line)}`);
  checkKeys(item, ENTRY_KEYS, where);
  const idNode = present(field(item, 'bucket_id'));
  if (idNode === undefined) throw at('missing bucket_id');
  if (idNode.kind !== 'map' || idNode.pairs.length === 0) throw at('bucket_id must be a map of at least one key to a value', idNode.line);
  const bucketId = new Map<string, ValuePatternSpec>();
  for (const { key, value } of idNode.pairs) {
    if (key.kind !== 'scalar' || key.type === 'null' || key.text === '') throw at(`bucket_id keys must be non-empty strings, got ${renderNode(key)}`, key.line);
    bucketId.set(key.text, valuePattern(value, `${where}.bucket_id.${key.text}`));
  }
  const quotaNode = present(field(item, 'quota'));
  if (quotaNode === undefined) throw at('missing quota');
  if (quotaNode.kind !== 'map') throw at('quota must be a map', quotaNode.line);
  const nameNode = present(field(item, 'name'));
  if (nameNode !== undefined && nameNode.kind !== 'scalar') throw at('name must be a string', nameNode.line);
  const name = nameNode !== undefined ? nameNode.text : patternName(bucketId);
  return { bucketId, name, quota: quota(quotaNode, `${where}.quota`), index, line: item.line };
}

function valuePattern(v: YNode, where: string): ValuePatternSpec {
  if (v.kind === 'scalar') {
    if (v.type === 'null' || v.text === '') throw new RuleFileError(`${where}: a value must not be empty (use "*" for any value)${lineNote(v.line)}`);
    if (v.text === '*') return { kind: 'any' };
    if (v.text.includes('*')) return { kind: 'wildcard', pattern: v.text };
    return { kind: 'exact', value: v.text };
  }
  if (v.kind === 'map' && v.pairs.length === 1) {
    const p = v.pairs[0]!;
    if (p.key.kind === 'scalar' && p.key.text !== '') return { kind: 'extension', name: p.key.text, argument: p.value };
  }
  throw new RuleFileError(`${where}: a value is a string, "*", or a one-key map naming a matcher such as { cidr: 10.0.0.0/8 }${lineNote(v.line)}`);
}

function quota(m: YMap, where: string): QuotaSpec {
  checkKeys(m, QUOTA_KEYS, where);
  const at = (problem: string, line = m.line): RuleFileError => new RuleFileError(`${where}: ${problem}${lineNote(line)}`);
  const strategyNode = present(field(m, 'strategy'));
  const strategyText = strategyNode === undefined ? 'token_bucket' : scalarText(strategyNode, where, 'strategy');
  const strategy = QUOTA_STRATEGIES.find((s) => s === strategyText);
  if (strategy === undefined) throw at(`unknown strategy '${strategyText}' (expected one of ${QUOTA_STRATEGIES.join(', ')})`, strategyNode?.line);
  const failureNode = present(field(m, 'on_store_failure'));
  const failureText = failureNode === undefined ? 'keep_last' : scalarText(failureNode, where, 'on_store_failure');
  const onStoreFailure = STORE_FAILURE_MODES.find((s) => s === failureText);
  if (onStoreFailure === undefined) throw at(`unknown on_store_failure '${failureText}' (expected one of ${STORE_FAILURE_MODES.join(', ')})`, failureNode?.line);

  const unitNode = present(field(m, 'unit'));
  const rpuNode = present(field(m, 'requests_per_unit'));
  const multNode = present(field(m, 'unit_multiplier'));
  const burstNode = present(field(m, 'burst'));
  if (strategy === 'allow_all' || strategy === 'deny_all') {
    for (const [node, name] of [[unitNode, 'unit'], [rpuNode, 'requests_per_unit'], [multNode, 'unit_multiplier'], [burstNode, 'burst']] as const) {
      if (node !== undefined) throw at(`${name} has no meaning with strategy ${strategy}`, node.line);
    }
    return { strategy, unit: 0, requestsPerUnit: 0, unitMultiplier: 1, periodSeconds: 0, burst: 0, onStoreFailure };
  }
  if (unitNode === undefined) throw at(`strategy ${strategy} needs a unit`);
  const unitText = scalarText(unitNode, where, 'unit');
  const unit = parseUnitName(unitText);
  if (unit === undefined || unit === 0) throw at(`invalid quota unit '${unitText}'`, unitNode.line);
  if (rpuNode === undefined) throw at(`strategy ${strategy} needs requests_per_unit`);
  const requestsPerUnit = integer(rpuNode, where, 'requests_per_unit', strategy === 'token_bucket' ? 1n : 0n, MAX_UINT32);
  const unitMultiplier = multNode === undefined ? 1 : integer(multNode, where, 'unit_multiplier', 1n, MAX_UINT32);
  const periodSeconds = unitDivider(unit) * unitMultiplier;
  if (periodSeconds > MAX_PERIOD_SECONDS) throw at(`a period of ${unitMultiplier} × ${unitText} is longer than ten years`, multNode?.line ?? unitNode.line);
  let burst = 0;
  if (strategy === 'token_bucket') burst = burstNode === undefined ? requestsPerUnit : integer(burstNode, where, 'burst', 1n, MAX_UINT32);
  else if (burstNode !== undefined) throw at(`burst is only valid with strategy token_bucket, not ${strategy}`, burstNode.line);
  return { strategy, unit, requestsPerUnit, unitMultiplier, periodSeconds, burst, onStoreFailure };
}

// ---- helpers ------------------------------------------------------------------------------------

/** ` (line N)`, or nothing for rules that did not come from a file (xDS resources: line 0). */
export function lineNote(line: number | undefined): string {
  return line === undefined || line <= 0 ? '' : ` (line ${line})`;
}

function field(m: YMap, name: string): YNode | undefined {
  for (const p of m.pairs) if (p.key.kind === 'scalar' && p.key.text === name) return p.value;
  return undefined;
}

function present(n: YNode | undefined): YNode | undefined {
  return n === undefined || (n.kind === 'scalar' && n.type === 'null') ? undefined : n;
}

function checkKeys(m: YMap, allowed: ReadonlySet<string>, where: string): void {
  for (const { key } of m.pairs) {
    if (key.kind !== 'scalar' || !allowed.has(key.text)) {
      throw new RuleFileError(`${where}: unknown key '${renderNode(key)}' (expected ${[...allowed].join(', ')})${lineNote(key.line)}`);
    }
  }
}

function scalarText(n: YNode, where: string, name: string): string {
  if (n.kind !== 'scalar') throw new RuleFileError(`${where}: ${name} must be a string${lineNote(n.line)}`);
  return n.text;
}

function integer(n: YNode, where: string, name: string, min: bigint, max: bigint): number {
  const s = n as YScalar;
  if (n.kind === 'scalar' && s.type === 'int' && typeof s.value === 'bigint' && s.value >= min && s.value <= max) return Number(s.value);
  throw new RuleFileError(`${where}: ${name} must be an integer from ${min} to ${max}, got '${renderNode(n)}'${lineNote(n.line)}`);
}

/** `name=api,tenant=*` (keys sorted): the statistics name of an entry without `name:`. */
function patternName(id: ReadonlyMap<string, ValuePatternSpec>): string {
  return [...id.keys()]
    .sort()
    .map((k) => {
      const p = id.get(k)!;
      const v = p.kind === 'exact' ? p.value : p.kind === 'any' ? '*' : p.kind === 'wildcard' ? p.pattern : `${p.name}:${renderNode(p.argument)}`;
      return `${k}=${v}`;
    })
    .join(',');
}

/** An unambiguous identity of a pattern (keys sorted), for spotting repeated entries. */
export function patternKey(id: ReadonlyMap<string, ValuePatternSpec>): string {
  return JSON.stringify(
    [...id.keys()].sort().map((k) => {
      const p = id.get(k)!;
      return [k, p.kind, p.kind === 'exact' ? p.value : p.kind === 'wildcard' ? p.pattern : p.kind === 'extension' ? `${p.name}:${renderNode(p.argument)}` : ''];
    }),
  );
}

/** Two entries with the same pattern could never both apply: the later one is a mistake. */
function checkDuplicates(entries: readonly QuotaEntrySpec[]): void {
  const seen = new Map<string, QuotaEntrySpec>();
  for (const e of entries) {
    const key = patternKey(e.bucketId);
    const first = seen.get(key);
    if (first !== undefined) {
      throw new RuleFileError(`quota_buckets[${e.index}]: bucket_id {${patternName(e.bucketId)}} repeats quota_buckets[${first.index}]${first.line > 0 ? ` of line ${first.line}` : ''}${lineNote(e.line)}`);
    }
    seen.set(key, e);
  }
}
