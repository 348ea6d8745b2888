// RLQS quota rules (quota_buckets / default_quota): what parses into which quota, which entry a
// bucket id falls under (most specific wins, exact key sets, `*`, partial patterns, plugged-in
// matchers, ties by file order, the documented defaults), and every validation error by its text.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadQuotaRules, type QuotaLoadOptions, type QuotaRuleSet, type RuleSource, type ValueMatcherExtension } from '@rls/engine';

const src = (name: string, content: string): RuleSource => ({ name, content });
const id = (o: Record<string, string>): { key: string; value: string }[] => Object.entries(o).map(([key, value]) => ({ key, value }));
const load = (content: string, opts: Partial<QuotaLoadOptions> = {}): QuotaRuleSet => loadQuotaRules([src('edge.yaml', content)], { mergeDomainConfig: false, ...opts });

function loadError(sources: RuleSource[], opts: Partial<QuotaLoadOptions> = {}): string {
  try {
    loadQuotaRules(sources, { mergeDomainConfig: false, ...opts });
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.equal(err.code, 'config_invalid');
    return err.message;
  }
  assert.fail('expected the load to fail');
}
const oneError = (content: string, opts: Partial<QuotaLoadOptions> = {}): string => loadError([src('edge.yaml', content)], opts);

const ISSUE_EXAMPLE = `domain: edge
quota_buckets:
  - bucket_id: { name: api, tenant: "*" }
    quota: { unit: second, requests_per_unit: 100 }
default_quota: { strategy: allow_all }
`;

describe('quota rules: parsing', () => {
  test("the issue's example: a token bucket of 100 per second (burst 100) for every tenant of api; allow_all otherwise", () => {
    const rules = load(ISSUE_EXAMPLE);
    assert.deepEqual(rules.domains(), ['edge']);
    const m = rules.match('edge', id({ tenant: 'acme', name: 'api' }));
    assert.equal(m.domainKnown, true);
    assert.equal(m.rule.name, 'name=api,tenant=*');
    assert.deepEqual(m.rule.quota, { strategy: 'token_bucket', unit: 1, requestsPerUnit: 100, unitMultiplier: 1, periodSeconds: 1, burst: 100, onStoreFailure: 'keep_last' });
    const other = rules.match('edge', id({ name: 'web', tenant: 'acme' }));
    assert.equal(other.rule.isDefault, true);
    assert.equal(other.rule.quota.strategy, 'allow_all');
    assert.deepEqual(rules.summary('edge'), [
      { name: 'name=api,tenant=*', quota: '100 per second (token_bucket, burst 100)', isDefault: false, line: 3 },
      { name: 'default', quota: 'allow_all', isDefault: true, line: 5 },
    ]);
  });

  test('every field: strategy, unit_multiplier, burst, on_store_failure, name', () => {
    const rules = load(`domain: edge
quota_buckets:
  - bucket_id: { name: batch }
    name: batch_jobs
    quota: { strategy: requests_per_time_unit, unit: minute, requests_per_unit: 600, unit_multiplier: 5, on_store_failure: deny_all }
  - bucket_id: { name: burst }
    quota: { unit: hour, requests_per_unit: 3600, burst: 50 }
  - bucket_id: { name: blocked }
    quota: { strategy: deny_all }
`);
    const batch = rules.match('edge', id({ name: 'batch' })).rule;
    assert.equal(batch.name, 'batch_jobs');
    assert.deepEqual(batch.quota, { strategy: 'requests_per_time_unit', unit: 2, requestsPerUnit: 600, unitMultiplier: 5, periodSeconds: 300, burst: 0, onStoreFailure: 'deny_all' });
    assert.deepEqual(rules.match('edge', id({ name: 'burst' })).rule.quota, {
      strategy: 'token_bucket',
      unit: 3,
      requestsPerUnit: 3600,
      unitMultiplier: 1,
      periodSeconds: 3600,
      burst: 50,
      onStoreFailure: 'keep_last',
    });
    assert.equal(rules.match('edge', id({ name: 'blocked' })).rule.quota.strategy, 'deny_all');
  });

  test('without default_quota an unmatched bucket gets the built-in allow_all; a domain without quota rules is not known', () => {
    const rules = load('domain: edge\nquota_buckets:\n  - bucket_id: { name: api }\n    quota: { unit: second, requests_per_unit: 1 }\n');
    const m = rules.match('edge', id({ name: 'x' }));
    assert.deepEqual([m.domainKnown, m.rule.isDefault, m.rule.quota.strategy, m.rule.line], [true, true, 'allow_all', 0]);
    const unknown = rules.match('other', id({ name: 'api' }));
    assert.deepEqual([unknown.domainKnown, unknown.rule.quota.strategy], [false, 'allow_all']);
  });

  test('documents with only descriptors carry no quota rules; several documents and merged domains', () => {
    const rules = loadQuotaRules(
      [
        src('a.yaml', 'domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n'),
        src('b.yaml', 'domain: b\ndefault_quota: { strategy: deny_all }\n---\ndomain: c\nquota_buckets:\n  - bucket_id: { n: "1" }\n    quota: { strategy: allow_all }\n'),
      ],
      { mergeDomainConfig: false },
    );
    assert.deepEqual(rules.domains(), ['b', 'c']);
    assert.equal(rules.match('b', id({ x: 'y' })).rule.quota.strategy, 'deny_all');
    const merged = loadQuotaRules(
      [
        src('1.yaml', 'domain: m\nquota_buckets:\n  - bucket_id: { k: "*" }\n    quota: { unit: second, requests_per_unit: 1 }\n'),
        src('2.yaml', 'domain: m\nquota_buckets:\n  - bucket_id: { k: "*", j: "*" }\n    quota: { unit: second, requests_per_unit: 2 }\ndefault_quota: { strategy: deny_all }\n'),
      ],
      { mergeDomainConfig: true },
    );
    assert.equal(merged.match('m', id({ k: 'v' })).rule.quota.requestsPerUnit, 1);
    assert.equal(merged.match('m', id({ j: 'w', k: 'v' })).rule.quota.requestsPerUnit, 2);
    assert.equal(merged.match('m', id({ z: 'v' })).rule.quota.strategy, 'deny_all');
  });
});

describe('quota rules: matching', () => {
  const rules = load(`domain: edge
quota_buckets:
  - bucket_id: { name: api, tenant: "*" }
    quota: { unit: second, requests_per_unit: 1 }
  - bucket_id: { name: "*", tenant: acme }
    quota: { unit: second, requests_per_unit: 2 }
  - bucket_id: { name: api, tenant: "team-*" }
    quota: { unit: second, requests_per_unit: 3 }
  - bucket_id: { name: api, tenant: acme }
    quota: { unit: second, requests_per_unit: 4 }
  - bucket_id: { name: "*", tenant: "*" }
    quota: { unit: second, requests_per_unit: 5 }
  - bucket_id: { name: "*" }
    quota: { unit: second, requests_per_unit: 6 }
`);
  const rpu = (o: Record<string, string>): number => rules.match('edge', id(o)).rule.quota.requestsPerUnit;

  test('all exact beats everything, whatever the order of the keys', () => {
    assert.equal(rpu({ name: 'api', tenant: 'acme' }), 4);
    assert.equal(rpu({ tenant: 'acme', name: 'api' }), 4);
  });
  test('one exact and a partial pattern beat one exact and `*`', () => {
    assert.equal(rpu({ name: 'api', tenant: 'team-red' }), 3);
  });
  test('equally specific entries: the one written first wins', () => {
    // {name: api, tenant: *} (entry 0) and {name: *, tenant: acme} (entry 1) both have one exact value.
    assert.equal(rpu({ name: 'web', tenant: 'acme' }), 2);
    assert.equal(rpu({ name: 'api', tenant: 'other' }), 1);
  });
  test('`*` everywhere catches the rest of its key set; key sets must be equal', () => {
    assert.equal(rpu({ name: 'web', tenant: 'other' }), 5);
    assert.equal(rpu({ name: 'web' }), 6);
    assert.equal(rules.match('edge', id({ name: 'api', tenant: 'acme', region: 'eu' })).rule.isDefault, true);
    assert.equal(rules.match('edge', id({ tenant: 'acme' })).rule.isDefault, true);
  });

  test('a plugged-in value matcher (the shape the CIDR trie will use) takes part as a partial pattern', () => {
    const prefix: ValueMatcherExtension = (arg) => {
      if (arg.kind !== 'scalar') throw new Error('needs a string');
      const p = arg.text;
      return (v) => v.startsWith(p);
    };
    const extensions = new Map([['prefix', prefix]]);
    const r = load(
      `domain: edge
quota_buckets:
  - bucket_id: { ip: "*" }
    quota: { unit: second, requests_per_unit: 1 }
  - bucket_id: { ip: { prefix: "10." } }
    quota: { unit: second, requests_per_unit: 2 }
`,
      { extensions },
    );
    assert.equal(r.match('edge', id({ ip: '10.1.2.3' })).rule.quota.requestsPerUnit, 2);
    assert.equal(r.match('edge', id({ ip: '192.168.0.1' })).rule.quota.requestsPerUnit, 1);
    assert.equal(r.match('edge', id({ ip: '10.1.2.3' })).rule.name, 'ip=prefix:10.');
    assert.equal(
      oneError('domain: edge\nquota_buckets:\n  - bucket_id: { ip: { prefix: [1] } }\n    quota: { strategy: allow_all }\n', { extensions }),
      'edge.yaml: quota_buckets[0].bucket_id.ip: prefix: needs a string (line 3)',
    );
    assert.equal(
      oneError('domain: edge\nquota_buckets:\n  - bucket_id: { ip: { cidr: 10.0.0.0/8 } }\n    quota: { strategy: allow_all }\n', { extensions }),
      "edge.yaml: quota_buckets[0].bucket_id.ip: unknown value matcher 'cidr' (installed: prefix) (line 3)",
    );
  });
});

describe('quota rules: errors name the source, the entry and the line', () => {
  const cases: [string, string, string][] = [
    ['unknown strategy', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { strategy: leaky }\n', "quota_buckets[0].quota: unknown strategy 'leaky' (expected one of token_bucket, requests_per_time_unit, allow_all, deny_all) (line 4)"],
    ['unknown key in an entry', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { strategy: allow_all }\n    limit: 3\n', "quota_buckets[0]: unknown key 'limit' (expected bucket_id, quota, name) (line 5)"],
    ['unknown key in a quota', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { unit: second, requests_per_unit: 1, per: 2 }\n', "quota_buckets[0].quota: unknown key 'per' (expected unit, requests_per_unit, unit_multiplier, strategy, burst, on_store_failure) (line 4)"],
    ['missing bucket_id', 'quota_buckets:\n  - quota: { strategy: allow_all }\n', 'quota_buckets[0]: missing bucket_id (line 3)'],
    ['empty bucket_id', 'quota_buckets:\n  - bucket_id: {}\n    quota: { strategy: allow_all }\n', 'quota_buckets[0]: bucket_id must be a map of at least one key to a value (line 3)'],
    ['empty value', 'quota_buckets:\n  - bucket_id: { a: "" }\n    quota: { strategy: allow_all }\n', 'quota_buckets[0].bucket_id.a: a value must not be empty (use "*" for any value) (line 3)'],
    ['a list as a value', 'quota_buckets:\n  - bucket_id: { a: [1, 2] }\n    quota: { strategy: allow_all }\n', 'quota_buckets[0].bucket_id.a: a value is a string, "*", or a one-key map naming a matcher such as { cidr: 10.0.0.0/8 } (line 3)'],
    ['missing quota', 'quota_buckets:\n  - bucket_id: { a: b }\n', 'quota_buckets[0]: missing quota (line 3)'],
    ['missing unit', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { requests_per_unit: 3 }\n', 'quota_buckets[0].quota: strategy token_bucket needs a unit (line 4)'],
    ['bad unit', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { unit: fortnight, requests_per_unit: 3 }\n', "quota_buckets[0].quota: invalid quota unit 'fortnight' (line 4)"],
    ['token bucket without rate', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { unit: second, requests_per_unit: 0 }\n', "quota_buckets[0].quota: requests_per_unit must be an integer from 1 to 4294967295, got '0' (line 4)"],
    ['negative multiplier', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { unit: second, requests_per_unit: 1, unit_multiplier: -2 }\n', "quota_buckets[0].quota: unit_multiplier must be an integer from 1 to 4294967295, got '-2' (line 4)"],
    ['period over ten years', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { unit: year, requests_per_unit: 1, unit_multiplier: 11 }\n', 'quota_buckets[0].quota: a period of 11 × year is longer than ten years (line 4)'],
    ['burst beside requests_per_time_unit', 'quota_buckets:\n  - bucket_id: { a: b }\n    quota: { strategy: requests_per_time_unit, unit: second, requests_per_unit: 1, burst: 5 }\n', 'quota_buckets[0].quota: burst is only valid with strategy token_bucket, not requests_per_time_unit (line 4)'],
    ['unit beside allow_all', 'default_quota: { strategy: allow_all, unit: second }\n', 'default_quota: unit has no meaning with strategy allow_all (line 2)'],
    ['bad on_store_failure', 'default_quota: { strategy: deny_all, on_store_failure: panic }\n', "default_quota: unknown on_store_failure 'panic' (expected one of keep_last, allow_all, deny_all) (line 2)"],
    ['quota_buckets not a list', 'quota_buckets: { a: b }\n', 'quota_buckets must be a list of entries (line 2)'],
    ['an entry that is not a map', 'quota_buckets:\n  - api\n', 'quota_buckets[0]: an entry must be a map with bucket_id and quota (line 3)'],
    ['repeated pattern (key order does not matter)', 'quota_buckets:\n  - bucket_id: { a: "1", b: "*" }\n    quota: { strategy: allow_all }\n  - bucket_id: { b: "*", a: "1" }\n    quota: { strategy: deny_all }\n', 'quota_buckets[1]: bucket_id {a=1,b=*} repeats quota_buckets[0] of line 3 (line 5)'],
  ];
  for (const [what, body, expected] of cases) {
    test(what, () => {
      assert.equal(oneError(`domain: edge\n${body}`), `edge.yaml: ${expected}`);
    });
  }

  test('no domain, a YAML syntax error, a second document', () => {
    assert.equal(oneError('default_quota: { strategy: deny_all }\n'), 'edge.yaml: quota_buckets: the document needs a domain');
    assert.match(oneError('domain: edge\nquota_buckets: [\n'), /^edge\.yaml: error loading config file: yaml: line \d+: /);
    assert.equal(oneError('domain: a\n---\ndomain: b\ndefault_quota: { strategy: dance }\n'), "edge.yaml: default_quota: unknown strategy 'dance' (expected one of token_bucket, requests_per_time_unit, allow_all, deny_all) (line 4) (document 2)");
  });

  test('the same domain twice: refused without merge; with merge, a second default_quota and a repeated pattern are refused', () => {
    const a = src('a.yaml', 'domain: d\ndefault_quota: { strategy: deny_all }\n');
    const b = src('b.yaml', 'domain: d\ndefault_quota: { strategy: allow_all }\n');
    assert.equal(loadError([a, b]), "b.yaml: duplicate quota rules for domain 'd' (first in a.yaml)");
    assert.equal(loadError([a, b], { mergeDomainConfig: true }), "b.yaml: second default_quota for domain 'd' (first in a.yaml) (line 2)");
    const e1 = src('e1.yaml', 'domain: d\nquota_buckets:\n  - bucket_id: { k: v }\n    quota: { strategy: deny_all }\n');
    const e2 = src('e2.yaml', 'domain: d\nquota_buckets:\n  - bucket_id: { k: v }\n    quota: { strategy: allow_all }\n');
    assert.equal(loadError([e1, e2], { mergeDomainConfig: true }), 'e2.yaml: quota_buckets[0]: bucket_id repeats an entry of e1.yaml line 3 (line 3)');
  });
});
