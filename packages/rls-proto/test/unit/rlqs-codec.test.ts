// The RLQS codec's exact bytes, its report bounds (each limit refused with its own typed error,
// naming the field and the setting, before the excess is built), and the canonical bucket key.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import type {
  RlqsLimitError} from '../../src/index.js';
import {
  bucketIdOfKey,
  bucketKey,
  decodeRateLimitQuotaResponse,
  decodeRateLimitQuotaUsageReports,
  DEFAULT_RLQS_REPORT_LIMITS,
  encodeRateLimitQuotaResponse,
  encodeRateLimitQuotaUsageReports,
  isRlqsLimitError,
  ProtoDecodeError,
  type RateLimitQuotaUsageReportsMsg,
  type RlqsReportLimits,
} from '../../src/index.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

const LIMITS: RlqsReportLimits = {
  maxMessageBytes: 400,
  maxBucketsPerReport: 3,
  maxBucketIdEntries: 2,
  maxBucketEntryBytes: 10,
  maxDomainBytes: 5,
  sources: { maxBucketsPerReport: 'RLQS_MAX_BUCKETS_PER_REPORT', maxBucketEntryBytes: 'RLQS_MAX_BUCKET_ENTRY_BYTES' },
};

function report(n: number, id = [{ key: 'name', value: 'a' }], domain = 'd'): RateLimitQuotaUsageReportsMsg {
  return {
    domain,
    bucketQuotaUsages: Array.from({ length: n }, () => ({ bucketId: id, timeElapsed: 1, numRequestsAllowed: 2, numRequestsDenied: 0 })),
  };
}

function limitOf(bytes: Uint8Array, limits = LIMITS): RlqsLimitError | undefined {
  try {
    decodeRateLimitQuotaUsageReports(bytes, limits);
    return undefined;
  } catch (err) {
    if (isRlqsLimitError(err)) return err;
    throw err;
  }
}

describe('RLQS codec bytes', () => {
  test('a usage report encodes field by field (domain 1, usages 2; bucket_id 1, time_elapsed 2, allowed 3, denied 4)', () => {
    const bytes = encodeRateLimitQuotaUsageReports({
      domain: 'd',
      bucketQuotaUsages: [{ bucketId: [{ key: 'k', value: 'v' }], timeElapsed: 1.5, numRequestsAllowed: 3, numRequestsDenied: 300 }],
    });
    // 12 len { 0a 08 { 0a 06 { 0a 01 'k' 12 01 'v' } } 12 06 { 08 01 10 80cab5ee01 } 18 03 20 ac02 }
    assert.deepEqual(bytes, hex('0a0164 1219 0a08 0a06 0a016b 120176 1208 0801 1080cab5ee01 1803 20ac02'));
  });

  test('a response writes ALLOW_ALL (0) inside the oneof, a zero TTL as an empty Duration, an abandon as an empty message', () => {
    const bytes = encodeRateLimitQuotaResponse({
      bucketAction: [
        { bucketId: [{ key: 'k', value: 'v' }], action: { kind: 'quota_assignment', assignmentTimeToLive: 0, rateLimitStrategy: { kind: 'blanket_rule', blanketRule: 0 } } },
        { bucketId: [{ key: 'k', value: 'v' }], action: { kind: 'abandon' } },
      ],
    });
    // action { 0a 08 {id} 12 06 { 12 00 1a 02 { 08 00 } } } ; action { 0a 08 {id} 1a 00 }
    assert.deepEqual(bytes, hex('0a12 0a08 0a06 0a016b 120176 1206 1200 1a02 0800' + '0a0c 0a08 0a06 0a016b 120176 1a00'));
    const back = decodeRateLimitQuotaResponse(bytes);
    assert.deepEqual(back.bucketAction[0]!.action, { kind: 'quota_assignment', assignmentTimeToLive: 0, rateLimitStrategy: { kind: 'blanket_rule', blanketRule: 0 } });
    assert.deepEqual(back.bucketAction[1]!.action, { kind: 'abandon' });
  });

  test('token bucket with tokens_per_fill present as 0 differs from absent; fill_interval keeps nanos', () => {
    const enc = (tokensPerFill: number | undefined): Buffer =>
      encodeRateLimitQuotaResponse({
        bucketAction: [
          {
            bucketId: undefined,
            action: { kind: 'quota_assignment', assignmentTimeToLive: undefined, rateLimitStrategy: { kind: 'token_bucket', tokenBucket: { maxTokens: 10, tokensPerFill, fillInterval: 0.25 } } },
          },
        ],
      });
    const present = decodeRateLimitQuotaResponse(enc(0)).bucketAction[0]!.action;
    const absent = decodeRateLimitQuotaResponse(enc(undefined)).bucketAction[0]!.action;
    assert.deepEqual(present, { kind: 'quota_assignment', assignmentTimeToLive: undefined, rateLimitStrategy: { kind: 'token_bucket', tokenBucket: { maxTokens: 10, tokensPerFill: 0, fillInterval: 0.25 } } });
    assert.deepEqual(absent, { kind: 'quota_assignment', assignmentTimeToLive: undefined, rateLimitStrategy: { kind: 'token_bucket', tokenBucket: { maxTokens: 10, tokensPerFill: undefined, fillInterval: 0.25 } } });
  });

  test('a later oneof member replaces an earlier one: abandon after an assignment, a blanket rule after a token bucket', () => {
    // action { quota_assignment_action {} abandon_action {} }
    assert.deepEqual(decodeRateLimitQuotaResponse(hex('0a04 1200 1a00')).bucketAction[0]!.action, { kind: 'abandon' });
    // action { quota_assignment_action { strategy { token_bucket { max_tokens 5 } blanket_rule DENY_ALL } } }
    assert.deepEqual(decodeRateLimitQuotaResponse(hex('0a0a 1208 1a06 1a02 0805 0801')).bucketAction[0]!.action, {
      kind: 'quota_assignment',
      assignmentTimeToLive: undefined,
      rateLimitStrategy: { kind: 'blanket_rule', blanketRule: 1 },
    });
  });

  test('headroom is left unwritten in front of a response (for the gRPC frame prefix)', () => {
    const res = { bucketAction: [{ bucketId: [{ key: 'a', value: 'b' }], action: { kind: 'abandon' as const } }] };
    const plain = encodeRateLimitQuotaResponse(res);
    const framed = encodeRateLimitQuotaResponse(res, 5);
    assert.deepEqual(framed.subarray(5), plain);
  });

  test('a truncated report is a ProtoDecodeError, not a crash', () => {
    const bytes = encodeRateLimitQuotaUsageReports(report(2));
    assert.throws(() => decodeRateLimitQuotaUsageReports(bytes.subarray(0, bytes.length - 3)), (e: unknown) => e instanceof ProtoDecodeError && e.code === 'truncated');
  });
});

describe('RLQS report bounds', () => {
  test('the defaults accept a report of maxBucketsPerReport ordinary buckets', () => {
    const msg = report(DEFAULT_RLQS_REPORT_LIMITS.maxBucketsPerReport, [
      { key: 'name', value: 'api' },
      { key: 'tenant', value: 'acme' },
    ]);
    assert.equal(decodeRateLimitQuotaUsageReports(encodeRateLimitQuotaUsageReports(msg)).bucketQuotaUsages.length, DEFAULT_RLQS_REPORT_LIMITS.maxBucketsPerReport);
  });

  test('buckets per report: the limit is accepted, one more is refused naming the setting', () => {
    assert.equal(limitOf(encodeRateLimitQuotaUsageReports(report(3))), undefined);
    const err = limitOf(encodeRateLimitQuotaUsageReports(report(4)));
    assert.equal(err?.limit, 'maxBucketsPerReport');
    assert.equal(err?.message, 'bucket_quota_usages: more than 3 buckets in one report (limit 3, set by RLQS_MAX_BUCKETS_PER_REPORT)');
  });

  test('entries per bucket id, counted on the wire (a key repeated still counts)', () => {
    assert.equal(limitOf(encodeRateLimitQuotaUsageReports(report(1, [{ key: 'a', value: '1' }, { key: 'b', value: '2' }]))), undefined);
    const three = [{ key: 'a', value: '1' }, { key: 'b', value: '2' }, { key: 'a', value: '3' }];
    const err = limitOf(encodeRateLimitQuotaUsageReports(report(1, three)));
    assert.equal(err?.limit, 'maxBucketIdEntries');
    assert.equal(err?.path, 'bucket_quota_usages[0].bucket_id');
  });

  test('bytes of one entry: exactly the limit passes (multi-byte characters counted as UTF-8), one more is refused', () => {
    assert.equal(limitOf(encodeRateLimitQuotaUsageReports(report(1, [{ key: 'k', value: 'ééééa' }]))), undefined);
    assert.equal(limitOf(encodeRateLimitQuotaUsageReports(report(1, [{ key: 'kkkk', value: 'vvvvvv' }]))), undefined);
    const err = limitOf(encodeRateLimitQuotaUsageReports(report(1, [{ key: 'kkkk', value: 'vvvvv€' }])));
    assert.equal(err?.limit, 'maxBucketEntryBytes');
    assert.equal(err?.message, 'bucket_quota_usages[0].bucket_id[0]: key and value longer than 10 bytes (limit 10, set by RLQS_MAX_BUCKET_ENTRY_BYTES)');
  });

  test('a huge entry is refused from its length prefix, before its strings are decoded', () => {
    const bytes = encodeRateLimitQuotaUsageReports(report(1, [{ key: 'k', value: '\u00ff'.repeat(100_000) }]));
    const err = limitOf(bytes, { ...LIMITS, maxMessageBytes: 1_000_000 });
    assert.equal(err?.limit, 'maxBucketEntryBytes');
  });

  test('domain bytes and message bytes', () => {
    assert.equal(limitOf(encodeRateLimitQuotaUsageReports(report(1, undefined, 'abcde'))), undefined);
    assert.equal(limitOf(encodeRateLimitQuotaUsageReports(report(1, undefined, 'abcdef')))?.limit, 'maxDomainBytes');
    const big = Buffer.alloc(401);
    assert.equal(limitOf(big)?.limit, 'maxMessageBytes');
  });
});

describe('bucketKey', () => {
  test('order of entries does not matter; values and keys are kept apart unambiguously', () => {
    assert.equal(bucketKey([{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }]), bucketKey([{ key: 'b', value: 'B' }, { key: 'a', value: 'A' }]));
    assert.equal(bucketKey([{ key: 'b', value: 'B' }, { key: 'a', value: 'A' }]), '[["a","A"],["b","B"]]');
    // Separators inside keys or values cannot fake another id.
    assert.notEqual(bucketKey([{ key: 'a', value: 'x","b' }]), bucketKey([{ key: 'a', value: 'x' }, { key: 'b', value: '' }]));
    assert.notEqual(bucketKey([{ key: 'ab', value: '' }]), bucketKey([{ key: 'a', value: 'b' }]));
  });

  test('duplicates keep the last value, as the wire does; the key parses back to the sorted entries', () => {
    assert.equal(bucketKey([{ key: 'a', value: '1' }, { key: 'a', value: '2' }]), bucketKey([{ key: 'a', value: '2' }]));
    const id = [{ key: 'z', value: '😀"' }, { key: 'm', value: '\u0000' }];
    assert.deepEqual(bucketIdOfKey(bucketKey(id)), [id[1], id[0]]);
  });
});
