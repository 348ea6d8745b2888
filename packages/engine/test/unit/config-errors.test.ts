// Rule-file validation: every error of upstream's test/config/config_test.go by its exact text (upstream's text is
// the prefix; where upstream does not say which rule, a location suffix follows).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConfigError, loadRuleSet, type RuleSource } from '@rls/engine';

const FIXTURES = new URL('../fixtures/config/', import.meta.url);
const fixture = (name: string): RuleSource => ({ name, content: readFileSync(new URL(name, FIXTURES), 'utf8') });
const inline = (name: string, content: string): RuleSource => ({ name, content });

function loadError(sources: RuleSource[], merge = false): string {
  try {
    loadRuleSet(sources, { mergeDomainConfig: merge });
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.equal(err.code, 'config_invalid');
    return err.message;
  }
  assert.fail('expected the load to fail');
}

describe('config errors (upstream test/config fixtures)', () => {
  test('1. empty domain', () => {
    assert.equal(loadError([fixture('empty_domain.yaml')]), 'empty_domain.yaml: config file cannot have empty domain');
  });
  test('empty file and comments-only file have an empty domain', () => {
    assert.equal(loadError([inline('e.yaml', '')]), 'e.yaml: config file cannot have empty domain');
    assert.equal(loadError([inline('c.yaml', '# nothing\n')]), 'c.yaml: config file cannot have empty domain');
  });
  test('2. duplicate domain without merge is blamed on the second source', () => {
    assert.equal(
      loadError([fixture('basic_config.yaml'), fixture('duplicate_domain.yaml')]),
      "duplicate_domain.yaml: duplicate domain 'test-domain' in config file",
    );
  });
  test('3. empty key', () => {
    assert.equal(
      loadError([fixture('empty_key.yaml')]),
      "empty_key.yaml: descriptor has empty key (descriptor #1 under 'test-domain', line 3)",
    );
  });
  test('4. duplicate composite key', () => {
    assert.equal(loadError([fixture('duplicate_key.yaml')]), "duplicate_key.yaml: duplicate descriptor composite key 'test-domain.key1_value1'");
  });
  test('5. merge is top-level only: the same top-level key twice is still an error', () => {
    assert.equal(
      loadError([fixture('merge_domain_key1.yaml'), fixture('merge_domain_key1.yaml')], true),
      "merge_domain_key1.yaml: duplicate descriptor composite key 'test-domain.key1_value1'",
    );
  });
  test('6. invalid unit, as written', () => {
    assert.equal(
      loadError([fixture('bad_limit_unit.yaml')]),
      "bad_limit_unit.yaml: invalid rate limit unit 'foo' (descriptor 'test-domain.key1_value1', line 3)",
    );
    const missing = 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1}\n';
    assert.equal(loadError([inline('m.yaml', missing)]), "m.yaml: invalid rate limit unit '' (descriptor 'd.k', line 3)");
    const unknown = 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: Unknown, requests_per_unit: 1}\n';
    assert.equal(loadError([inline('u.yaml', unknown)]), "u.yaml: invalid rate limit unit 'Unknown' (descriptor 'd.k', line 3)");
  });
  test('7. replaces its own name', () => {
    assert.equal(
      loadError([fixture('replaces_self.yaml')]),
      "replaces_self.yaml: replaces should not contain name of same descriptor (descriptor 'test-domain.key1_value1.subkey1', line 6)",
    );
  });
  test('8. empty replaces entry', () => {
    assert.equal(
      loadError([fixture('replaces_empty.yaml')]),
      "replaces_empty.yaml: should not have an empty replaces entry (descriptor 'test-domain.key1_value1.subkey1', line 6)",
    );
  });
  test('9. YAML syntax error', () => {
    const msg = loadError([fixture('bad_yaml.yaml')]);
    assert.match(msg, /^bad_yaml\.yaml: error loading config file: yaml: line \d+: /);
  });
  test('10/11. unknown keys', () => {
    assert.equal(loadError([fixture('misspelled_key.yaml')]), "misspelled_key.yaml: config error, unknown key 'ratelimit' (line 4)");
    assert.equal(loadError([fixture('misspelled_key2.yaml')]), "misspelled_key2.yaml: config error, unknown key 'requestsperunit' (line 6)");
  });
  test('the allow-list is flat: known keys pass anywhere, metadata contents are free', () => {
    const src = [
      'domain: d',
      'unit: ignored',
      'descriptors:',
      '  - key: k',
      '    quota_mode: true',
      '    value_to_metric: true',
      '    metadata: {anything: {goes: 1.5}}',
      '    rate_limit: {unit: second, requests_per_unit: 1, domain: x}',
    ].join('\n');
    assert.deepEqual(loadRuleSet([inline('ok.yaml', src)], { mergeDomainConfig: false }).domains(), ['d']);
  });
  test('12. non-string key', () => {
    assert.equal(loadError([fixture('non_string_key.yaml')]), 'non_string_key.yaml: config error, key is not of type string: 0.25 (line 2)');
  });
  test('13. list of non-maps', () => {
    assert.equal(
      loadError([fixture('non_map_list.yaml')]),
      'non_map_list.yaml: config error, yaml file contains list of type other than map: a (line 2)',
    );
  });
  test('14. unlimited with a unit', () => {
    assert.equal(
      loadError([fixture('unlimited_with_unit.yaml')]),
      "unlimited_with_unit.yaml: should not specify rate limit unit when unlimited (descriptor 'test-domain.foo', line 3)",
    );
  });
  test('15. share_threshold without a wildcard', () => {
    assert.equal(
      loadError([fixture('share_threshold_no_wildcard.yaml')]),
      "share_threshold_no_wildcard.yaml: share_threshold can only be used with wildcard values (containing '*'), but found key 'k_v'",
    );
  });
  test('unsupported leaf types: float and timestamp', () => {
    const float = 'domain: d\ndescriptors:\n  - key: k\n    value: 1.5\n';
    assert.equal(loadError([inline('f.yaml', float)]), "f.yaml: error checking config (unsupported float value '1.5' at line 4)");
    const ts = 'domain: d\ndescriptors:\n  - key: k\n    value: 2001-12-14\n';
    assert.equal(loadError([inline('t.yaml', ts)]), "t.yaml: error checking config (unsupported timestamp value '2001-12-14' at line 4)");
  });
  test('requests_per_unit must fit uint32', () => {
    for (const bad of ['-1', '4294967296', '"5"', 'true']) {
      const src = `domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: ${bad}\n`;
      const msg = loadError([inline('r.yaml', src)]);
      assert.ok(msg.startsWith('r.yaml: error loading config file: yaml: unmarshal errors: line 6: cannot unmarshal'), msg);
      assert.ok(msg.endsWith('into uint32 (requests_per_unit must be an integer from 0 to 4294967295)'), msg);
    }
    const max = 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 4294967295}\n';
    const rs = loadRuleSet([inline('max.yaml', max)], { mergeDomainConfig: false });
    assert.equal(rs.getLimit('d', { entries: [{ key: 'k', value: 'x' }] })?.limit.requestsPerUnit, 4294967295);
  });
  test('scalars fit string fields as written (yaml.v2 leniency)', () => {
    const src = 'domain: d\ndescriptors:\n  - key: k\n    value: 123\n    rate_limit: {unit: MINUTE, requests_per_unit: 3}\n';
    const rs = loadRuleSet([inline('n.yaml', src)], { mergeDomainConfig: false });
    assert.equal(rs.getLimit('d', { entries: [{ key: 'k', value: '123' }] })?.limit.requestsPerUnit, 3);
  });
  test('metadata that is not a map', () => {
    const src = 'domain: d\ndescriptors:\n  - key: k\n    metadata: 5\n';
    assert.equal(loadError([inline('md.yaml', src)]), 'md.yaml: error parsing metadata: metadata must be a map, got !!int `5` (line 4)');
  });
  test('units are case-insensitive and include week, month and year', () => {
    const src = ['second', 'Minute', 'HOUR', 'day', 'week', 'month', 'year']
      .map((u, i) => `  - key: k${i}\n    rate_limit: {unit: ${u}, requests_per_unit: ${i}}`)
      .join('\n');
    const rs = loadRuleSet([inline('u.yaml', `domain: d\ndescriptors:\n${src}\n`)], { mergeDomainConfig: false });
    const units = [0, 1, 2, 3, 4, 5, 6].map((i) => rs.getLimit('d', { entries: [{ key: `k${i}`, value: 'v' }] })?.limit.unit);
    assert.deepEqual(units, [1, 2, 3, 4, 7, 5, 6]);
  });
});

describe('multi-document files (upstream reads only the first document)', () => {
  test('every document is a domain config; empty documents are skipped', () => {
    const rs = loadRuleSet([fixture('multi_document.yaml')], { mergeDomainConfig: false });
    assert.deepEqual(rs.domains(), ['first', 'second']);
    assert.equal(rs.getLimit('second', { entries: [{ key: 'b', value: 'x' }] })?.limit.windowSeconds, 604800);
  });
  test('two documents with the same domain follow the merge rule', () => {
    const src = 'domain: a\ndescriptors: [{key: x}]\n---\ndomain: a\ndescriptors: [{key: y}]\n';
    assert.equal(loadError([inline('twice.yaml', src)]), "twice.yaml: duplicate domain 'a' in config file");
    assert.deepEqual(loadRuleSet([inline('twice.yaml', src)], { mergeDomainConfig: true }).domains(), ['a']);
  });
  test('errors name the document', () => {
    const src = 'domain: a\n---\ndescriptors: []\n';
    assert.equal(loadError([inline('two.yaml', src)]), 'two.yaml: config file cannot have empty domain (document 2)');
  });
});
