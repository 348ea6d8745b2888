// xDS RateLimitConfig resources -> the validated rule set the YAML loader builds (as upstream's src/config/config_xds.go).
// Each resource is one rule source named after the resource, so errors read like a file's:
// `<resource name>: <problem>`. The xDS schema has no value_to_metric and no share_threshold; it
// carries our algorithm extension in RateLimitPolicy fields 1000 (algorithm) and 1001 (burst).
import type { RateLimitConfigDescriptorMsg, RateLimitConfigMsg } from '@rls/rls-proto';
import type { JsonValue } from '../domain.js';
import type { DescriptorSpec, DomainSpec } from './rule-file.js';
import { loadRuleSetFromSpecs, type LoadOptions, type RuleSet } from './rule-set.js';

function descriptorSpec(d: RateLimitConfigDescriptorMsg): DescriptorSpec {
  const rl = d.rateLimit;
  return {
    key: d.key,
    value: d.value,
    rateLimit:
      rl === undefined
        ? undefined
        : {
            unit: rl.unit,
            requestsPerUnit: rl.requestsPerUnit,
            unlimited: rl.unlimited,
            name: rl.name,
            replaces: rl.replaces.map((r) => ({ name: r.name })),
            // The extension fields 1000/1001 of RateLimitPolicy (rls_conf.proto); burst 0 is "unset".
            algorithm: rl.algorithm ?? '',
            burst: rl.burst,
          },
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
