// xDS RateLimitConfig resources -> the validated rule set the YAML loader builds (as upstream's src/config/config_xds.go).
// Each resource is one rule source named after the resource, so errors read like a file's:
// `<resource name>: <problem>`. The xDS schema has no value_to_metric and no share_threshold; it
// carries our extensions in RateLimitPolicy fields 1000 (algorithm), 1001 (burst) and 1002
// (unit_multiplier), RateLimitDescriptor fields 1003 (rate_limits), 1004 (cidr), 1005 (prefix), 1008
// (cidrs) and 1009 (prefixes), and
// the RLQS quota rules in RateLimitConfig fields 1006 (quota_buckets) and 1007 (default_quota).
import type { QuotaRuleMsg, RateLimitConfigDescriptorMsg, RateLimitConfigMsg, RateLimitPolicyMsg } from '@rls/rls-proto';
import { ConfigError } from '../errors.js';
import type { JsonValue } from '../domain.js';
import { RuleFileError, type DescriptorSpec, type DomainSpec, type RateLimitSpec } from './rule-file.js';
import { decodeQuotaDocument, type QuotaDocumentSpec } from './quota-rules.js';
import type { YMap, YNode } from './yaml-document.js';
import { loadRuleSetFromSpecs, type LoadOptions, type RuleSet } from './rule-set.js';

function policySpec(rl: RateLimitPolicyMsg): RateLimitSpec {
  return {
    unit: rl.unit,
    requestsPerUnit: rl.requestsPerUnit,
    unlimited: rl.unlimited,
    name: rl.name,
    replaces: rl.replaces.map((r) => ({ name: r.name })),
    // The extension fields 1000-1002 of RateLimitPolicy (rls_conf.proto); burst and unit_multiplier 0 are "unset".
    algorithm: rl.algorithm ?? '',
    burst: rl.burst,
    unitMultiplier: rl.unitMultiplier,
    line: 0,
  };
}

/** `cidr`/`cidrs` (or `prefix`/`prefixes`) as the descriptor spec's one field: a text or a list. */
function matchField(key: string, name: 'cidr' | 'prefix', one: string | undefined, list: readonly string[] | undefined): { cidr?: string | readonly string[] } | { prefix?: string | readonly string[] } {
  const many = list !== undefined && list.length > 0 ? list : undefined;
  if (one !== undefined && many !== undefined) throw new RuleFileError(`descriptor '${key}' sets both ${name} and ${name === 'cidr' ? 'cidrs' : 'prefixes'}: one text or one list`);
  const value = many ?? one;
  return value === undefined ? {} : { [name]: value };
}

function descriptorSpec(d: RateLimitConfigDescriptorMsg): DescriptorSpec {
  const rl = d.rateLimit;
  return {
    key: d.key,
    value: d.value,
    // RateLimitDescriptor's extension fields 1003-1005 and 1008-1009: rate_limits, cidr, prefix,
    // cidrs, prefixes (a single text and a list together are refused).
    ...matchField(d.key, 'cidr', d.cidr, d.cidrs),
    ...matchField(d.key, 'prefix', d.prefix, d.prefixes),
    rateLimit: rl === undefined ? undefined : policySpec(rl),
    ...(d.rateLimits !== undefined && d.rateLimits.length > 0 ? { rateLimits: d.rateLimits.map(policySpec) } : {}),
    descriptors: d.descriptors.map(descriptorSpec),
    shadowMode: d.shadowMode,
    quotaMode: d.quotaMode,
    detailedMetric: d.detailedMetric,
    valueToMetric: false,
    shareThreshold: false,
    metadata: d.metadata as { readonly [k: string]: JsonValue } | undefined,
    line: 0,
  };
}

/** One resource as the rule builder's typed spec. */
export function domainSpecOf(resource: RateLimitConfigMsg): DomainSpec {
  return { domain: resource.domain, descriptors: resource.descriptors.map(descriptorSpec) };
}

// ---- quota rules: the resource's fields as the document nodes a rule file gives, so that one decoder
// (quota-rules.ts) validates both forms with the same messages (without line numbers here).

const str = (text: string): YNode => ({ kind: 'scalar', type: 'str', value: text, text, line: 0 });
const int = (n: number): YNode => ({ kind: 'scalar', type: 'int', value: BigInt(n), text: String(n), line: 0 });
const map = (pairs: [string, YNode][]): YMap => ({ kind: 'map', pairs: pairs.map(([k, value]) => ({ key: str(k), value })), line: 0 });

/** A QuotaRule as a `quota:` map: empty strings, UNKNOWN and zero multiplier/burst are "not written". */
function quotaNode(q: QuotaRuleMsg): YMap {
  const pairs: [string, YNode][] = [];
  if (q.strategy !== '') pairs.push(['strategy', str(q.strategy)]);
  if (q.unit !== 'UNKNOWN') pairs.push(['unit', str(q.unit.toLowerCase())]);
  if (q.requestsPerUnit !== undefined) pairs.push(['requests_per_unit', int(q.requestsPerUnit)]);
  if (q.unitMultiplier !== undefined && q.unitMultiplier !== 0) pairs.push(['unit_multiplier', int(q.unitMultiplier)]);
  if (q.burst !== undefined && q.burst !== 0) pairs.push(['burst', int(q.burst)]);
  if (q.onStoreFailure !== '') pairs.push(['on_store_failure', str(q.onStoreFailure)]);
  return map(pairs);
}

/** The resource's quota rules, or undefined when it carries none. Throws RuleFileError. */
export function quotaSpecOf(resource: RateLimitConfigMsg): QuotaDocumentSpec | undefined {
  const buckets = resource.quotaBuckets ?? [];
  if (buckets.length === 0 && resource.defaultQuota === undefined) return undefined;
  const pairs: [string, YNode][] = [['domain', str(resource.domain)]];
  if (buckets.length > 0) {
    const items = buckets.map((b, i): YNode => {
      const id: [string, YNode][] = Object.entries(b.bucketId).map(([k, v]) => [k, str(v)]);
      for (const [k, block] of Object.entries(b.bucketIdCidr)) {
        if (Object.hasOwn(b.bucketId, k)) throw new RuleFileError(`quota_buckets[${i}]: bucket_id key '${k}' is in both bucket_id and bucket_id_cidr`);
        id.push([k, map([['cidr', str(block)]])]);
      }
      const entry: [string, YNode][] = [['bucket_id', map(id)]];
      if (b.quota !== undefined) entry.push(['quota', quotaNode(b.quota)]);
      if (b.name !== '') entry.push(['name', str(b.name)]);
      return map(entry);
    });
    pairs.push(['quota_buckets', { kind: 'seq', items, line: 0 }]);
  }
  if (resource.defaultQuota !== undefined) pairs.push(['default_quota', quotaNode(resource.defaultQuota)]);
  return decodeQuotaDocument(map(pairs));
}

/**
 * Validates and compiles the full resource list of one xDS update (State of the World: the list
 * replaces everything). An empty list is a valid empty rule set. Throws ConfigError.
 */
export function loadXdsRuleSet(resources: readonly RateLimitConfigMsg[], opts: LoadOptions): RuleSet {
  return loadRuleSetFromSpecs(
    resources.map((r) => {
      let quota: QuotaDocumentSpec | undefined;
      let spec: DomainSpec;
      try {
        quota = quotaSpecOf(r);
        spec = domainSpecOf(r);
      } catch (err) {
        if (err instanceof RuleFileError) throw new ConfigError(`${r.name}: ${err.message}`);
        throw err;
      }
      return { name: r.name, spec, quota };
    }),
    opts,
  );
}
