// Property-based tests (fast-check, fixed seed) of every protobuf decoder of this package: the
// hand-coded RLS, RLQS and health codecs (wire-reader.ts, rls-codec.ts, rlqs-codec.ts,
// struct-codec.ts, health-codec.ts) and the schema-checked protobufjs xDS codecs (xds-codec.ts). Encodings of
// random messages decode back to the message; random bytes and damaged encodings (bit flips,
// truncation, splices, huge varints) give a message or ProtoDecodeError, nothing else; length
// prefixes claiming gigabytes and hostile nesting are refused before anything is allocated or
// recursed into; a decoded message is never larger than its input can honestly describe.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  decodeDiscoveryRequest,
  decodeDiscoveryResponse,
  decodeHealthCheckRequest,
  decodeHealthCheckResponse,
  decodeRateLimitConfig,
  decodeRateLimitRequest,
  decodeRateLimitResponse,
  encodeDiscoveryRequest,
  encodeDiscoveryResponse,
  encodeHealthCheckRequest,
  encodeRateLimitConfig,
  encodeRateLimitRequest,
  encodeRateLimitResponse,
  DEFAULT_REQUEST_LIMITS,
  DEFAULT_RLQS_REPORT_LIMITS,
  decodeRateLimitQuotaResponse,
  decodeRateLimitQuotaUsageReports,
  encodeRateLimitQuotaResponse,
  encodeRateLimitQuotaUsageReports,
  isRlqsLimitError,
  isProtoDecodeError,
  isRequestLimitError,
  ProtoDecodeError,
  type DiscoveryRequestMsg,
  type DiscoveryResponseMsg,
  type JsonValue,
  type RateLimitConfigDescriptorMsg,
  type RateLimitConfigMsg,
  type RateLimitRequestMsg,
  type RateLimitResponseMsg,
  type RlsCodeNumber,
  type BucketIdMsg,
  type RateLimitQuotaResponseMsg,
  type RateLimitQuotaUsageReportsMsg,
  type RateLimitStrategyMsg,
} from '../../src/index.js';
import { fcOptions, mutatedArb, valueOrTyped, varintBytes } from '@rls/testkit';

type JsonObject = { [k: string]: JsonValue };

const str = fc.string({ unit: 'binary', maxLength: 16 });
const uint32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 0x7fffffff, 0xffffffff), fc.nat({ max: 0xffffffff }));
const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const uint64 = fc.oneof(fc.constantFrom(0, 1, 2 ** 32, Number.MAX_SAFE_INTEGER), fc.maxSafeNat());

const requestArb: fc.Arbitrary<RateLimitRequestMsg> = fc.record({
  domain: str,
  descriptors: fc.array(
    fc.record({
      entries: fc.array(fc.record({ key: str, value: str }), { maxLength: 4 }),
      limit: fc.option(fc.record({ requestsPerUnit: uint32, unit: int32 }), { nil: undefined }),
      hitsAddend: fc.option(uint64, { nil: undefined }),
    }),
    { maxLength: 4 },
  ),
  hitsAddend: uint32,
});

const jsonObject: fc.Arbitrary<JsonObject> = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>, { maxKeys: 4 });
const headerArb = fc.record(
  { key: str, value: str, rawValue: fc.uint8Array({ minLength: 1, maxLength: 8 }).map((a) => Buffer.from(a)) },
  { requiredKeys: ['key', 'value'] },
);
const responseArb: fc.Arbitrary<RateLimitResponseMsg> = fc.record(
  {
    overallCode: fc.constantFrom<RlsCodeNumber>(0, 1, 2),
    statuses: fc.array(
      fc.record({
        code: fc.constantFrom<RlsCodeNumber>(0, 1, 2),
        currentLimit: fc.option(fc.record({ requestsPerUnit: uint32, unit: fc.integer({ min: 0, max: 7 }), name: str }), { nil: undefined }),
        limitRemaining: uint32,
        // Whole seconds round trip exactly (fractions are checked by codec.test.ts).
        durationUntilReset: fc.option(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), { nil: undefined }),
      }),
      { maxLength: 4 },
    ),
    responseHeadersToAdd: fc.array(headerArb, { maxLength: 3 }),
    requestHeadersToAdd: fc.array(headerArb, { minLength: 1, maxLength: 2 }),
    rawBody: fc.uint8Array({ minLength: 1, maxLength: 16 }).map((a) => Buffer.from(a)),
    dynamicMetadata: jsonObject,
  },
  { requiredKeys: ['overallCode', 'statuses', 'responseHeadersToAdd'] },
);

/** A RateLimitConfig descriptor with children `children` (three fixed levels keep the trees small). */
const configDescriptorOf = (children: fc.Arbitrary<RateLimitConfigDescriptorMsg[]>): fc.Arbitrary<RateLimitConfigDescriptorMsg> =>
  fc.record(
    {
      key: str,
      value: str,
      rateLimit: fc.record({
        unit: fc.constantFrom('UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'),
        requestsPerUnit: uint32,
        unlimited: fc.boolean(),
        name: str,
        replaces: fc.array(fc.record({ name: str }), { maxLength: 2 }),
      }),
      descriptors: children,
      shadowMode: fc.boolean(),
      detailedMetric: fc.boolean(),
      quotaMode: fc.boolean(),
      metadata: jsonObject,
    },
    { requiredKeys: ['key', 'value', 'descriptors', 'shadowMode', 'detailedMetric', 'quotaMode'] },
  );
const configDescriptor = configDescriptorOf(fc.array(configDescriptorOf(fc.array(configDescriptorOf(fc.constant([])), { maxLength: 2 })), { maxLength: 2 }));
const configArb: fc.Arbitrary<RateLimitConfigMsg> = fc.record({ name: str, domain: str, descriptors: fc.array(configDescriptor, { maxLength: 3 }) });

const discoveryRequestArb: fc.Arbitrary<DiscoveryRequestMsg> = fc.record(
  {
    versionInfo: str,
    node: fc.record({ id: str, cluster: str, metadata: jsonObject }, { requiredKeys: ['id', 'cluster'] }),
    resourceNames: fc.array(str, { maxLength: 3 }),
    typeUrl: str,
    responseNonce: str,
    errorDetail: fc.record({ code: int32, message: str }),
  },
  { requiredKeys: ['versionInfo', 'resourceNames', 'typeUrl', 'responseNonce'] },
);
const discoveryResponseArb: fc.Arbitrary<DiscoveryResponseMsg> = fc.record({
  versionInfo: str,
  resources: fc.array(fc.record({ typeUrl: str, value: fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a)) }), { maxLength: 3 }),
  typeUrl: str,
  nonce: str,
});

/** A bucket id with unique keys (the decoder merges repeated keys, so only those round trip as sent). */
const bucketIdArb: fc.Arbitrary<BucketIdMsg> = fc
  .uniqueArray(fc.record({ key: str, value: str }), { maxLength: 4, selector: (e) => e.key })
  .map((entries) => entries.map((e) => ({ key: e.key, value: e.value })));
/** Whole seconds, or whole milliseconds below 10^6 s: both survive the seconds+nanos split exactly. */
const durationArb = fc.oneof(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.integer({ min: 0, max: 1e9 }).map((ms) => ms / 1000));
const reportsArb: fc.Arbitrary<RateLimitQuotaUsageReportsMsg> = fc.record({
  domain: str,
  bucketQuotaUsages: fc.array(
    fc.record({
      bucketId: fc.option(bucketIdArb, { nil: undefined }),
      timeElapsed: fc.option(durationArb, { nil: undefined }),
      numRequestsAllowed: uint64,
      numRequestsDenied: uint64,
    }),
    { maxLength: 5 },
  ),
});
const strategyArb: fc.Arbitrary<RateLimitStrategyMsg> = fc.oneof(
  fc.record({ kind: fc.constant('blanket_rule' as const), blanketRule: int32 }),
  fc.record({ kind: fc.constant('requests_per_time_unit' as const), requestsPerTimeUnit: uint64, timeUnit: int32 }),
  fc.record({
    kind: fc.constant('token_bucket' as const),
    tokenBucket: fc.record({ maxTokens: uint32, tokensPerFill: fc.option(uint32, { nil: undefined }), fillInterval: fc.option(durationArb, { nil: undefined }) }),
  }),
  fc.constant({ kind: 'none' as const }),
);
const quotaResponseArb: fc.Arbitrary<RateLimitQuotaResponseMsg> = fc.record({
  bucketAction: fc.array(
    fc.record({
      bucketId: fc.option(bucketIdArb, { nil: undefined }),
      action: fc.oneof(
        fc.constant(undefined),
        fc.constant({ kind: 'abandon' as const }),
        fc.record({
          kind: fc.constant('quota_assignment' as const),
          assignmentTimeToLive: fc.option(durationArb, { nil: undefined }),
          rateLimitStrategy: fc.option(strategyArb, { nil: undefined }),
        }),
      ),
    }),
    { maxLength: 5 },
  ),
});

interface Decoder {
  name: string;
  decode: (b: Uint8Array) => unknown;
  valid: fc.Arbitrary<Uint8Array>;
}
const decoders: Decoder[] = [
  { name: 'RateLimitRequest', decode: decodeRateLimitRequest, valid: requestArb.map((m) => encodeRateLimitRequest(m)) },
  { name: 'RateLimitResponse', decode: decodeRateLimitResponse, valid: responseArb.map((m) => encodeRateLimitResponse(m)) },
  { name: 'RateLimitQuotaUsageReports', decode: decodeRateLimitQuotaUsageReports, valid: reportsArb.map((m) => encodeRateLimitQuotaUsageReports(m)) },
  { name: 'RateLimitQuotaResponse', decode: decodeRateLimitQuotaResponse, valid: quotaResponseArb.map((m) => encodeRateLimitQuotaResponse(m)) },
  { name: 'HealthCheckRequest', decode: decodeHealthCheckRequest, valid: str.map((service) => encodeHealthCheckRequest({ service })) },
  { name: 'HealthCheckResponse', decode: decodeHealthCheckResponse, valid: fc.constantFrom(Buffer.from([8, 1]), Buffer.from([8, 2])) },
  { name: 'RateLimitConfig (xDS)', decode: decodeRateLimitConfig, valid: configArb.map((m) => encodeRateLimitConfig(m)) },
  { name: 'DiscoveryRequest (xDS)', decode: decodeDiscoveryRequest, valid: discoveryRequestArb.map((m) => encodeDiscoveryRequest(m)) },
  { name: 'DiscoveryResponse (xDS)', decode: decodeDiscoveryResponse, valid: discoveryResponseArb.map((m) => encodeDiscoveryResponse(m)) },
];

/** Nodes of a decoded value (objects, arrays, primitives) plus string lengths: what decoding allocated. */
function weight(v: unknown): number {
  if (typeof v === 'string') return 1 + v.length;
  if (v instanceof Uint8Array) return 1 + v.length;
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + weight(x), 1);
  if (typeof v === 'object' && v !== null) return Object.values(v).reduce((n: number, x) => n + weight(x), 1);
  return 1;
}

/** A deep copy with ordinary prototypes (fast-check builds null-prototype records; deepEqual compares prototypes). */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** The request and report decoders also refuse input beyond their default limits, with their own typed errors. */
const isTypedError = (err: unknown): boolean => isProtoDecodeError(err) || isRequestLimitError(err) || isRlqsLimitError(err);

function decodeOrTyped(d: Decoder, bytes: Uint8Array): void {
  const r = valueOrTyped(() => d.decode(bytes), isTypedError);
  if (r.ok && d.decode === decodeRateLimitRequest) {
    const req = r.value as RateLimitRequestMsg;
    assert.ok(req.descriptors.length <= DEFAULT_REQUEST_LIMITS.maxDescriptors);
    for (const desc of req.descriptors) assert.ok(desc.entries.length <= DEFAULT_REQUEST_LIMITS.maxEntriesPerDescriptor);
  }
  if (r.ok && d.decode === decodeRateLimitQuotaUsageReports) {
    const rep = r.value as RateLimitQuotaUsageReportsMsg;
    const L = DEFAULT_RLQS_REPORT_LIMITS;
    assert.ok(rep.bucketQuotaUsages.length <= L.maxBucketsPerReport);
    assert.ok(Buffer.byteLength(rep.domain) <= L.maxDomainBytes);
    for (const u of rep.bucketQuotaUsages) {
      const id = u.bucketId ?? [];
      assert.ok(id.length <= L.maxBucketIdEntries);
      assert.equal(new Set(id.map((e) => e.key)).size, id.length, 'bucket id keys are unique');
      for (const e of id) assert.ok(Buffer.byteLength(e.key) + Buffer.byteLength(e.value) <= L.maxBucketEntryBytes);
    }
  }
  // Every field costs at least one byte of tag and one of value, a message its two-byte header;
  // the constant covers the fixed shape of an empty message.
  if (r.ok) assert.ok(weight(r.value) <= 8 * bytes.length + 24, `${d.name}: ${weight(r.value)} from ${bytes.length} bytes`);
}

describe('protobuf round trips', () => {
  test('RateLimitRequest', () => {
    fc.assert(
      fc.property(requestArb, (m) => {
        assert.deepEqual(plain(decodeRateLimitRequest(encodeRateLimitRequest(m))), plain(m));
      }),
      fcOptions(500),
    );
  });
  test('RateLimitResponse', () => {
    fc.assert(
      fc.property(responseArb, (m) => {
        assert.deepEqual(plain(decodeRateLimitResponse(encodeRateLimitResponse(m))), plain(m));
      }),
      fcOptions(400),
    );
  });
  test('RateLimitQuotaUsageReports and RateLimitQuotaResponse (RLQS)', () => {
    fc.assert(
      fc.property(reportsArb, (m) => {
        assert.deepEqual(plain(decodeRateLimitQuotaUsageReports(encodeRateLimitQuotaUsageReports(m))), plain(m));
      }),
      fcOptions(500),
    );
    fc.assert(
      fc.property(quotaResponseArb, (m) => {
        assert.deepEqual(plain(decodeRateLimitQuotaResponse(encodeRateLimitQuotaResponse(m))), plain(m));
      }),
      fcOptions(500),
    );
  });
  test('RateLimitConfig, DiscoveryRequest, DiscoveryResponse (xDS)', () => {
    fc.assert(
      fc.property(configArb, (m) => {
        assert.deepEqual(plain(decodeRateLimitConfig(encodeRateLimitConfig(m))), plain(m));
      }),
      fcOptions(150),
    );
    fc.assert(
      fc.property(discoveryRequestArb, (m) => {
        assert.deepEqual(plain(decodeDiscoveryRequest(encodeDiscoveryRequest(m))), plain(m));
      }),
      fcOptions(150),
    );
    fc.assert(
      fc.property(discoveryResponseArb, (m) => {
        assert.deepEqual(plain(decodeDiscoveryResponse(encodeDiscoveryResponse(m))), plain(m));
      }),
      fcOptions(150),
    );
  });
});

describe('protobuf decoders on hostile input: a message or ProtoDecodeError, bounded', () => {
  for (const d of decoders) {
    const runs = d.name.includes('xDS') ? 400 : 1500;
    test(`${d.name}: random bytes`, () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 64 }), (b) => decodeOrTyped(d, b)),
        fcOptions(runs),
      );
    });
    test(`${d.name}: damaged valid encodings`, () => {
      fc.assert(
        fc.property(mutatedArb(d.valid), (b) => decodeOrTyped(d, b)),
        fcOptions(runs),
      );
    });
  }

  test('length prefixes claiming up to 2^64 bytes are refused before allocation', () => {
    const before = process.memoryUsage();
    fc.assert(
      fc.property(
        fc.constantFrom(...decoders),
        fc.integer({ min: 1, max: 15 }),
        fc.bigInt({ min: 4n, max: (1n << 64n) - 1n }),
        fc.constantFrom(0x7fffffffn, 0xffffffffn, 1n << 40n),
        (d, field, claimed, alt) => {
          for (const len of [claimed, alt]) {
            // A length-delimited field whose prefix claims `len` bytes, followed by three.
            const bytes = Buffer.from([(field << 3) | 2, ...varintBytes(len), 1, 2, 3]);
            const r = valueOrTyped(() => d.decode(bytes), isProtoDecodeError);
            assert.ok(!r.ok, `${d.name}: field ${field} claiming ${len} bytes decoded`);
            const err = r.err as ProtoDecodeError;
            assert.ok(err.code === 'truncated' || err.code === 'malformed', `${d.name}: ${err.code} ${err.message}`);
          }
        },
      ),
      fcOptions(600),
    );
    const after = process.memoryUsage();
    const grew = after.arrayBuffers + after.heapUsed - (before.arrayBuffers + before.heapUsed);
    assert.ok(grew < 256 * 1024 * 1024, `memory grew by ${grew} bytes`);
  });

  test('nesting 10 to 100000 deep (groups, Struct, config descriptors) is too_deep or decodes, never a stack overflow', () => {
    // Built inside out, each level's prefix written in front of the previous ones (wrapping
    // level by level would copy quadratically).
    const nest = (depth: number, prefix: (innerLen: number) => number[]): Buffer => {
      const buf = Buffer.alloc(depth * 24);
      let start = buf.length;
      for (let i = 0; i < depth; i++) {
        const p = prefix(buf.length - start);
        start -= p.length;
        for (let j = 0; j < p.length; j++) buf[start + j] = p[j]!;
      }
      return buf.subarray(start);
    };
    const lenOf = (n: number): number[] => {
      const out: number[] = [];
      while (n >= 0x80) {
        out.push((n & 0x7f) | 0x80);
        n = Math.floor(n / 0x80);
      }
      out.push(n);
      return out;
    };
    fc.assert(
      fc.property(fc.integer({ min: 10, max: 100_000 }), (depth) => {
        // Struct: RateLimitResponse.dynamic_metadata (6) { fields (1) { key "k", value (2) { struct_value (5) { ... } } } }
        const meta = nest(depth, (n) => {
          const sv = [0x2a, ...lenOf(n)];
          const value = [0x12, ...lenOf(sv.length + n)];
          const entry = [0x0a, 0x01, 0x6b, ...value, ...sv];
          return [0x0a, ...lenOf(entry.length + n), ...entry];
        });
        const metaMsg = Buffer.concat([Buffer.from([0x32, ...lenOf(meta.length)]), meta]);
        // RateLimitConfig.descriptors (3) { descriptors (4) { ... } }
        const c = nest(depth, (n) => [0x22, ...lenOf(n)]);
        const config = Buffer.concat([Buffer.from([0x1a, ...lenOf(c.length)]), c]);
        // Groups of an unknown field 9: start (0x4b) ... end (0x4c).
        const groups = Buffer.concat([Buffer.alloc(depth, 0x4b), Buffer.alloc(depth, 0x4c)]);
        for (const [decode, bytes] of [
          [decodeRateLimitResponse, metaMsg],
          [decodeRateLimitConfig, config],
          [decodeRateLimitRequest, groups],
          [decodeRateLimitQuotaUsageReports, groups],
          [decodeRateLimitQuotaResponse, groups],
          [decodeRateLimitConfig, groups],
          [decodeDiscoveryResponse, groups],
        ] as const) {
          const r = valueOrTyped(() => decode(bytes), isProtoDecodeError);
          if (!r.ok) assert.equal((r.err as ProtoDecodeError).code, 'too_deep', (r.err as Error).message);
          else assert.ok(depth <= 100, `depth ${depth} accepted`);
        }
      }),
      fcOptions(40),
    );
  });

  test('truncated strings and known fields with a foreign wire type are refused by the xDS decoders (protobufjs alone accepts them)', () => {
    // name (1) claims 5 bytes, 1 present.
    assert.throws(() => decodeRateLimitConfig(Buffer.from([0x0a, 0x05, 0x61])), (e: unknown) => e instanceof ProtoDecodeError && e.code === 'truncated');
    // DiscoveryResponse.canary (3, bool) sent as length-delimited.
    assert.throws(() => decodeDiscoveryResponse(Buffer.from([0x1a, 0x01, 0x01])), (e: unknown) => e instanceof ProtoDecodeError && e.code === 'malformed');
    // Invalid UTF-8 in a string field, as the hand-coded decoders refuse it.
    assert.throws(() => decodeDiscoveryRequest(Buffer.from([0x0a, 0x02, 0xc3, 0x28])), (e: unknown) => e instanceof ProtoDecodeError && e.code === 'invalid_utf8');
  });
});
