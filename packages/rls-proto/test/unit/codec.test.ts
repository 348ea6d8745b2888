import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeRateLimitRequest,
  decodeRateLimitResponse,
  encodeRateLimitRequest,
  encodeRateLimitResponse,
  decodeHealthCheckRequest,
  encodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckResponse,
  ProtoDecodeError,
  type RateLimitRequestMsg,
  type RateLimitResponseMsg,
} from '../../src/index.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('RateLimitRequest codec', () => {
  test('round trip keeps every field, including an override and addends', () => {
    const req: RateLimitRequestMsg = {
      domain: 'edge-proxy',
      descriptors: [
        { entries: [{ key: 'remote_address', value: '10.0.0.1' }, { key: 'path', value: '/é/ünïcode/😀' }], limit: undefined, hitsAddend: undefined },
        { entries: [{ key: 'k', value: '' }], limit: { requestsPerUnit: 42, unit: 7 }, hitsAddend: 0 },
        { entries: [], limit: { requestsPerUnit: 0, unit: 0 }, hitsAddend: Number.MAX_SAFE_INTEGER },
      ],
      hitsAddend: 4294967295,
    };
    assert.deepEqual(decodeRateLimitRequest(encodeRateLimitRequest(req)), req);
  });

  test('hits_addend wrapper presence: 0 present differs from absent', () => {
    const present = encodeRateLimitRequest({ domain: 'd', descriptors: [{ entries: [], hitsAddend: 0 }], hitsAddend: 0 });
    const absent = encodeRateLimitRequest({ domain: 'd', descriptors: [{ entries: [] }], hitsAddend: 0 });
    // descriptor {hits_addend: {}} = 12 02 1a 00
    assert.deepEqual(present, hex('0a0164 1202 1a00'));
    assert.deepEqual(absent, hex('0a0164 1200'));
    assert.equal(decodeRateLimitRequest(present).descriptors[0]!.hitsAddend, 0);
    assert.equal(decodeRateLimitRequest(absent).descriptors[0]!.hitsAddend, undefined);
  });

  test('encoder omits proto3 defaults', () => {
    assert.equal(encodeRateLimitRequest({ domain: '', descriptors: [], hitsAddend: 0 }).length, 0);
  });

  test('headroom is left unwritten in front of the message', () => {
    const plain = encodeRateLimitRequest({ domain: 'abc', descriptors: [], hitsAddend: 1 });
    const framed = encodeRateLimitRequest({ domain: 'abc', descriptors: [], hitsAddend: 1 }, 5);
    assert.equal(framed.length, plain.length + 5);
    assert.deepEqual(framed.subarray(5), plain);
  });

  test('unknown fields of every wire type are skipped, including groups and is_negative_hits', () => {
    const bytes = Buffer.concat([
      hex('0a0164'), // domain "d"
      hex('f8 07 96 01'), // field 127 varint 150
      hex('a1 06 0102030405060708'), // field 100 fixed64
      hex('ad 06 01020304'), // field 101 fixed32
      hex('b2 06 03 616263'), // field 102 length-delimited
      hex('bb 06 08 01 c3 06 c4 06 bc 06'), // field 103 group containing a varint and a nested group 104
      hex('12 0b 0a 05 0a 01 61 12 00 20 01 28 05'), // descriptor: entry{key a, value ""}, is_negative_hits, field 5 varint
      hex('18 03'),
    ]);
    const req = decodeRateLimitRequest(bytes);
    assert.deepEqual(req, {
      domain: 'd',
      descriptors: [{ entries: [{ key: 'a', value: '' }], limit: undefined, hitsAddend: undefined }],
      hitsAddend: 3,
    });
  });

  test('a known field with an unexpected wire type is skipped as unknown', () => {
    // domain sent as varint (tag 08), hits_addend as length-delimited (tag 1a): both ignored.
    const req = decodeRateLimitRequest(hex('08 05 1a 02 0102 0a 01 78'));
    assert.equal(req.domain, 'x');
    assert.equal(req.hitsAddend, 0);
  });

  test('last scalar wins and repeated embedded messages merge', () => {
    // two domains; limit sent twice: first sets rpu=5, second sets unit=2
    const bytes = hex('0a0161 0a0162 12 0a 12 02 08 05 12 02 10 02 1a 00');
    const req = decodeRateLimitRequest(bytes);
    assert.equal(req.domain, 'b');
    assert.deepEqual(req.descriptors[0]!.limit, { requestsPerUnit: 5, unit: 2 });
    assert.equal(req.descriptors[0]!.hitsAddend, 0);
  });

  test('uint32 fields take the low 32 bits of a 64-bit varint; uint64 above 2^53 clamps', () => {
    // hits_addend = 2^32 + 7 encoded as a 5-byte varint ⇒ 7
    const req = decodeRateLimitRequest(hex('18 87 80 80 80 10'));
    assert.equal(req.hitsAddend, 7);
    // UInt64Value 2^64-1 ⇒ clamp to MAX_SAFE_INTEGER
    const big = decodeRateLimitRequest(hex('12 0d 1a 0b 08 ffffffffffffffffff01'));
    assert.equal(big.descriptors[0]!.hitsAddend, Number.MAX_SAFE_INTEGER);
    // negative enum unit (int32 -1 as 10 bytes) stays -1
    const neg = decodeRateLimitRequest(hex('12 0f 12 0d 10 ffffffffffffffffff01 0801'));
    assert.deepEqual(neg.descriptors[0]!.limit, { requestsPerUnit: 1, unit: -1 });
  });

  const bad: Array<[string, string, string]> = [
    ['truncated string', '0a 05 6162', 'truncated'],
    ['truncated varint', '18 ff', 'truncated'],
    ['length beyond nested end', '12 03 0a 05 0a', 'truncated'],
    ['varint of 11 bytes', '18 ffffffffffffffffffff01', 'malformed'],
    ['field number 0', '02 00', 'malformed'],
    ['wire type 6', '0e 00', 'malformed'],
    ['wire type 7', '0f', 'malformed'],
    ['unexpected end group', '0c', 'malformed'],
    ['unterminated group', '0b 08 01', 'truncated'],
    ['mismatched end group', '0b 14', 'malformed'],
    ['truncated fixed64', '09 0102', 'truncated'],
    ['truncated fixed32', '0d 01', 'truncated'],
    ['invalid UTF-8 in domain', '0a 02 c328', 'invalid_utf8'],
    ['invalid UTF-8 in entry key', '12 06 0a 04 0a 02 ff fe', 'invalid_utf8'],
    ['negative length', '0a ffffffff0f', 'malformed'],
  ];
  for (const [name, bytes, code] of bad) {
    test(`rejects ${name} with a typed error`, () => {
      assert.throws(
        () => decodeRateLimitRequest(hex(bytes)),
        (err: unknown) => err instanceof ProtoDecodeError && err.code === code && /at byte \d+$/.test(err.message),
      );
    });
  }

  test('every truncation of a valid message is rejected or decodes a prefix, never crashes', () => {
    const full = encodeRateLimitRequest({
      domain: 'domain',
      descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requestsPerUnit: 300, unit: 2 }, hitsAddend: 70000 }],
      hitsAddend: 2,
    });
    let rejected = 0;
    for (let n = 0; n < full.length; n++) {
      try {
        decodeRateLimitRequest(full.subarray(0, n));
      } catch (err) {
        assert.ok(err instanceof ProtoDecodeError, `length ${n}: ${String(err)}`);
        rejected++;
      }
    }
    assert.ok(rejected > full.length / 2);
  });

  test('deeply nested groups are refused, not a stack overflow', () => {
    const depth = 5000;
    const open = Buffer.alloc(depth, 0x0b); // field 1 start group
    const close = Buffer.alloc(depth, 0x0c);
    assert.throws(() => decodeRateLimitRequest(Buffer.concat([hex('f8 07 01'), open, close]).subarray(3)), (e: unknown) => e instanceof ProtoDecodeError && e.code === 'too_deep');
  });

  test('accepts a plain Uint8Array view with an offset', () => {
    const enc = encodeRateLimitRequest({ domain: 'view', descriptors: [], hitsAddend: 9 });
    const backing = new Uint8Array(enc.length + 3);
    backing.set(enc, 3);
    assert.deepEqual(decodeRateLimitRequest(backing.subarray(3)), { domain: 'view', descriptors: [], hitsAddend: 9 });
  });
});

describe('RateLimitResponse codec', () => {
  const res: RateLimitResponseMsg = {
    overallCode: 2,
    statuses: [
      { code: 1, currentLimit: { requestsPerUnit: 20, unit: 2, name: 'per-minute' }, limitRemaining: 19, durationUntilReset: 37 },
      { code: 2, currentLimit: { requestsPerUnit: 1, unit: 7, name: '' }, limitRemaining: 0, durationUntilReset: 0 },
      { code: 1, currentLimit: undefined, limitRemaining: 4294967295, durationUntilReset: undefined },
      { code: 0, currentLimit: undefined, limitRemaining: 0, durationUntilReset: 1.5 },
    ],
    responseHeadersToAdd: [{ key: 'RateLimit-Limit', value: '20' }, { key: 'x-raw', value: '', rawValue: new Uint8Array([0, 255]) }],
    dynamicMetadata: { a: 1.25, b: 'x', c: true, d: null, e: [1, 'two', { three: [] }], f: {}, ['__proto__']: 'p' },
    requestHeadersToAdd: [{ key: 'k', value: 'v' }],
    rawBody: new Uint8Array([1, 2, 3]),
  };

  test('round trip keeps every field', () => {
    const out = decodeRateLimitResponse(encodeRateLimitResponse(res));
    assert.deepEqual(out, res);
  });

  test('WEEK=7 and the name field (number 3) are on the wire as specified', () => {
    const bytes = encodeRateLimitResponse({
      overallCode: 1,
      statuses: [{ code: 1, currentLimit: { requestsPerUnit: 1, unit: 7, name: 'w' }, limitRemaining: 0, durationUntilReset: undefined }],
      responseHeadersToAdd: [],
    });
    // 08 01 | 12 0b [08 01 | 12 07 [08 01 10 07 1a 01 77]]
    assert.deepEqual(bytes, hex('0801 120b 0801 1207 0801 1007 1a0177'));
  });

  test('duration 0 is present (empty Duration) while undefined is absent', () => {
    const withZero = encodeRateLimitResponse({ overallCode: 0, statuses: [{ code: 0, limitRemaining: 0, durationUntilReset: 0 }], responseHeadersToAdd: [] });
    assert.deepEqual(withZero, hex('1202 2200'));
    assert.equal(decodeRateLimitResponse(withZero).statuses[0]!.durationUntilReset, 0);
  });

  test('quota fields are decoded and ignored; unknown codes read as UNKNOWN', () => {
    // status {code 9, quota{requests 5, id "q"}}; response quota{requests 1}
    const bytes = hex('1209 0809 2a05 0805 1a0171 3a02 0801');
    const out = decodeRateLimitResponse(bytes);
    assert.deepEqual(out, { overallCode: 0, statuses: [{ code: 0, currentLimit: undefined, limitRemaining: 0, durationUntilReset: undefined }], responseHeadersToAdd: [] });
  });

  test('negative durations round trip', () => {
    const out = decodeRateLimitResponse(encodeRateLimitResponse({ overallCode: 1, statuses: [{ code: 1, limitRemaining: 0, durationUntilReset: -3 }], responseHeadersToAdd: [] }));
    assert.equal(out.statuses[0]!.durationUntilReset, -3);
  });
});

describe('health codec', () => {
  test('request and response round trip', () => {
    assert.deepEqual(decodeHealthCheckRequest(encodeHealthCheckRequest({ service: 'ratelimit' })), { service: 'ratelimit' });
    assert.deepEqual(decodeHealthCheckRequest(new Uint8Array(0)), { service: '' });
    assert.deepEqual(encodeHealthCheckResponse({ status: 1 }), hex('0801'));
    assert.deepEqual(decodeHealthCheckResponse(hex('0802')), { status: 2 });
    assert.throws(() => decodeHealthCheckRequest(hex('0a05')), ProtoDecodeError);
  });
});
