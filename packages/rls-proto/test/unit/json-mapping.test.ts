import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { encodeRateLimitResponseJson, formatDurationJson, JsonMappingError, parseRateLimitRequestJson } from '../../src/index.js';

describe('proto3 JSON: RateLimitRequest', () => {
  test('lowerCamelCase and original names, enum names and numbers, UInt64Value as number or string', () => {
    const req = parseRateLimitRequestJson(
      JSON.stringify({
        domain: 'rl',
        hits_addend: '3',
        descriptors: [
          { entries: [{ key: 'a', value: 'b' }], limit: { requestsPerUnit: 5, unit: 'MINUTE' }, hitsAddend: 0 },
          { entries: [{ key: 'c' }], limit: { requests_per_unit: '6', unit: 7 }, hits_addend: '18446744073709551615' },
          { entries: [], isNegativeHits: true },
        ],
      }),
    );
    assert.deepEqual(req, {
      domain: 'rl',
      hitsAddend: 3,
      descriptors: [
        { entries: [{ key: 'a', value: 'b' }], limit: { requestsPerUnit: 5, unit: 2 }, hitsAddend: 0 },
        { entries: [{ key: 'c', value: '' }], limit: { requestsPerUnit: 6, unit: 7 }, hitsAddend: Number.MAX_SAFE_INTEGER },
        { entries: [], limit: undefined, hitsAddend: undefined },
      ],
    });
  });

  test('null means unset; integral numbers in exponent form are accepted', () => {
    const req = parseRateLimitRequestJson('{"domain":null,"descriptors":[{"entries":null,"hitsAddend":null,"limit":null}],"hitsAddend":1e1}');
    assert.deepEqual(req, { domain: '', descriptors: [{ entries: [], limit: undefined, hitsAddend: undefined }], hitsAddend: 10 });
  });

  const bad: Array<[string, string, string]> = [
    ['empty body', '', 'empty request body'],
    ['invalid JSON', '}', 'invalid JSON: '],
    ['array at top level', '[]', 'request must be a JSON object, got array'],
    ['unknown top-level field', '{"domain":"d","foo":1}', 'unknown field "foo"'],
    ['unknown nested field', '{"descriptors":[{"entries":[{"key":"k","val":"v"}]}]}', 'descriptors[0].entries[0]: unknown field "val"'],
    ['wrong type for a string', '{"descriptors":[{"entries":[{"key":"a","value":"b"},{"key":"k","value":5}]}]}', 'descriptors[0].entries[1].value: expected string, got number'],
    ['wrong type for domain', '{"domain":["x"]}', 'domain: expected string, got array'],
    ['descriptors not a list', '{"descriptors":{}}', 'descriptors: expected array, got object'],
    ['descriptor not an object', '{"descriptors":[1]}', 'descriptors[0]: expected object, got number'],
    ['negative uint32', '{"hitsAddend":-1}', 'hitsAddend: value -1 out of range for uint32'],
    ['fractional uint32', '{"hitsAddend":1.5}', 'hitsAddend: expected unsigned 32-bit integer, got 1.5'],
    ['uint32 too big', '{"hitsAddend":4294967296}', 'hitsAddend: value 4294967296 out of range for uint32'],
    ['non-numeric string', '{"hitsAddend":"abc"}', 'hitsAddend: expected unsigned 32-bit integer, got string'],
    ['bad enum name', '{"descriptors":[{"limit":{"unit":"WEEK"}}]}', 'descriptors[0].limit.unit: invalid enum value "WEEK"'],
    ['enum as bool', '{"descriptors":[{"limit":{"unit":true}}]}', 'descriptors[0].limit.unit: expected enum name or number, got boolean'],
    ['duplicate field under both names', '{"hitsAddend":1,"hits_addend":2}', 'hits_addend: duplicate field'],
    ['wrapper written as object', '{"descriptors":[{"hitsAddend":{"value":1}}]}', 'descriptors[0].hitsAddend: expected unsigned 64-bit integer (wrappers are written as bare values), got object'],
    ['uint64 negative string', '{"descriptors":[{"hitsAddend":"-2"}]}', 'descriptors[0].hitsAddend: value -2 out of range for uint64'],
    ['bool with a string', '{"descriptors":[{"isNegativeHits":"yes"}]}', 'descriptors[0].isNegativeHits: expected boolean, got string'],
  ];
  for (const [name, body, message] of bad) {
    test(`rejects ${name}`, () => {
      assert.throws(
        () => parseRateLimitRequestJson(body),
        (err: unknown) => err instanceof JsonMappingError && (message.endsWith(': ') ? err.message.startsWith(message) : err.message === message),
      );
    });
  }
});

describe('proto3 JSON: RateLimitResponse', () => {
  test('camelCase, defaults omitted, enums as names, Duration as seconds string', () => {
    const json = encodeRateLimitResponseJson({
      overallCode: 1,
      statuses: [
        { code: 1, currentLimit: { requestsPerUnit: 20, unit: 2, name: '' }, limitRemaining: 19, durationUntilReset: 37 },
        { code: 2, currentLimit: { requestsPerUnit: 1, unit: 7, name: 'weekly' }, limitRemaining: 0, durationUntilReset: 0 },
        { code: 1, currentLimit: undefined, limitRemaining: 4294967295, durationUntilReset: undefined },
      ],
      responseHeadersToAdd: [{ key: 'RateLimit-Remaining', value: '19' }],
      dynamicMetadata: { shadow: true, nested: { n: [1, null] } },
    });
    assert.equal(
      json,
      '{"overallCode":"OK","statuses":[' +
        '{"code":"OK","currentLimit":{"requestsPerUnit":20,"unit":"MINUTE"},"limitRemaining":19,"durationUntilReset":"37s"},' +
        '{"code":"OVER_LIMIT","currentLimit":{"requestsPerUnit":1,"unit":"WEEK","name":"weekly"},"durationUntilReset":"0s"},' +
        '{"code":"OK","limitRemaining":4294967295}],' +
        '"responseHeadersToAdd":[{"key":"RateLimit-Remaining","value":"19"}],' +
        '"dynamicMetadata":{"shadow":true,"nested":{"n":[1,null]}}}',
    );
  });

  test('an empty response is {} and unknown enum numbers stay numbers', () => {
    assert.equal(encodeRateLimitResponseJson({ overallCode: 0, statuses: [], responseHeadersToAdd: [] }), '{}');
    assert.equal(
      encodeRateLimitResponseJson({ overallCode: 2, statuses: [{ code: 2, currentLimit: { requestsPerUnit: 1, unit: 9, name: '' }, limitRemaining: 0 }], responseHeadersToAdd: [] }),
      '{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT","currentLimit":{"requestsPerUnit":1,"unit":9}}]}',
    );
  });

  test('durations use 0, 3, 6 or 9 fractional digits', () => {
    assert.equal(formatDurationJson(58), '58s');
    assert.equal(formatDurationJson(1.5), '1.500s');
    assert.equal(formatDurationJson(0.000001), '0.000001s');
    assert.equal(formatDurationJson(2.000000001), '2.000000001s');
    assert.equal(formatDurationJson(-1.25), '-1.250s');
  });
});
