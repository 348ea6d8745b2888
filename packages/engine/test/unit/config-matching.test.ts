// Descriptor matching, stats keys, share-threshold patterns, overrides and the /rlconfig dump
// (upstream's GetLimit, share_threshold, stat names and /rlconfig dump; cases of upstream's test/config/config_test.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { StatsStore, Unit, compileWildcard, loadRuleSet, sanitizeStatsKey, type DescriptorEntry, type LimitOverride, type RuleSet, type RuleSource } from '@rls/engine';

const FIXTURES = new URL('../fixtures/config/', import.meta.url);
const fixture = (name: string): RuleSource => ({ name, content: readFileSync(new URL(name, FIXTURES), 'utf8') });
const load = (sources: RuleSource[], stats = new StatsStore(), merge = false): RuleSet =>
  loadRuleSet(sources, { mergeDomainConfig: merge, stats });
const e = (...pairs: [string, string][]): DescriptorEntry[] => pairs.map(([key, value]) => ({ key, value }));
const P = 'ratelimit.service.rate_limit.';

describe('matching basic_config.yaml', () => {
  const stats = new StatsStore();
  const rs = load([fixture('basic_config.yaml')], stats);
  const get = (entries: DescriptorEntry[], domain = 'test-domain') => rs.getLimit(domain, { entries });

  test('16/17. unknown domain counts domain_not_found per descriptor; known domain does not', () => {
    assert.equal(get([], 'foo_domain'), undefined);
    assert.equal(stats.counterValue(P + 'foo_domain.domain_not_found'), 1);
    assert.equal(get([]), undefined);
    assert.equal(stats.counterValue(P + 'test-domain.domain_not_found'), 0);
  });
  test('18-21. no limit: unknown value, node without limit, depth mismatch, no default below', () => {
    assert.equal(get(e(['key1', 'something'])), undefined);
    assert.equal(get(e(['key1', 'value1'])), undefined);
    assert.equal(get(e(['key2', 'value2'], ['subkey', 'subvalue'])), undefined);
    assert.equal(get(e(['key5', 'value5'], ['subkey5', 'subvalue'])), undefined);
  });
  test('22-28. limits and stats keys', () => {
    const cases: [DescriptorEntry[], number, number, string, string][] = [
      [e(['key1', 'value1'], ['subkey1', 'something']), 5, Unit.SECOND, 'test-domain.key1_value1.subkey1', ''],
      [e(['key1', 'value1'], ['subkey1', 'subvalue1']), 10, Unit.SECOND, 'test-domain.key1_value1.subkey1_subvalue1', ''],
      [e(['key2', 'something']), 20, Unit.MINUTE, 'test-domain.key2', ''],
      [e(['key2', 'value2']), 30, Unit.MINUTE, 'test-domain.key2_value2', ''],
      [e(['key3', 'foo']), 1, Unit.HOUR, 'test-domain.key3', ''],
      [e(['key4', 'foo']), 1, Unit.DAY, 'test-domain.key4', 'key4_rate_limit'],
      [e(['key5', 'value5'], ['subkey5', 'subvalue5']), 25, Unit.DAY, 'test-domain.key5_value5.subkey5_subvalue5', ''],
    ];
    for (const [entries, rpu, unit, statsKey, name] of cases) {
      const m = get(entries);
      assert.ok(m, statsKey);
      assert.equal(m.limit.requestsPerUnit, rpu);
      assert.equal(m.limit.unit, unit);
      assert.equal(m.stats.key, statsKey);
      assert.equal(m.limit.currentLimit.name, name);
      assert.equal(m.stats.totalHits.name, P + statsKey + '.total_hits');
    }
  });
  test('26. a value rule without limit whitelists despite the value-less default', () => {
    assert.equal(get(e(['key2', 'value3'])), undefined);
  });
  test('29. unlimited', () => {
    const m = get(e(['key6', 'foo']));
    assert.equal(m?.limit.unlimited, true);
  });
  test('30. detailed_metric puts the runtime value in the stats key', () => {
    assert.equal(get(e(['key7', 'unspecified_value']))?.stats.key, 'test-domain.key7_unspecified_value');
    assert.equal(get(e(['key7', 'another_value']))?.stats.key, 'test-domain.key7_another_value');
    assert.equal(get(e(['key7', 'another_value']))?.limit.requestsPerUnit, 70);
  });
  test('static matches are precomputed objects', () => {
    assert.equal(get(e(['key3', 'a'])), get(e(['key3', 'b'])));
  });
  test('no backtracking after an exact match', () => {
    const src = 'domain: D\ndescriptors:\n  - key: k\n    descriptors: [{key: c, rate_limit: {unit: second, requests_per_unit: 5}}]\n  - key: k\n    value: v\n    descriptors: [{key: x, rate_limit: {unit: second, requests_per_unit: 1}}]\n';
    const r = load([{ name: 'b.yaml', content: src }]);
    assert.equal(r.getLimit('D', { entries: e(['k', 'v'], ['c', 'z']) }), undefined);
    assert.equal(r.getLimit('D', { entries: e(['k', 'w'], ['c', 'z']) })?.limit.requestsPerUnit, 5);
  });
});
  test('`key_value` is probed as upstream joins it, whichever `_` splits key and value', () => {
    // Upstream looks up `key + "_" + value` among the composites, so an `_` inside a key or a value
    // may land on another rule's composite; RuleNode.probeKeys must keep every such probe.
    const src =
      'domain: D\ndescriptors:\n' +
      '  - {key: a_b, value: c, rate_limit: {unit: second, requests_per_unit: 1}}\n' +
      '  - {key: x_y, rate_limit: {unit: second, requests_per_unit: 2}}\n' +
      '  - {key: p, value: q_r, rate_limit: {unit: second, requests_per_unit: 3}}\n' +
      '  - {key: p, rate_limit: {unit: second, requests_per_unit: 4}}\n';
    const r = load([{ name: 'u.yaml', content: src }]);
    const rpu = (...pairs: [string, string][]) => r.getLimit('D', { entries: e(...pairs) })?.limit.requestsPerUnit;
    assert.equal(rpu(['a_b', 'c']), 1);
    assert.equal(rpu(['a', 'b_c']), 1);
    assert.equal(rpu(['x', 'y']), 2);
    assert.equal(rpu(['x_y', 'anything']), 2);
    assert.equal(rpu(['p', 'q_r']), 3);
    assert.equal(rpu(['p_q', 'r']), 3);
    assert.equal(rpu(['p', 'other']), 4);
    assert.equal(rpu(['a', 'other']), undefined);
  });

describe('merge and overrides', () => {
  test('31. merged domains answer from both files', () => {
    const rs = load([fixture('merge_domain_key1.yaml'), fixture('merge_domain_key2.yaml')], new StatsStore(), true);
    assert.equal(rs.getLimit('test-domain', { entries: e(['key1', 'value1']) })?.limit.requestsPerUnit, 10);
    assert.equal(rs.getLimit('test-domain', { entries: e(['key2', 'value2']) })?.limit.requestsPerUnit, 20);
  });
  test('32/33. overrides: ignored for unknown domains; stats key has every value; stats shared', () => {
    const stats = new StatsStore();
    const rs = load([fixture('basic_config.yaml')], stats);
    const limit: LimitOverride = { requestsPerUnit: 10, unit: Unit.DAY };
    assert.equal(rs.getLimit('foo_domain', { entries: e(['key1', 'value1']), limit }), undefined);
    assert.equal(stats.counterValue(P + 'foo_domain.domain_not_found'), 1);
    const entries = e(['key1', 'value1'], ['subkey1', 'something']);
    const a = rs.getLimit('test-domain', { entries, limit });
    assert.ok(a);
    assert.equal(a.limit.requestsPerUnit, 10);
    assert.equal(a.limit.unit, Unit.DAY);
    assert.equal(a.limit.name, '');
    assert.equal(a.limit.isOverride, true);
    assert.equal(a.stats.key, 'test-domain.key1_value1.subkey1_something');
    const b = rs.getLimit('test-domain', { entries, limit: { requestsPerUnit: 42, unit: Unit.HOUR } });
    assert.equal(b?.limit.requestsPerUnit, 42);
    assert.equal(b?.stats.totalHits, a.stats.totalHits);
    const c = rs.getLimit('test-domain', { entries: e(['key1', 'value1'], ['subkey1', 'something_else']), limit });
    assert.equal(c?.stats.key, 'test-domain.key1_value1.subkey1_something_else');
    // An override needs no matching rule, and an empty value contributes only the key.
    assert.equal(rs.getLimit('test-domain', { entries: e(['nothing', ''], ['x', 'y']), limit })?.stats.key, 'test-domain.nothing.x_y');
  });
});

describe('shadow, wildcard', () => {
  test('34. shadow_mode per rule', () => {
    const rs = load([fixture('shadowmode_config.yaml')]);
    const shadow = (entries: DescriptorEntry[]) => rs.getLimit('test-domain', { entries })?.limit.shadowMode;
    assert.equal(shadow(e(['key1', 'value1'], ['subkey1', 'something'])), false);
    assert.equal(shadow(e(['key1', 'value1'], ['subkey1', 'subvalue1'])), true);
    assert.equal(shadow(e(['key2', 'something'])), true);
    assert.equal(shadow(e(['key2', 'value2'])), false);
  });
  test('35-38. wildcards', () => {
    const rs = load([fixture('wildcard.yaml')]);
    const key = (entries: DescriptorEntry[]) => rs.getLimit('test-domain', { entries })?.stats.key;
    assert.equal(rs.getLimit('test-domain', { entries: e(['noVal', 'foo1']) })?.limit, rs.getLimit('test-domain', { entries: e(['noVal', 'foo2']) })?.limit);
    assert.equal(key(e(['noVal', 'foo1'])), 'test-domain.noVal');
    assert.equal(key(e(['wild', 'foo1'])), 'test-domain.wild_foo*');
    assert.equal(key(e(['wild', 'foo2'])), 'test-domain.wild_foo*');
    assert.equal(key(e(['wild', 'bar'])), undefined);
    assert.equal(key(e(['noWild', 'foo1'])), undefined);
    assert.equal(key(e(['nestedWild', 'val1'], ['wild', 'goo2'])), 'test-domain.nestedWild_val1.wild_goo*');
    for (const v of ['barab', 'bar123b', 'barb']) assert.equal(key(e(['midWild', v])), 'test-domain.midWild_bar*b', v);
    for (const v of ['bara', 'xbarb']) assert.equal(key(e(['midWild', v])), undefined, v);
    for (const v of ['foo123bar456baz', 'foobarbaz']) assert.equal(key(e(['multiWild', v])), 'test-domain.multiWild_foo*bar*baz', v);
    for (const v of ['foo123baz', 'bar456baz']) assert.equal(key(e(['multiWild', v])), undefined, v);
  });
  test('a trailing * matches an empty value', () => {
    assert.equal(compileWildcard('wild_foo*')('wild_foo'), true);
    assert.equal(compileWildcard('k_*')('k_'), true);
    assert.equal(compileWildcard('a*b*b')('ab'), false);
    assert.equal(compileWildcard('a*b*b')('abb'), true);
  });
  test('first wildcard in declaration order wins', () => {
    const src = 'domain: d\ndescriptors:\n  - {key: k, value: "a*", rate_limit: {unit: second, requests_per_unit: 1}}\n  - {key: k, value: "ab*", rate_limit: {unit: second, requests_per_unit: 2}}\n';
    const rs = load([{ name: 'w.yaml', content: src }]);
    assert.equal(rs.getLimit('d', { entries: e(['k', 'abc']) })?.limit.requestsPerUnit, 1);
  });
});

describe('detailed_metric and value_to_metric', () => {
  const nested = (key1Detailed: boolean, key2Detailed: boolean) =>
    load([
      {
        name: 'n.yaml',
        content: `domain: nested\ndescriptors:\n  - key: key-1\n    detailed_metric: ${key1Detailed}\n    rate_limit: {unit: minute, requests_per_unit: 100}\n    descriptors:\n      - key: key-2\n        detailed_metric: ${key2Detailed}\n        rate_limit: {unit: minute, requests_per_unit: 5}\n  - key: key_1\n    detailed_metric: true\n    rate_limit: {unit: minute, requests_per_unit: 1}\n  - key: key_2\n    detailed_metric: true\n    rate_limit: {unit: minute, requests_per_unit: 1}\n    descriptors:\n      - key: key_3\n        detailed_metric: true\n        rate_limit: {unit: minute, requests_per_unit: 1}\n`,
      },
    ]);
  test('detailed table', () => {
    const key = (rs: RuleSet, entries: DescriptorEntry[]) => rs.getLimit('nested', { entries })?.stats.key;
    assert.equal(key(nested(true, false), e(['key-1', 'value-1'])), 'nested.key-1_value-1');
    assert.equal(key(nested(false, false), e(['key-1', 'value-1'])), 'nested.key-1');
    assert.equal(key(nested(false, true), e(['key-1', 'value-1'], ['key-2', 'value-2'])), 'nested.key-1_value-1.key-2_value-2');
    assert.equal(key(nested(false, false), e(['key-1', 'value-1'], ['key-2', 'value-2'])), 'nested.key-1.key-2');
    assert.equal(key(nested(false, false), e(['key_1', 'value-for-key-1'])), 'nested.key_1_value-for-key-1');
    assert.equal(key(nested(false, false), e(['key_2', 'key-2-value'])), 'nested.key_2_key-2-value');
    assert.equal(
      key(nested(false, false), e(['key_2', 'key-2-value'], ['key_3', 'requested-key3-value'])),
      'nested.key_2_key-2-value.key_3_requested-key3-value',
    );
  });
  test('value_to_metric table', () => {
    const route = (leafFlag: string) =>
      load([
        {
          name: 'v.yaml',
          content: `domain: domain\ndescriptors:\n  - key: route\n    value_to_metric: true\n    descriptors:\n      - key: http_method\n        value_to_metric: true\n        descriptors:\n          - key: subject_id\n            ${leafFlag}\n            rate_limit: {unit: minute, requests_per_unit: 60}\n  - key: user\n    value_to_metric: true\n    descriptors:\n      - key: action\n        value: read*\n        value_to_metric: true\n        descriptors:\n          - key: resource\n            rate_limit: {unit: minute, requests_per_unit: 100}\n`,
        },
      ]);
    const plain = route('shadow_mode: false');
    const key = (rs: RuleSet, entries: DescriptorEntry[]) => rs.getLimit('domain', { entries })?.stats.key;
    assert.equal(key(plain, e(['route', 'draw'], ['http_method', 'GET'], ['subject_id', '123'])), 'domain.route_draw.http_method_GET.subject_id');
    assert.equal(
      key(route('detailed_metric: true'), e(['route', 'draw'], ['http_method', 'GET'], ['subject_id', '123'])),
      'domain.route_draw.http_method_GET.subject_id_123',
    );
    assert.equal(key(plain, e(['route', ''], ['http_method', 'GET'], ['subject_id', '123'])), 'domain.route.http_method_GET.subject_id');
    assert.equal(key(plain, e(['route', 'draw'], ['http_method', ''], ['subject_id', '123'])), 'domain.route_draw.http_method.subject_id');
    assert.equal(key(plain, e(['route', ''], ['http_method', ''], ['subject_id', '123'])), 'domain.route.http_method.subject_id');
    assert.equal(key(plain, e(['user', 'alice'], ['action', 'readfile'], ['resource', 'r'])), 'domain.user_alice.action_readfile.resource');

    const d = load([
      {
        name: 'd.yaml',
        content:
          'domain: d\ndescriptors:\n  - key: k1\n    descriptors:\n      - key: k2\n        value_to_metric: true\n        descriptors:\n          - key: k3\n            rate_limit: {unit: second, requests_per_unit: 1}\n  - key: j1\n    value_to_metric: true\n    descriptors:\n      - key: j2\n        rate_limit: {unit: second, requests_per_unit: 1}\n  - key: m1\n    descriptors:\n      - key: m2\n        rate_limit: {unit: second, requests_per_unit: 1}\n',
      },
    ]);
    assert.equal(d.getLimit('d', { entries: e(['k1', 'X'], ['k2', 'Y'], ['k3', 'Z']) })?.stats.key, 'd.k1.k2_Y.k3');
    assert.equal(d.getLimit('d', { entries: e(['j1', 'A'], ['j2', 'B']) })?.stats.key, 'd.j1_A.j2');
    assert.equal(d.getLimit('d', { entries: e(['m1', 'A'], ['m2', 'B']) })?.stats.key, 'd.m1.m2');

    const wild = (flags: string, pattern = 'foo*') =>
      load([{ name: 'w.yaml', content: `domain: test-domain\ndescriptors:\n  - key: wild\n    value: "${pattern}"\n    ${flags}\n    rate_limit: {unit: minute, requests_per_unit: 20}\n` }]);
    const wk = (rs: RuleSet, v: string) => rs.getLimit('test-domain', { entries: e(['wild', v]) })?.stats.key;
    assert.equal(wk(wild('shadow_mode: false'), 'foo1'), 'test-domain.wild_foo*');
    assert.equal(wk(wild('value_to_metric: true'), 'foo1'), 'test-domain.wild_foo1');
    assert.equal(wk(wild('share_threshold: true'), 'foo1'), 'test-domain.wild_foo*');
    assert.equal(wk(wild('share_threshold: true\n    value_to_metric: true'), 'foo1'), 'test-domain.wild_foo*');
    assert.equal(wk(wild('value_to_metric: true', 'foo*bar*'), 'foo123bar456'), 'test-domain.wild_foo123bar456');

    const configured = load([
      {
        name: 'c.yaml',
        content:
          'domain: test-domain\ndescriptors:\n  - key: route\n    value_to_metric: true\n    descriptors:\n      - key: http_method\n        value: GET\n        value_to_metric: true\n        descriptors: [{key: subject_id, rate_limit: {unit: minute, requests_per_unit: 60}}]\n      - key: http_method\n        value: POST\n        value_to_metric: true\n        descriptors: [{key: subject_id, rate_limit: {unit: minute, requests_per_unit: 30}}]\n',
      },
    ]);
    const g = configured.getLimit('test-domain', { entries: e(['route', 'api'], ['http_method', 'GET'], ['subject_id', '1']) });
    assert.equal(g?.stats.key, 'test-domain.route_api.http_method_GET.subject_id');
    assert.equal(g?.limit.requestsPerUnit, 60);
    const p = configured.getLimit('test-domain', { entries: e(['route', 'api'], ['http_method', 'POST'], ['subject_id', '1']) });
    assert.equal(p?.stats.key, 'test-domain.route_api.http_method_POST.subject_id');
    assert.equal(p?.limit.requestsPerUnit, 30);
  });
});

describe('share_threshold', () => {
  const rs = load([fixture('share_threshold.yaml')]);
  const get = (entries: DescriptorEntry[]) => rs.getLimit('test-domain', { entries });
  test('patterns per entry index and stats keys', () => {
    for (const v of ['files/a.pdf', 'files/b.csv', 'files/c.txt']) {
      const m = get(e(['files', v]));
      assert.deepEqual(m?.sharePatterns, ['files/*']);
      assert.equal(m?.stats.key, 'test-domain.files_files/*');
      assert.equal(m?.limit.requestsPerUnit, 100);
    }
    const n = get(e(['nested', 'parent'], ['files', 'nested/x']));
    assert.deepEqual(n?.sharePatterns, [undefined, 'nested/*']);
    assert.equal(n?.stats.key, 'test-domain.nested_parent.files_nested/*');
    const t = get(e(['files', 'top/file1.txt'], ['files', 'nested/file1.txt']));
    assert.deepEqual(t?.sharePatterns, ['top/*', 'nested/*']);
    assert.equal(t?.stats.key, 'test-domain.files_top/*.files_nested/*');
    assert.equal(t?.limit.requestsPerUnit, 300);
    assert.equal(get(e(['path', 'path/foo'], ['file', 'file/doc1'], ['type', 'pdf']))?.stats.key, 'test-domain.path_path/*.file_file/*.type');
    assert.equal(get(e(['user', 'user/1'], ['resource', 'res/2'], ['action', 'read']))?.stats.key, 'test-domain.user_user/*.resource_res/*.action');
    assert.equal(get(e(['route', 'api/v1'], ['method', 'GET']))?.stats.key, 'test-domain.route_api/*.method');
    assert.equal(get(e(['service', 'svc/user'], ['endpoint', 'get']))?.stats.key, 'test-domain.service_svc/*.endpoint_get');
  });
  test('exact beats a shared wildcard declared first', () => {
    const t1 = get(e(['file', 'test1']));
    assert.equal(t1?.limit.requestsPerUnit, 50);
    assert.equal(t1?.sharePatterns, undefined);
    assert.equal(t1?.stats.key, 'test-domain.file_test1');
    for (const v of ['test2', 'test23', 'test123']) {
      const m = get(e(['file', v]));
      assert.equal(m?.limit.requestsPerUnit, 100);
      assert.deepEqual(m?.sharePatterns, ['test*']);
      assert.equal(m?.stats.key, 'test-domain.file_test*');
    }
  });
  test('mid-string shared wildcards', () => {
    for (const v of ['/api/v1', '/api-beta-v1', '/apiXYZv1']) assert.equal(get(e(['midpath', v]))?.stats.key, 'test-domain.midpath_/api*v1');
    assert.equal(get(e(['midpath', '/api/v2'])), undefined);
    for (const v of ['svcAepBrpc', 'svcXXXepYYYrpc', 'svceprpc']) assert.equal(get(e(['multiroute', v]))?.limit.requestsPerUnit, 50);
    assert.equal(get(e(['multiroute', 'svcABCrpc'])), undefined);
    assert.equal(get(e(['midroute', '/api/x/v2']))?.stats.key, 'test-domain.midroute_/api*v2');
    assert.equal(get(e(['tenant', 't1prod'], ['resource', 'resAv2']))?.stats.key, 'test-domain.tenant_t*prod.resource_res*v2');
    assert.equal(get(e(['tenant', 't99prod'], ['resource', 'resBBBv2']))?.stats.key, 'test-domain.tenant_t*prod.resource_res*v2');
  });
});

describe('metadata, sanitisation, dump', () => {
  test('42. metadata is carried by the limit, nested structs preserved, frozen', () => {
    const rs = load([fixture('metadata.yaml')]);
    const a = rs.getLimit('test-domain', { entries: e(['key1', 'value1'], ['subkey1', 'x']) });
    assert.deepEqual(a?.limit.metadata, { name: 'service_1' });
    const b = rs.getLimit('test-domain', { entries: e(['key2', 'x']) });
    assert.deepEqual(b?.limit.metadata, { service_with_quota: { name: 'service_2' } });
    assert.ok(Object.isFrozen(b?.limit.metadata?.service_with_quota));
  });
  test('stats names are sanitised, logical keys are not', () => {
    assert.equal(sanitizeStatsKey('path_/foo:*:bar'), 'path_/foo_*_bar');
    assert.equal(sanitizeStatsKey('path_/foo|bar|baz'), 'path_/foo_bar_baz');
    assert.equal(sanitizeStatsKey('d.remote_address_10.0.0.1'), 'd.remote_address_10_0_0_1');
    const stats = new StatsStore();
    const rs = load([{ name: 'ip.yaml', content: 'domain: d\ndescriptors:\n  - {key: ip, detailed_metric: true, rate_limit: {unit: second, requests_per_unit: 1}}\n' }], stats);
    const m = rs.getLimit('d', { entries: e(['ip', '192.168.1.20']) });
    assert.equal(m?.stats.key, 'd.ip_192.168.1.20');
    assert.equal(m?.stats.totalHits.name, P + 'd.ip_192_168_1_20.total_hits');
  });
  test('/rlconfig dump is sorted and prints unlimited as UNKNOWN', () => {
    const src = [
      'domain: foo',
      'descriptors:',
      '  - {key: k1, value: v1, rate_limit: {unit: minute, requests_per_unit: 3}}',
      '  - key: j1',
      '    value: v2',
      '    descriptors:',
      '      - {key: j2, value: v2, shadow_mode: true, quota_mode: true, rate_limit: {unit: day, requests_per_unit: 15}}',
      '  - {key: a, rate_limit: {unlimited: true}}',
    ].join('\n');
    const rs = load([{ name: 'z.yaml', content: src }, { name: 'a.yaml', content: 'domain: bar\ndescriptors: [{key: x, rate_limit: {unit: week, requests_per_unit: 1}}]\n' }]);
    assert.equal(
      rs.dump(),
      [
        'bar.x: unit=WEEK requests_per_unit=1, shadow_mode: false, quota_mode: false',
        'foo.a: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false',
        'foo.j1_v2.j2_v2: unit=DAY requests_per_unit=15, shadow_mode: true, quota_mode: true',
        'foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false',
        '',
      ].join('\n'),
    );
    assert.deepEqual(rs.domains(), ['bar', 'foo']);
    const foo = rs.summary().find((s) => s.domain === 'foo');
    assert.deepEqual(
      foo?.descriptors.map((d) => [d.key, d.limit]),
      [
        ['foo.a', 'unlimited'],
        ['foo.j1_v2', undefined],
        ['foo.j1_v2.j2_v2', '15/DAY'],
        ['foo.k1_v1', '3/MINUTE'],
      ],
    );
    assert.equal(loadRuleSet([], { mergeDomainConfig: false }).dump(), '');
  });
});
