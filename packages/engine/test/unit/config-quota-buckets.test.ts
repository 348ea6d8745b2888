// The rule loader and RLQS quota rules (issue 28 phase 2): a document may carry quota_buckets and
// default_quota beside descriptors; loadRuleSet validates both, the RuleSet carries the quota rule
// set (so a reload swaps both at once), errors name the file, the document and the entry, and the
// `{ cidr: ... }` bucket value matcher is installed by default.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadRuleSet, loadRuleSetFromSpecs, decodeQuotaDocument, parseYamlDocuments, type RuleSet, type RuleSource } from '@rls/engine';

const src = (name: string, content: string): RuleSource => ({ name, content });
const id = (o: Record<string, string>): { key: string; value: string }[] => Object.entries(o).map(([key, value]) => ({ key, value }));
const load = (sources: RuleSource[], merge = false): RuleSet => loadRuleSet(sources, { mergeDomainConfig: merge });

function loadError(sources: RuleSource[], merge = false): string {
  try {
    load(sources, merge);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected the load to fail');
}

const MIXED = `domain: edge
descriptors:
  - key: path
    value: /login
    rate_limit: { unit: minute, requests_per_unit: 5 }
quota_buckets:
  - bucket_id: { name: api, tenant: "*" }
    quota: { unit: second, requests_per_unit: 100 }
  - bucket_id: { name: api, client: { cidr: 10.0.0.0/8 } }
    name: internal_api
    quota: { strategy: deny_all }
default_quota: { strategy: allow_all }
`;

describe('rule loader: quota_buckets beside descriptors', () => {
  test('one document holds both; the descriptors limit as before and the quota rules match', () => {
    const rules = load([src('edge.yaml', MIXED)]);
    const limit = rules.getLimit('edge', { entries: [{ key: 'path', value: '/login' }] });
    assert.equal(limit?.limit.requestsPerUnit, 5);
    const q = rules.quotaRules;
    assert.deepEqual(q.domains(), ['edge']);
    const api = q.match('edge', id({ tenant: 'acme', name: 'api' }));
    assert.equal(api.domainKnown, true);
    assert.equal(api.rule.quota.requestsPerUnit, 100);
    assert.equal(q.match('edge', id({ name: 'web' })).rule.isDefault, true);
    assert.equal(q.match('other', id({ name: 'api' })).domainKnown, false);
  });

  test('the cidr value matcher is installed: IPv4, IPv4-mapped IPv6, and non-addresses', () => {
    const q = load([src('edge.yaml', MIXED)]).quotaRules;
    assert.equal(q.match('edge', id({ name: 'api', client: '10.1.2.3' })).rule.name, 'internal_api');
    assert.equal(q.match('edge', id({ name: 'api', client: '::ffff:10.9.9.9' })).rule.name, 'internal_api');
    assert.equal(q.match('edge', id({ name: 'api', client: '11.0.0.1' })).rule.isDefault, true);
    assert.equal(q.match('edge', id({ name: 'api', client: 'not-an-ip' })).rule.isDefault, true);
    const v6 = load([src('v6.yaml', 'domain: v6\nquota_buckets:\n  - bucket_id: { c: { cidr: "2001:db8::/32" } }\n    quota: { strategy: deny_all }\n')]).quotaRules;
    assert.equal(v6.match('v6', id({ c: '2001:db8:1::5' })).rule.isDefault, false);
    assert.equal(v6.match('v6', id({ c: '2001:db9::5' })).rule.isDefault, true);
    assert.equal(v6.match('v6', id({ c: '10.0.0.1' })).rule.isDefault, true);
  });

  test('a document with only quota rules loads a domain with no descriptors', () => {
    const rules = load([src('q.yaml', 'domain: q\nquota_buckets:\n  - bucket_id: { a: b }\n    quota: { unit: hour, requests_per_unit: 7 }\n')]);
    assert.deepEqual(rules.domains(), ['q']);
    assert.equal(rules.getLimit('q', { entries: [{ key: 'a', value: 'b' }] }), undefined);
    assert.equal(rules.quotaRules.match('q', id({ a: 'b' })).rule.quota.requestsPerUnit, 7);
  });

  test('files without quota rules give an empty quota rule set', () => {
    const rules = load([src('d.yaml', 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n')]);
    assert.deepEqual(rules.quotaRules.domains(), []);
  });

  test('every reload builds its own quota rules (the snapshot swaps both)', () => {
    const a = load([src('edge.yaml', MIXED)]);
    const b = load([src('edge.yaml', MIXED.replace('requests_per_unit: 100', 'requests_per_unit: 50'))]);
    assert.equal(a.quotaRules.match('edge', id({ name: 'api', tenant: 'x' })).rule.quota.requestsPerUnit, 100);
    assert.equal(b.quotaRules.match('edge', id({ name: 'api', tenant: 'x' })).rule.quota.requestsPerUnit, 50);
  });
});

describe('rule loader: quota errors name the file, document and entry', () => {
  const cases: [string, RuleSource[], string][] = [
    ['a missing bucket_id', [src('edge.yaml', 'domain: edge\nquota_buckets:\n  - quota: { strategy: allow_all }\n')], 'edge.yaml: quota_buckets[0]: missing bucket_id (line 3)'],
    [
      'the second document of a file',
      [src('multi.yaml', 'domain: a\n---\ndomain: b\nquota_buckets:\n  - bucket_id: { x: y }\n    quota: { strategy: sometimes }\n')],
      'multi.yaml: ',
    ],
    ['quota_buckets inside a descriptor is an unknown key', [src('edge.yaml', 'domain: edge\ndescriptors:\n  - key: k\n    quota_buckets: []\n')], "edge.yaml: config error, unknown key 'quota_buckets' (line 4)"],
    ['a bad cidr block', [src('edge.yaml', 'domain: edge\nquota_buckets:\n  - bucket_id: { ip: { cidr: 10.0.0.1/8 } }\n    quota: { strategy: allow_all }\n')], "edge.yaml: quota_buckets[0].bucket_id.ip: cidr: cidr '10.0.0.1/8' has host bits set; the block is 10.0.0.0/8 (line 3)"],
    [
      'a domain in two files without MERGE_DOMAIN_CONFIG',
      [src('a.yaml', 'domain: edge\n'), src('b.yaml', 'domain: edge\nquota_buckets:\n  - bucket_id: { x: y }\n    quota: { strategy: allow_all }\n')],
      'b.yaml: ',
    ],
  ];
  for (const [what, sources, prefix] of cases) {
    test(what, () => {
      const message = loadError(sources);
      assert.ok(message.startsWith(prefix), message);
    });
  }

  test('the error of a second document says which document', () => {
    const message = loadError([src('multi.yaml', 'domain: a\n---\ndomain: b\nquota_buckets:\n  - bucket_id: { x: y }\n    quota: { strategy: sometimes }\n')]);
    assert.match(message, /^multi\.yaml: quota_buckets\[0\].*\(document 2\)$/);
  });

  test('merged domains: quota entries from two files join; a second default_quota is refused', () => {
    const a = src('a.yaml', 'domain: edge\nquota_buckets:\n  - bucket_id: { x: a }\n    quota: { strategy: deny_all }\ndefault_quota: { strategy: allow_all }\n');
    const b = src('b.yaml', 'domain: edge\nquota_buckets:\n  - bucket_id: { x: b }\n    quota: { strategy: deny_all }\n');
    const q = load([a, b], true).quotaRules;
    assert.equal(q.match('edge', id({ x: 'a' })).rule.quota.strategy, 'deny_all');
    assert.equal(q.match('edge', id({ x: 'b' })).rule.quota.strategy, 'deny_all');
    const twoDefaults = loadError([a, src('c.yaml', 'domain: edge\ndefault_quota: { strategy: deny_all }\n')], true);
    assert.match(twoDefaults, /^c\.yaml: second default_quota for domain 'edge' \(first in a\.yaml\)/);
  });

  test('decoded sources (xDS) carry quota rules through loadRuleSetFromSpecs', () => {
    const doc = parseYamlDocuments('domain: x\nquota_buckets:\n  - bucket_id: { k: v }\n    quota: { unit: second, requests_per_unit: 3 }\n')[0] ?? null;
    const quota = decodeQuotaDocument(doc);
    const rules = loadRuleSetFromSpecs([{ name: 'res-x', spec: { domain: 'x', descriptors: [] }, quota }], { mergeDomainConfig: false });
    assert.equal(rules.quotaRules.match('x', id({ k: 'v' })).rule.quota.requestsPerUnit, 3);
  });
});
