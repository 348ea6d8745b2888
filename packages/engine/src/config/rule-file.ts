// One rule document (a YAML document describing one domain) -> typed spec. Reproduces upstream's
// two passes: a generic walk that checks every map key against one flat allow-list and every
// leaf's type, then a typed decode with yaml.v2's leniency (any scalar fits a string field).
import type { JsonValue } from '../domain.js';
import { renderNode, type YMap, type YNode } from './yaml-document.js';

/** One rule document's text and its name. */
export interface RuleSource {
  /** Name used in error messages: the file path relative to the rule directory, or an xDS resource name. */
  readonly name: string;
  readonly content: string;
}

export interface ReplacesSpec {
  readonly name: string;
}

export interface RateLimitSpec {
  /** As written; validated by the rule builder. */
  readonly unit: string;
  readonly requestsPerUnit: number;
  readonly unlimited: boolean;
  readonly name: string;
  readonly replaces: readonly ReplacesSpec[];
  /** Extension: `algorithm` as written ('' when absent = fixed_window); validated by the rule builder. */
  readonly algorithm: string;
  /**
   * Extension: `burst` as written: a number for an integer scalar (any sign and size), the text of
   * any other scalar (reported by the rule builder), undefined when absent.
   */
  readonly burst: number | string | undefined;
  /**
   * Extension: `unit_multiplier` as written (a window of N units): a number for an integer
   * scalar, the text of any other scalar (reported by the rule builder), undefined when absent.
   */
  readonly unitMultiplier: number | string | undefined;
  /** Line of the rate_limit map (of the list entry for `rate_limits`); 0 for decoded sources. */
  readonly line: number;
}

export interface DescriptorSpec {
  readonly key: string;
  readonly value: string;
  /**
   * Extension: match the value by CIDR block (`cidr:` in place of `value:`), or by any block of a
   * list (`cidr: [a, b, ...]`: one rule for all of them); undefined when absent.
   */
  readonly cidr?: string | readonly string[] | undefined;
  /** Extension: match the value by prefix (`prefix:` in place of `value:`), or by any prefix of a list; undefined when absent. */
  readonly prefix?: string | readonly string[] | undefined;
  readonly rateLimit: RateLimitSpec | undefined;
  /** Extension: several limits on one descriptor (`rate_limits:`, instead of `rate_limit:`); undefined when absent. */
  readonly rateLimits?: readonly RateLimitSpec[] | undefined;
  readonly descriptors: readonly DescriptorSpec[];
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly detailedMetric: boolean;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
  readonly metadata: { readonly [k: string]: JsonValue } | undefined;
  readonly line: number;
}

export interface DomainSpec {
  readonly domain: string;
  readonly descriptors: readonly DescriptorSpec[];
}

/** A problem in one document; the loader prefixes the source name. */
export class RuleFileError extends Error {}

const ALLOWED_KEYS = new Set([
  'domain',
  'key',
  'value',
  'descriptors',
  'rate_limit',
  'unit',
  'requests_per_unit',
  'unlimited',
  'shadow_mode',
  'quota_mode',
  'name',
  'replaces',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
  // Our extension inside rate_limit (upstream's checker rejects both keys): docs/ratelimit.md, "Algorithms (extension)".
  'algorithm',
  'burst',
  // Our extensions of issue 25 (docs/ratelimit.md, "Several limits on one descriptor", "Windows of several
  // units", "Matching by CIDR and prefix"): upstream's checker rejects each of them.
  'rate_limits',
  'unit_multiplier',
  'cidr',
  'prefix',
]);

/**
 * RLQS quota rules (issue 28): allowed at the top of a document only, and validated by their own
 * decoder (quota/quota-rules.ts), so this allow-list does not walk into them.
 */
const QUOTA_DOCUMENT_KEYS = new Set(['quota_buckets', 'default_quota']);

/** Extension keys that belong inside a rate_limit (or a rate_limits entry). */
const RATE_LIMIT_EXTENSIONS = ['algorithm', 'burst', 'unit_multiplier'] as const;

const MAX_UINT32 = 4294967295n;

/** Validates and decodes one parsed document; `null` (an empty document) yields an empty domain. */
export function decodeRuleDocument(doc: YNode | null): DomainSpec {
  if (doc === null) return { domain: '', descriptors: [] };
  if (doc.kind !== 'map') {
    throw new RuleFileError(`error loading config file: yaml: unmarshal errors: line ${doc.line}: cannot unmarshal ${tagOf(doc)} into map[interface {}]interface {}`);
  }
  checkMap(doc, true);
  return {
    domain: stringField(field(doc, 'domain')),
    descriptors: descriptorList(field(doc, 'descriptors')),
  };
}

// ---- pass 1: generic key and leaf validation -------------------------------------------------

function checkMap(m: YMap, topLevel = false): void {
  for (const { key, value } of m.pairs) {
    if (key.kind !== 'scalar' || key.type !== 'str') {
      throw new RuleFileError(`config error, key is not of type string: ${renderNode(key)} (line ${key.line})`);
    }
    if (topLevel && QUOTA_DOCUMENT_KEYS.has(key.text)) continue;
    if (!ALLOWED_KEYS.has(key.text)) throw new RuleFileError(`config error, unknown key '${key.text}' (line ${key.line})`);
    // Metadata is free-form: it is only converted, never checked against the allow-list.
    if (key.text === 'metadata') continue;
    // A non-integer burst or unit_multiplier is reported by the rule builder, naming the descriptor.
    if ((key.text === 'burst' || key.text === 'unit_multiplier') && value.kind === 'scalar') continue;
    // A list of blocks or prefixes (scalars) is checked by its own decoder (matchList).
    if ((key.text === 'cidr' || key.text === 'prefix') && value.kind === 'seq') continue;
    checkValue(value);
  }
}

function checkValue(v: YNode): void {
  if (v.kind === 'map') return checkMap(v);
  if (v.kind === 'seq') {
    for (const item of v.items) {
      if (item.kind !== 'map') {
        throw new RuleFileError(`config error, yaml file contains list of type other than map: ${renderNode(item)} (line ${item.line})`);
      }
      checkMap(item);
    }
    return;
  }
  if (v.type !== 'str' && v.type !== 'int' && v.type !== 'bool' && v.type !== 'null') {
    throw new RuleFileError(`error checking config (unsupported ${v.type === 'other' ? 'scalar' : v.type} value '${v.text}' at line ${v.line})`);
  }
}

// ---- pass 2: typed decode ----------------------------------------------------------------------

function field(m: YMap, name: string): YNode | undefined {
  for (const p of m.pairs) if (p.key.kind === 'scalar' && p.key.text === name) return p.value;
  return undefined;
}

function tagOf(n: YNode): string {
  if (n.kind === 'map') return '!!map';
  if (n.kind === 'seq') return '!!seq';
  return `!!${n.type} \`${n.text}\``;
}

function unmarshalError(n: YNode, into: string, hint = ''): RuleFileError {
  return new RuleFileError(`error loading config file: yaml: unmarshal errors: line ${n.line}: cannot unmarshal ${tagOf(n)} into ${into}${hint}`);
}

/** The node, or undefined when the field is absent or null (both mean "not set" to yaml.v2). */
function present(n: YNode | undefined): YNode | undefined {
  return n === undefined || (n.kind === 'scalar' && n.type === 'null') ? undefined : n;
}

/** `cidr:` / `prefix:`: one text, or a list of them (docs: "Lists of blocks and prefixes"). */
function matchList(n: YNode, name: 'cidr' | 'prefix'): string | readonly string[] {
  if (n.kind !== 'seq') return stringField(n);
  if (n.items.length === 0) throw new RuleFileError(`config error, '${name}' is an empty list (line ${n.line})`);
  return n.items.map((item) => {
    if (item.kind !== 'scalar' || item.type === 'null') {
      throw new RuleFileError(`config error, every entry of a '${name}' list is a ${name === 'cidr' ? 'block' : 'prefix'} (line ${item.line})`);
    }
    return item.text;
  });
}

function stringField(raw: YNode | undefined): string {
  const n = present(raw);
  if (n === undefined) return '';
  if (n.kind !== 'scalar') throw unmarshalError(n, 'string');
  return n.text;
}

function boolField(raw: YNode | undefined): boolean {
  const n = present(raw);
  if (n === undefined) return false;
  if (n.kind === 'scalar' && n.type === 'bool') return n.value === true;
  throw unmarshalError(n, 'bool');
}

function uint32Field(raw: YNode | undefined, name: string): number {
  const n = present(raw);
  if (n === undefined) return 0;
  if (n.kind === 'scalar' && n.type === 'int' && typeof n.value === 'bigint' && n.value >= 0n && n.value <= MAX_UINT32) {
    return Number(n.value);
  }
  throw unmarshalError(n, 'uint32', ` (${name} must be an integer from 0 to 4294967295)`);
}

/** An extension integer as written: a number for an integer scalar, the text of any other scalar (the rule builder reports it). */
function extensionIntField(raw: YNode | undefined, name: string): number | string | undefined {
  const n = present(raw);
  if (n === undefined) return undefined;
  if (n.kind !== 'scalar') throw unmarshalError(n, 'uint32', ` (${name} must be an integer from 1 to 4294967295)`);
  if (n.type === 'int' && typeof n.value === 'bigint') return Number(n.value);
  return n.text;
}

function descriptorList(raw: YNode | undefined): DescriptorSpec[] {
  const n = present(raw);
  if (n === undefined) return [];
  if (n.kind !== 'seq') throw unmarshalError(n, '[]config.YamlDescriptor');
  // pass 1 guarantees every item is a map
  return n.items.map((item) => descriptor(item as YMap));
}

function rateLimitSpec(rl: YNode): RateLimitSpec {
  if (rl.kind !== 'map') throw unmarshalError(rl, 'config.YamlRateLimit');
  return {
    unit: stringField(field(rl, 'unit')),
    requestsPerUnit: uint32Field(field(rl, 'requests_per_unit'), 'requests_per_unit'),
    unlimited: boolField(field(rl, 'unlimited')),
    name: stringField(field(rl, 'name')),
    replaces: replacesList(field(rl, 'replaces')),
    algorithm: stringField(field(rl, 'algorithm')),
    burst: extensionIntField(field(rl, 'burst'), 'burst'),
    unitMultiplier: extensionIntField(field(rl, 'unit_multiplier'), 'unit_multiplier'),
    line: rl.line,
  };
}

function descriptor(m: YMap): DescriptorSpec {
  const rl = present(field(m, 'rate_limit'));
  const rateLimit = rl === undefined ? undefined : rateLimitSpec(rl);
  const list = present(field(m, 'rate_limits'));
  let rateLimits: RateLimitSpec[] | undefined;
  if (list !== undefined) {
    if (list.kind !== 'seq') throw unmarshalError(list, '[]config.YamlRateLimit');
    if (rl !== undefined) throw new RuleFileError(`config error, a descriptor has either rate_limit or rate_limits, not both (line ${list.line})`);
    // pass 1 guarantees every item is a map
    rateLimits = list.items.map(rateLimitSpec);
  }
  for (const ext of RATE_LIMIT_EXTENSIONS) {
    const misplaced = field(m, ext);
    if (misplaced !== undefined) throw new RuleFileError(`config error, '${ext}' belongs inside rate_limit (line ${misplaced.line})`);
  }
  const cidr = present(field(m, 'cidr'));
  const prefix = present(field(m, 'prefix'));
  const value = present(field(m, 'value'));
  const shapes: string[] = [];
  if (value !== undefined) shapes.push('value');
  if (cidr !== undefined) shapes.push('cidr');
  if (prefix !== undefined) shapes.push('prefix');
  if (shapes.length > 1) throw new RuleFileError(`config error, a descriptor matches by one of value, cidr or prefix, not ${shapes.join(' and ')} (line ${m.line})`);
  return {
    key: stringField(field(m, 'key')),
    value: stringField(value),
    ...(cidr !== undefined ? { cidr: matchList(cidr, 'cidr') } : {}),
    ...(prefix !== undefined ? { prefix: matchList(prefix, 'prefix') } : {}),
    rateLimit,
    ...(rateLimits !== undefined ? { rateLimits } : {}),
    descriptors: descriptorList(field(m, 'descriptors')),
    shadowMode: boolField(field(m, 'shadow_mode')),
    quotaMode: boolField(field(m, 'quota_mode')),
    detailedMetric: boolField(field(m, 'detailed_metric')),
    valueToMetric: boolField(field(m, 'value_to_metric')),
    shareThreshold: boolField(field(m, 'share_threshold')),
    metadata: metadataField(field(m, 'metadata')),
    line: m.line,
  };
}

function replacesList(raw: YNode | undefined): ReplacesSpec[] {
  const n = present(raw);
  if (n === undefined) return [];
  if (n.kind !== 'seq') throw unmarshalError(n, '[]config.yamlReplaces');
  return n.items.map((item) => ({ name: stringField(field(item as YMap, 'name')) }));
}

function metadataField(raw: YNode | undefined): { [k: string]: JsonValue } | undefined {
  const n = present(raw);
  if (n === undefined) return undefined;
  if (n.kind !== 'map') throw new RuleFileError(`error parsing metadata: metadata must be a map, got ${tagOf(n)} (line ${n.line})`);
  return toJsonObject(n);
}

function toJsonObject(m: YMap): { [k: string]: JsonValue } {
  const out: { [k: string]: JsonValue } = {};
  for (const { key, value } of m.pairs) {
    if (key.kind !== 'scalar' || key.type !== 'str') {
      throw new RuleFileError(`error parsing metadata: key is not of type string: ${renderNode(key)} (line ${key.line})`);
    }
    out[key.text] = toJson(value);
  }
  return out;
}

function toJson(n: YNode): JsonValue {
  if (n.kind === 'map') return toJsonObject(n);
  if (n.kind === 'seq') return n.items.map(toJson);
  switch (n.type) {
    case 'null':
      return null;
    case 'bool':
      return n.value === true;
    case 'int':
      return Number(n.value);
    case 'float':
      if (typeof n.value === 'number' && Number.isFinite(n.value)) return n.value;
      throw new RuleFileError(`error parsing metadata: invalid number '${n.text}' (line ${n.line})`);
    default:
      return n.text;
  }
}
