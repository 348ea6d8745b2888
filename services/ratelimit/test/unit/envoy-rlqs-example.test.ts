// examples/envoy/envoy-rlqs.yaml against examples/ratelimit/rlqs/edge.yaml: the rate_limit_quota
// filter points at the service's gRPC cluster (HTTP/2, the gRPC port), uses the rules' domain, and
// every bucket id its builders make falls under the quota rule the file's comments promise; each
// bucket has a fallback for no assignment and for an expired one (never Envoy's implicit allow-all
// for the tenant buckets). The rules directory passes ratelimit-config-check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { loadRuleSet, readRuleFiles } from '@rls/engine';
import { main as configCheck } from '../../src/cli/ratelimit-config-check.js';

const repo = new URL('../../../../', import.meta.url).pathname;
const rulesDir = `${repo}examples/ratelimit/rlqs`;

interface BucketSettings {
  bucket_id_builder: { bucket_id_builder: Record<string, { string_value?: string; custom_value?: { typed_config: { header_name: string } } }> };
  reporting_interval: string;
  no_assignment_behavior?: { fallback_rate_limit: Record<string, unknown> };
  expired_assignment_behavior?: { expired_assignment_behavior_timeout: string };
}

function loadFilter(): { filter: Record<string, unknown>; clusters: Array<Record<string, unknown>> } {
  const doc = parse(readFileSync(`${repo}examples/envoy/envoy-rlqs.yaml`, 'utf8')) as {
    static_resources: {
      listeners: Array<{ filter_chains: Array<{ filters: Array<{ name: string; typed_config: { http_filters: Array<{ name: string; typed_config: Record<string, unknown> }> } }> }> }>;
      clusters: Array<Record<string, unknown>>;
    };
  };
  const filters = doc.static_resources.listeners.flatMap((l) => l.filter_chains.flatMap((c) => c.filters)).flatMap((f) => f.typed_config.http_filters);
  const filter = filters.find((f) => f.name === 'envoy.filters.http.rate_limit_quota');
  assert.ok(filter, 'the rate_limit_quota filter');
  assert.equal(filters.at(-1)?.name, 'envoy.filters.http.router');
  return { filter: filter.typed_config, clusters: doc.static_resources.clusters };
}

/** The bucket id a builder makes for a request with the given headers. */
function bucketIdOf(s: BucketSettings, headers: Record<string, string>): { key: string; value: string }[] {
  return Object.entries(s.bucket_id_builder.bucket_id_builder).map(([key, b]) => ({ key, value: b.string_value ?? headers[b.custom_value!.typed_config.header_name]! }));
}

test('envoy-rlqs.yaml: the filter streams to the gRPC cluster over HTTP/2 with the rules domain', () => {
  const { filter, clusters } = loadFilter();
  assert.equal(filter.domain, 'edge');
  const clusterName = (filter.rlqs_server as { envoy_grpc: { cluster_name: string } }).envoy_grpc.cluster_name;
  const cluster = clusters.find((c) => c.name === clusterName) as { typed_extension_protocol_options: Record<string, { explicit_http_config: { http2_protocol_options: object } }>; load_assignment: unknown };
  assert.ok(cluster.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions']!.explicit_http_config.http2_protocol_options);
  assert.match(JSON.stringify(cluster.load_assignment), /"port_value":8081/);
});

test('envoy-rlqs.yaml: every bucket the filter makes falls under the promised quota rule, with fallbacks', () => {
  const { filter } = loadFilter();
  const rules = loadRuleSet(readRuleFiles(rulesDir, { ignoreDotfiles: true }), { mergeDomainConfig: false }).quotaRules;
  const matchers = filter.bucket_matchers as { matcher_list: { matchers: Array<{ on_match: { action: { typed_config: BucketSettings } } }> }; on_no_match: { action: { typed_config: BucketSettings } } };
  const tenant = matchers.matcher_list.matchers[0]!.on_match.action.typed_config;
  const other = matchers.on_no_match.action.typed_config;
  assert.equal(rules.match('edge', bucketIdOf(tenant, { 'x-tenant': 'globex' })).rule.quota.requestsPerUnit, 100);
  assert.equal(rules.match('edge', bucketIdOf(tenant, { 'x-tenant': 'acme' })).rule.name, 'acme_api');
  const o = rules.match('edge', bucketIdOf(other, {})).rule;
  assert.equal(o.isDefault, false);
  assert.equal(o.quota.requestsPerUnit, 1000);
  for (const s of [tenant, other]) {
    assert.ok(s.no_assignment_behavior?.fallback_rate_limit, 'a no_assignment_behavior');
    assert.ok(s.expired_assignment_behavior?.expired_assignment_behavior_timeout, 'an expired_assignment_behavior');
    assert.match(s.reporting_interval, /^\d+s$/, 'whole seconds (Envoy reads only the seconds)');
  }
  assert.ok('token_bucket' in tenant.no_assignment_behavior!.fallback_rate_limit, 'tenant buckets are not allow-all before their first assignment');
});

test('examples/ratelimit/rlqs passes ratelimit-config-check', () => {
  const out: string[] = [];
  const code = configCheck(['-config_dir', rulesDir, '-backend_type', 'memory'], { out: (l) => out.push(l), err: (l) => out.push(l) }, {});
  assert.equal(code, 0, out.join('\n'));
  assert.ok(out.includes('RLQS quota rules: 3 quota_buckets entries in 1 domain(s)'), out.join('\n'));
});
