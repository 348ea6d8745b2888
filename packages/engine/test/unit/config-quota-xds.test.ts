// RLQS quota rules over xDS (RateLimitConfig extension fields 1006 `quota_buckets` and 1007
// `default_quota`, docs/ratelimit.md "Quota rules over xDS"): a resource carries the same rules a
// file's `quota_buckets:` / `default_quota:` do, through the wire (encode, then the checked decode
// the xDS client uses), and is validated by the same decoder with the same messages (without line
// numbers, which a resource does not have).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadRuleSet, loadXdsRuleSet } from '@rls/engine';
import { decodeRateLimitConfig, encodeRateLimitConfig, type QuotaRuleMsg, type RateLimitConfigMsg } from '@rls/rls-proto';

const id = (o: Record<string, string>): { key: string; value: string }[] => Object.entries(o).map(([key, value]) => ({ key, value }));
const quota = (q: Partial<QuotaRuleMsg>): QuotaRuleMsg => ({ strategy: '', unit: 'UNKNOWN', onStoreFailure: '', ...q });
/** Through the wire, as the xDS client receives it. */
const wire = (r: RateLimitConfigMsg): RateLimitConfigMsg => decodeRateLimitConfig(encodeRateLimitConfig(r));
const loadXds = (r: RateLimitConfigMsg) => loadXdsRuleSet([wire(r)], { mergeDomainConfig: false });

const YAML = `domain: edge
quota_buckets:
  - bucket_id: { name: api, tenant: "*" }
    quota: { unit: second, requests_per_unit: 100 }
  - bucket_id: { name: api, client: { cidr: 10.0.0.0/8 } }
    name: internal_api
    quota: { strategy: deny_all }
  - bucket_id: { name: "web-*" }
    quota: { strategy: requests_per_time_unit, unit: minute, unit_multiplier: 5, requests_per_unit: 0, on_store_failure: allow_all }
  - bucket_id: { name: batch }
    quota: { unit: hour, requests_per_unit: 10, burst: 40 }
default_quota: { strategy: allow_all }
`;

const RESOURCE: RateLimitConfigMsg = {
  name: 'edge-res',
  domain: 'edge',
  descriptors: [],
  quotaBuckets: [
    { bucketId: { name: 'api', tenant: '*' }, bucketIdCidr: {}, name: '', quota: quota({ unit: 'SECOND', requestsPerUnit: 100 }) },
    { bucketId: { name: 'api' }, bucketIdCidr: { client: '10.0.0.0/8' }, name: 'internal_api', quota: quota({ strategy: 'deny_all' }) },
    {
      bucketId: { name: 'web-*' },
      bucketIdCidr: {},
      name: '',
      quota: quota({ strategy: 'requests_per_time_unit', unit: 'MINUTE', unitMultiplier: 5, requestsPerUnit: 0, onStoreFailure: 'allow_all' }),
    },
    { bucketId: { name: 'batch' }, bucketIdCidr: {}, name: '', quota: quota({ unit: 'HOUR', requestsPerUnit: 10, burst: 40 }) },
  ],
  defaultQuota: quota({ strategy: 'allow_all' }),
};

function xdsError(r: RateLimitConfigMsg): string {
  try {
    loadXds(r);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected the resource to be refused');
}

function fileError(yaml: string): string {
  try {
    loadRuleSet([{ name: 'edge.yaml', content: yaml }], { mergeDomainConfig: false });
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail('expected the file to be refused');
}

describe('quota rules over xDS', () => {
  test('the resource gives the rules the file gives: same summary, same matches', () => {
    const fromFile = loadRuleSet([{ name: 'edge.yaml', content: YAML }], { mergeDomainConfig: false }).quotaRules;
    const fromXds = loadXds(RESOURCE).quotaRules;
    const noLines = (rules: typeof fromFile) => rules.summary('edge').map(({ line: _line, ...rest }) => rest);
    assert.deepEqual(noLines(fromXds), noLines(fromFile));
    assert.deepEqual(
      fromXds.summary('edge').map((r) => r.quota),
      ['100 per second (token_bucket, burst 100)', 'deny_all', '0 per 5 minutes (requests_per_time_unit)', '10 per hour (token_bucket, burst 40)', 'allow_all'],
    );
    for (const bucket of [{ name: 'api', tenant: 'acme' }, { name: 'api', client: '10.2.3.4' }, { name: 'api', client: '11.0.0.1' }, { name: 'web-eu' }, { name: 'batch' }, { name: 'other' }]) {
      const a = fromFile.match('edge', id(bucket));
      const b = fromXds.match('edge', id(bucket));
      assert.equal(b.rule.name, a.rule.name, JSON.stringify(bucket));
      assert.deepEqual(b.rule.quota, a.rule.quota, JSON.stringify(bucket));
    }
    assert.equal(fromXds.match('edge', id({ name: 'web-eu' })).rule.quota.onStoreFailure, 'allow_all');
  });

  test('an explicit requests_per_unit of 0 survives the wire; an absent one is "not written"', () => {
    const back = wire(RESOURCE);
    assert.equal(back.quotaBuckets?.[2]?.quota?.requestsPerUnit, 0);
    assert.equal(back.quotaBuckets?.[1]?.quota?.requestsPerUnit, undefined);
    assert.deepEqual(back.quotaBuckets?.[1]?.bucketIdCidr, { client: '10.0.0.0/8' });
  });

  test('resources without quota rules carry none (and an upstream resource decodes as before)', () => {
    const plain = wire({ name: 'p', domain: 'p', descriptors: [] });
    assert.equal(plain.quotaBuckets, undefined);
    assert.equal(plain.defaultQuota, undefined);
    assert.deepEqual(loadXdsRuleSet([plain], { mergeDomainConfig: false }).quotaRules.domains(), []);
  });

  test('refusals read like the file form, named after the resource and without line numbers', () => {
    const cases: [string, Partial<RateLimitConfigMsg>, string][] = [
      [
        'quota_buckets:\n  - bucket_id: { x: y }\n    quota: { strategy: sometimes }\n',
        { quotaBuckets: [{ bucketId: { x: 'y' }, bucketIdCidr: {}, name: '', quota: quota({ strategy: 'sometimes' }) }] },
        "quota_buckets[0].quota: unknown strategy 'sometimes' (expected one of token_bucket, requests_per_time_unit, allow_all, deny_all)",
      ],
      [
        'quota_buckets:\n  - bucket_id: { x: y }\n    quota: { strategy: allow_all, unit: second }\n',
        { quotaBuckets: [{ bucketId: { x: 'y' }, bucketIdCidr: {}, name: '', quota: quota({ strategy: 'allow_all', unit: 'SECOND' }) }] },
        'quota_buckets[0].quota: unit has no meaning with strategy allow_all',
      ],
      [
        'quota_buckets:\n  - bucket_id: { x: y }\n',
        { quotaBuckets: [{ bucketId: { x: 'y' }, bucketIdCidr: {}, name: '' }] },
        'quota_buckets[0]: missing quota',
      ],
      [
        'quota_buckets:\n  - bucket_id: {}\n    quota: { strategy: allow_all }\n',
        { quotaBuckets: [{ bucketId: {}, bucketIdCidr: {}, name: '', quota: quota({ strategy: 'allow_all' }) }] },
        'quota_buckets[0]: bucket_id must be a map of at least one key to a value',
      ],
      [
        'quota_buckets:\n  - bucket_id: { ip: { cidr: 10.0.0.1/8 } }\n    quota: { strategy: allow_all }\n',
        { quotaBuckets: [{ bucketId: {}, bucketIdCidr: { ip: '10.0.0.1/8' }, name: '', quota: quota({ strategy: 'allow_all' }) }] },
        "quota_buckets[0].bucket_id.ip: cidr: cidr '10.0.0.1/8' has host bits set; the block is 10.0.0.0/8",
      ],
      [
        'quota_buckets:\n  - bucket_id: { x: y }\n    quota: { unit: second }\n',
        { quotaBuckets: [{ bucketId: { x: 'y' }, bucketIdCidr: {}, name: '', quota: quota({ unit: 'SECOND' }) }] },
        'quota_buckets[0].quota: strategy token_bucket needs requests_per_unit',
      ],
      [
        'quota_buckets:\n  - bucket_id: { x: y }\n    quota: { strategy: allow_all }\n  - bucket_id: { x: y }\n    quota: { strategy: deny_all }\n',
        {
          quotaBuckets: [
            { bucketId: { x: 'y' }, bucketIdCidr: {}, name: '', quota: quota({ strategy: 'allow_all' }) },
            { bucketId: { x: 'y' }, bucketIdCidr: {}, name: '', quota: quota({ strategy: 'deny_all' }) },
          ],
        },
        'quota_buckets[1]: bucket_id {x=y} repeats quota_buckets[0]',
      ],
    ];
    for (const [yaml, fields, problem] of cases) {
      const file = fileError(`domain: edge\n${yaml}`);
      assert.equal(file.replace(/ \(line \d+\)/g, '').replace(/ of line \d+/g, ''), `edge.yaml: ${problem}`, yaml);
      assert.equal(xdsError({ name: 'edge-res', domain: 'edge', descriptors: [], ...fields }), `edge-res: ${problem}`, yaml);
    }
  });

  test('a key in both bucket_id and bucket_id_cidr is refused, naming it', () => {
    const message = xdsError({
      name: 'edge-res',
      domain: 'edge',
      descriptors: [],
      quotaBuckets: [{ bucketId: { ip: '1.2.3.4' }, bucketIdCidr: { ip: '10.0.0.0/8' }, name: '', quota: quota({ strategy: 'allow_all' }) }],
    });
    assert.equal(message, "edge-res: quota_buckets[0]: bucket_id key 'ip' is in both bucket_id and bucket_id_cidr");
  });
});
