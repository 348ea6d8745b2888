// xDS RateLimitConfig resources -> the validated rule set the YAML loader builds (as upstream's src/config/config_xds.go).
// Each resource is one rule source named after the resource, so errors read like a file's:
// `<resource name>: <problem>`. The xDS schema has no value_to_metric and no share_threshold; it
// carries our extensions in RateLimitPolicy fields 1000 (algorithm), 1001 (burst) and 1002
// (unit_multiplier), and RateLimitDescriptor fields 1003 (rate_limits), 1004 (cidr), 1005 (prefix).
import type { RateLimitConfigDescriptorMsg, RateLimitConfigMsg, RateLimitPolicyMsg } from '@rls/rls-proto';
import type { JsonValue } from '../domain.js';
import type { DescriptorSpec, DomainSpec, RateLimitSpec } from './rule-file.js';

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
import { loadRuleSetFromSpecs, type LoadOptions, type RuleSet } from './rule-set.js';

function descriptorSpec(d: RateLimitConfigDescriptorMsg): DescriptorSpec {
  const rl = d.rateLimit;
  return {
    key: d.key,
    value: d.value,
    // RateLimitDescriptor's extension fields 1003-1005: rate_limits, cidr, prefix.
    ...(d.cidr !== undefined ? { cidr: d.cidr } : {}),
    ...(d.prefix !== undefined ? { prefix: d.prefix } : {}),
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

/**
 * Validates and compiles the full resource list of one xDS update (State of the World: the list
 * replaces everything). An empty list is a valid empty rule set. Throws ConfigError.
 */
export function loadXdsRuleSet(resources: readonly RateLimitConfigMsg[], opts: LoadOptions): RuleSet {
  return loadRuleSetFromSpecs(
    resources.map((r) => ({ name: r.name, spec: domainSpecOf(r) })),
    opts,
  );
}
