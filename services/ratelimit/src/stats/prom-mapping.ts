// statsd name → Prometheus metric mapping, in the statsd_exporter mapping-file format that users
// of upstream's PROMETHEUS_MAPPER_YAML already have:
//
//   defaults: { observer_type, match_type, buckets, quantiles, histogram_options, summary_options, ttl, glob_disable_ordering }
//   mappings:
//     - match: "ratelimit_server.*.total_requests"   # glob: each `*` is one dot-free run, whole name
//       match_type: glob | regex                      # regex: as written (unanchored), `$n` = group n
//       name: "ratelimit_service_total_requests"
//       labels: { grpc_method: "$1" }
//       match_metric_type: counter | gauge | observer
//       observer_type: histogram | summary            # timer_type is the older spelling
//       histogram_options: { buckets: [...] }         # or the older `buckets:`
//       summary_options: { quantiles: [{quantile, error}], max_age, age_buckets }
//       scale: 0.001                                  # multiplies timer observations
//       help: "..."
//       action: map | drop
//
// Matching follows statsd_exporter: glob rules first, in file order, then regex rules in order;
// a rule whose match_metric_type differs is skipped. Unlike upstream (which ignores a broken file
// silently), every problem in the file is reported at start-up in one error.
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { RateLimitError } from '@rls/engine';
import { parseDurationMs } from '@rls/settings';

export type StatKind = 'counter' | 'gauge' | 'observer';
export type ObserverType = 'histogram' | 'summary';

export interface Quantile {
  quantile: number;
  error: number;
}

export interface MappingRule {
  readonly index: number;
  readonly match: string;
  readonly matchType: 'glob' | 'regex';
  readonly regex: RegExp;
  readonly action: 'map' | 'drop';
  readonly nameTemplate: string;
  readonly labels: readonly (readonly [name: string, template: string])[];
  readonly matchMetricType: StatKind | undefined;
  readonly observerType: ObserverType;
  readonly buckets: readonly number[];
  readonly quantiles: readonly Quantile[];
  readonly maxAgeSeconds: number;
  readonly ageBuckets: number;
  readonly scale: number | undefined;
  readonly help: string | undefined;
}

export interface ObserverDefaults {
  readonly observerType: ObserverType;
  readonly buckets: readonly number[];
  readonly quantiles: readonly Quantile[];
  readonly maxAgeSeconds: number;
  readonly ageBuckets: number;
}

export interface StatsMapping {
  /** Where the rules came from (file path or "built-in"), for messages. */
  readonly source: string;
  readonly rules: readonly MappingRule[];
  /** Observer settings for stats no rule matches (the file's `defaults:`). */
  readonly defaults: ObserverDefaults;
  /** Accepted but ineffective settings (e.g. ttl: stats here never expire). */
  readonly warnings: readonly string[];
}

/** Prometheus DefBuckets, statsd_exporter's default. */
export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** statsd_exporter's default summary objectives. */
export const DEFAULT_QUANTILES: readonly Quantile[] = [
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.99, error: 0.001 },
];
/** Go client defaults for a summary's sliding window. */
const DEFAULT_MAX_AGE_SECONDS = 600;
const DEFAULT_AGE_BUCKETS = 5;
/** statsd_exporter's default observer type for timers. */
const DEFAULT_OBSERVER: ObserverType = 'summary';

const METRIC_NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TEMPLATE_RE = /\$\{(\w+)\}|\$(\d+)/g;

const DEFAULTS_KEYS = new Set(['observer_type', 'timer_type', 'buckets', 'quantiles', 'match_type', 'glob_disable_ordering', 'ttl', 'summary_options', 'histogram_options']);
const MAPPING_KEYS = new Set(['match', 'name', 'labels', 'observer_type', 'timer_type', 'buckets', 'quantiles', 'match_type', 'help', 'action', 'match_metric_type', 'ttl', 'summary_options', 'histogram_options', 'scale']);
const HISTOGRAM_KEYS = new Set(['buckets', 'native_histogram_bucket_factor', 'native_histogram_max_buckets']);
const SUMMARY_KEYS = new Set(['quantiles', 'max_age', 'age_buckets', 'buf_cap']);

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Collects problems with their YAML path so one error can list them all. */
class Problems {
  readonly list: string[] = [];
  readonly warnings: string[] = [];
  add(path: string, msg: string): void {
    this.list.push(`${path}: ${msg}`);
  }
}

function checkKeys(o: Obj, allowed: Set<string>, path: string, p: Problems): void {
  for (const k of Object.keys(o)) if (!allowed.has(k)) p.add(`${path}.${k}`, 'unknown field');
}

function readEnum<T extends string>(o: Obj, key: string, allowed: readonly T[], path: string, p: Problems): T | undefined {
  const v = o[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T;
  p.add(`${path}.${key}`, `expected one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  return undefined;
}

function readBuckets(v: unknown, path: string, p: Problems): number[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'number' || !Number.isFinite(x))) {
    p.add(path, 'expected a list of numbers');
    return undefined;
  }
  const nums = v as number[];
  if (nums.length === 0) return undefined;
  for (let i = 1; i < nums.length; i++) {
    if ((nums[i] ?? 0) <= (nums[i - 1] ?? 0)) {
      p.add(path, 'bucket bounds must be strictly increasing');
      return undefined;
    }
  }
  return nums;
}

function readQuantiles(v: unknown, path: string, p: Problems): Quantile[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) {
    p.add(path, 'expected a list of {quantile, error}');
    return undefined;
  }
  const out: Quantile[] = [];
  v.forEach((q: unknown, i) => {
    if (!isObj(q) || typeof q.quantile !== 'number' || q.quantile <= 0 || q.quantile >= 1) {
      p.add(`${path}[${i}]`, 'expected {quantile: 0<q<1, error: number}');
      return;
    }
    out.push({ quantile: q.quantile, error: typeof q.error === 'number' ? q.error : 0 });
  });
  return out.length === 0 ? undefined : out;
}

interface ObserverSettings {
  observerType: ObserverType | undefined;
  buckets: number[] | undefined;
  quantiles: Quantile[] | undefined;
  maxAgeSeconds: number | undefined;
  ageBuckets: number | undefined;
}

/** Reads the observer settings shared by `defaults` and each mapping (old and new spellings). */
function readObserver(o: Obj, path: string, p: Problems): ObserverSettings {
  const observerType = readEnum(o, 'observer_type', ['histogram', 'summary'] as const, path, p) ?? readEnum(o, 'timer_type', ['histogram', 'summary'] as const, path, p);
  let buckets = readBuckets(o.buckets, `${path}.buckets`, p);
  let quantiles = readQuantiles(o.quantiles, `${path}.quantiles`, p);
  let maxAgeSeconds: number | undefined;
  let ageBuckets: number | undefined;
  if (o.histogram_options !== undefined && o.histogram_options !== null) {
    if (!isObj(o.histogram_options)) p.add(`${path}.histogram_options`, 'expected a mapping');
    else {
      checkKeys(o.histogram_options, HISTOGRAM_KEYS, `${path}.histogram_options`, p);
      buckets = readBuckets(o.histogram_options.buckets, `${path}.histogram_options.buckets`, p) ?? buckets;
      if (o.histogram_options.native_histogram_bucket_factor !== undefined) p.warnings.push(`${path}.histogram_options: native histograms are not supported; classic buckets are used`);
    }
  }
  if (o.summary_options !== undefined && o.summary_options !== null) {
    if (!isObj(o.summary_options)) p.add(`${path}.summary_options`, 'expected a mapping');
    else {
      const so = o.summary_options;
      checkKeys(so, SUMMARY_KEYS, `${path}.summary_options`, p);
      quantiles = readQuantiles(so.quantiles, `${path}.summary_options.quantiles`, p) ?? quantiles;
      if (so.max_age !== undefined) {
        try {
          if (typeof so.max_age !== 'string') throw new Error('expected a duration such as 10m');
          maxAgeSeconds = parseDurationMs(so.max_age) / 1000;
        } catch (err) {
          p.add(`${path}.summary_options.max_age`, err instanceof Error ? err.message : String(err));
        }
      }
      if (so.age_buckets !== undefined) {
        if (typeof so.age_buckets === 'number' && Number.isInteger(so.age_buckets) && so.age_buckets > 0) ageBuckets = so.age_buckets;
        else p.add(`${path}.summary_options.age_buckets`, 'expected a positive integer');
      }
    }
  }
  return { observerType, buckets, quantiles, maxAgeSeconds, ageBuckets };
}

/** Go RE2 spells named groups `(?P<name>…)`; JavaScript wants `(?<name>…)`. */
function toJsRegexSource(src: string): string {
  return src.replace(/\(\?P</g, '(?<');
}

function globToRegex(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('([^.]*)');
  return new RegExp(`^${body}$`);
}

/** Checks that every `$n`/`${name}` in a template refers to an existing group. */
function checkTemplate(template: string, groupCount: number, groupNames: ReadonlySet<string>, path: string, p: Problems): void {
  for (const m of template.matchAll(TEMPLATE_RE)) {
    const ref = m[1] ?? m[2] ?? '';
    const ok = /^\d+$/.test(ref) ? Number(ref) <= groupCount : groupNames.has(ref);
    if (!ok) p.add(path, `${m[0]} does not refer to a group of the match (it has ${groupCount})`);
  }
}

function compileRule(raw: unknown, index: number, defaults: ObserverSettings & { matchType: 'glob' | 'regex' }, p: Problems): MappingRule | undefined {
  const path = `mappings[${index}]`;
  if (!isObj(raw)) {
    p.add(path, 'expected a mapping');
    return undefined;
  }
  checkKeys(raw, MAPPING_KEYS, path, p);
  const before = p.list.length;
  const match = raw.match;
  if (typeof match !== 'string' || match === '') {
    p.add(`${path}.match`, 'required (a glob or regular expression)');
    return undefined;
  }
  const matchType = readEnum(raw, 'match_type', ['glob', 'regex'] as const, path, p) ?? defaults.matchType;
  const action = readEnum(raw, 'action', ['map', 'drop'] as const, path, p) ?? 'map';
  let regex: RegExp;
  if (matchType === 'glob') {
    if (/\s/.test(match) || match.split('.').some((c) => c === '')) {
      p.add(`${path}.match`, `invalid glob ${JSON.stringify(match)} (dot-separated parts, '*' as wildcard, no empty parts)`);
      return undefined;
    }
    regex = globToRegex(match);
  } else {
    try {
      regex = new RegExp(toJsRegexSource(match));
    } catch (err) {
      p.add(`${path}.match`, `invalid regular expression: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }
  // Group count and names, from a match of the empty alternative.
  const probe = new RegExp(`${regex.source}|`).exec('');
  const groupCount = probe === null ? 0 : probe.length - 1;
  const groupNames = new Set(Object.keys(probe?.groups ?? {}));

  const name = raw.name;
  let nameTemplate = '';
  if (action === 'map') {
    if (typeof name !== 'string' || name === '') {
      p.add(`${path}.name`, 'required unless action is drop');
    } else {
      nameTemplate = name;
      if (!METRIC_NAME_RE.test(name.replace(TEMPLATE_RE, 'x'))) p.add(`${path}.name`, `${JSON.stringify(name)} is not a valid metric name`);
      checkTemplate(name, groupCount, groupNames, `${path}.name`, p);
    }
  }
  const labels: [string, string][] = [];
  if (raw.labels !== undefined && raw.labels !== null) {
    if (!isObj(raw.labels)) p.add(`${path}.labels`, 'expected a mapping of label name to value');
    else {
      for (const [k, v] of Object.entries(raw.labels)) {
        if (!LABEL_NAME_RE.test(k) || k.startsWith('__')) p.add(`${path}.labels.${k}`, 'invalid label name');
        if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
          p.add(`${path}.labels.${k}`, 'expected a string');
          continue;
        }
        checkTemplate(String(v), groupCount, groupNames, `${path}.labels.${k}`, p);
        labels.push([k, String(v)]);
      }
    }
  }
  const mt = readEnum(raw, 'match_metric_type', ['counter', 'gauge', 'observer', 'timer'] as const, path, p);
  const matchMetricType: StatKind | undefined = mt === 'timer' ? 'observer' : mt;
  let scale: number | undefined;
  if (raw.scale !== undefined && raw.scale !== null) {
    if (typeof raw.scale !== 'number' || !Number.isFinite(raw.scale)) p.add(`${path}.scale`, 'expected a number');
    else scale = raw.scale;
  }
  if (raw.help !== undefined && typeof raw.help !== 'string') p.add(`${path}.help`, 'expected a string');
  if (raw.ttl !== undefined) p.warnings.push(`${path}.ttl: ignored (statistics here live for the whole process)`);
  const obs = readObserver(raw, path, p);
  if (p.list.length > before) return undefined;
  return {
    index,
    match,
    matchType,
    regex,
    action,
    nameTemplate,
    labels,
    matchMetricType,
    observerType: obs.observerType ?? defaults.observerType ?? DEFAULT_OBSERVER,
    buckets: obs.buckets ?? defaults.buckets ?? DEFAULT_BUCKETS,
    quantiles: obs.quantiles ?? defaults.quantiles ?? DEFAULT_QUANTILES,
    maxAgeSeconds: obs.maxAgeSeconds ?? defaults.maxAgeSeconds ?? DEFAULT_MAX_AGE_SECONDS,
    ageBuckets: obs.ageBuckets ?? defaults.ageBuckets ?? DEFAULT_AGE_BUCKETS,
    scale,
    help: typeof raw.help === 'string' ? raw.help : undefined,
  };
}

/** Parses mapping-file text; throws RateLimitError('settings_invalid') listing every problem. */
export function parseMappingYaml(text: string, source: string): StatsMapping {
  const p = new Problems();
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new RateLimitError('settings_invalid', `${source}: invalid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
  }
  const root: unknown = doc.toJS();
  const rules: MappingRule[] = [];
  let defaults: ObserverSettings & { matchType: 'glob' | 'regex' } = {
    observerType: undefined,
    buckets: undefined,
    quantiles: undefined,
    maxAgeSeconds: undefined,
    ageBuckets: undefined,
    matchType: 'glob',
  };
  if (!isObj(root)) {
    p.add('(top level)', 'expected a mapping with a `mappings:` list');
  } else {
    checkKeys(root, new Set(['defaults', 'mappings']), '(top level)', p);
    if (root.defaults !== undefined && root.defaults !== null) {
      if (!isObj(root.defaults)) p.add('defaults', 'expected a mapping');
      else {
        checkKeys(root.defaults, DEFAULTS_KEYS, 'defaults', p);
        const matchType = readEnum(root.defaults, 'match_type', ['glob', 'regex'] as const, 'defaults', p) ?? 'glob';
        if (root.defaults.ttl !== undefined) p.warnings.push('defaults.ttl: ignored (statistics here live for the whole process)');
        defaults = { ...readObserver(root.defaults, 'defaults', p), matchType };
      }
    }
    if (!Array.isArray(root.mappings)) {
      p.add('mappings', 'required: a list of mapping rules');
    } else {
      root.mappings.forEach((m: unknown, i) => {
        const rule = compileRule(m, i, defaults, p);
        if (rule !== undefined) rules.push(rule);
      });
    }
  }
  if (p.list.length > 0) {
    throw new RateLimitError('settings_invalid', `${source}: invalid metrics mapping (${p.list.length} problem${p.list.length === 1 ? '' : 's'}):\n  ${p.list.join('\n  ')}`);
  }
  // statsd_exporter consults glob rules before regex rules; order the list once here.
  const ordered = [...rules.filter((r) => r.matchType === 'glob'), ...rules.filter((r) => r.matchType === 'regex')];
  return {
    source,
    rules: ordered,
    defaults: {
      observerType: defaults.observerType ?? DEFAULT_OBSERVER,
      buckets: defaults.buckets ?? DEFAULT_BUCKETS,
      quantiles: defaults.quantiles ?? DEFAULT_QUANTILES,
      maxAgeSeconds: defaults.maxAgeSeconds ?? DEFAULT_MAX_AGE_SECONDS,
      ageBuckets: defaults.ageBuckets ?? DEFAULT_AGE_BUCKETS,
    },
    warnings: p.warnings,
  };
}

/** Reads a mapping file (start-up only, hence synchronous). */
export function loadMappingFile(path: string): StatsMapping {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new RateLimitError('settings_invalid', `${path}: cannot read metrics mapping file: ${err instanceof Error ? err.message : String(err)}`);
  }
  return parseMappingYaml(text, path);
}

function expand(template: string, m: RegExpExecArray): string {
  return template.replace(TEMPLATE_RE, (_whole, named: string | undefined, digits: string | undefined) => {
    if (digits !== undefined) return m[Number(digits)] ?? '';
    if (named !== undefined && /^\d+$/.test(named)) return m[Number(named)] ?? '';
    return m.groups?.[named ?? ''] ?? '';
  });
}

export type MappingResult =
  | { action: 'map'; name: string; labels: Record<string, string>; rule: MappingRule }
  | { action: 'drop' }
  | undefined;

/** Finds the rule for a stat; undefined when none matches (the caller escapes the name). */
export function mapStat(mapping: StatsMapping, statName: string, kind: StatKind): MappingResult {
  for (const rule of mapping.rules) {
    if (rule.matchMetricType !== undefined && rule.matchMetricType !== kind) continue;
    const m = rule.regex.exec(statName);
    if (m === null) continue;
    if (rule.action === 'drop') return { action: 'drop' };
    const labels: Record<string, string> = {};
    for (const [k, t] of rule.labels) labels[k] = expand(t, m);
    return { action: 'map', name: escapeMetricName(expand(rule.nameTemplate, m)), labels, rule };
  }
  return undefined;
}

/**
 * statsd_exporter's escaping: characters outside [a-zA-Z0-9_] become `_` (a `-` right after a
 * `-` is dropped), and a leading digit gets a `_` prefix.
 */
export function escapeMetricName(name: string): string {
  let out = /^[0-9]/.test(name) ? '_' : '';
  let prev = '';
  for (const c of name) {
    if (/[a-zA-Z0-9_]/.test(c)) out += c;
    else if (!(c === '-' && prev === '-')) out += '_';
    prev = c;
  }
  return out;
}
