// Proves the hand-coded RLQS codec (rlqs-codec.ts) wire-identical to protobufjs reading the same
// .proto files: seeded random messages in both directions, for both message types, plus the
// presence rules a proto3 oneof and map imply (blanket_rule ALLOW_ALL = 0 is still written; an
// empty abandon_action is still an action; map keys are unique).
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import type protobuf from 'protobufjs';
import { loadProtobufRoot, prng } from './protobufjs-root.js';
import {
  decodeRateLimitQuotaResponse,
  decodeRateLimitQuotaUsageReports,
  encodeRateLimitQuotaResponse,
  encodeRateLimitQuotaUsageReports,
  type BucketActionMsg,
  type BucketIdMsg,
  type RateLimitQuotaResponseMsg,
  type RateLimitQuotaUsageReportsMsg,
  type RateLimitStrategyMsg,
} from '../../src/index.js';
import { durationSeconds } from '../../src/duration-codec.js';

const SEED = 20261125;
const ROUNDS = 400;

type Rand = () => number;
const int = (r: Rand, n: number): number => Math.floor(r() * n);
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[int(r, xs.length)]!;
const alphabet = ['a', 'b', 'Z', '0', '_', '-', '.', ' ', 'é', '中', '😀', '\u0000', '/', '"', '[', ','];
function randString(r: Rand, max = 10): string {
  let s = '';
  for (let i = int(r, max + 1); i > 0; i--) s += pick(r, alphabet);
  return s;
}
const randUint64 = (r: Rand): number => pick(r, [0, 1, 127, 128, 4294967295, 4294967296, Number.MAX_SAFE_INTEGER, int(r, 2 ** 40)]);
const randUint32 = (r: Rand): number => pick(r, [0, 1, 300, 2 ** 31, 4294967295, int(r, 4294967296)]);
/** Whole seconds, or milliseconds of small ones: both survive the seconds+nanos split exactly. */
const randDuration = (r: Rand): number => pick(r, [0, 1, 5, 3600, 2 ** 40, 0.5, 0.001, 1.25, int(r, 100_000) / 1000, -2]);

/** Unique keys in random order (the decoder merges duplicates, protobufjs maps too). */
function randBucketId(r: Rand): BucketIdMsg {
  const n = int(r, 5);
  const out: BucketIdMsg = [];
  for (let i = 0; i < n; i++) {
    const key = `${randString(r, 4)}${i}`;
    out.push({ key, value: randString(r) });
  }
  return out;
}

function randReports(r: Rand): RateLimitQuotaUsageReportsMsg {
  return {
    domain: randString(r),
    bucketQuotaUsages: Array.from({ length: int(r, 5) }, () => ({
      bucketId: r() < 0.9 ? randBucketId(r) : undefined,
      timeElapsed: r() < 0.9 ? randDuration(r) : undefined,
      numRequestsAllowed: randUint64(r),
      numRequestsDenied: randUint64(r),
    })),
  };
}

function randStrategy(r: Rand): RateLimitStrategyMsg {
  switch (int(r, 4)) {
    case 0:
      return { kind: 'blanket_rule', blanketRule: pick(r, [0, 1]) };
    case 1:
      return { kind: 'requests_per_time_unit', requestsPerTimeUnit: randUint64(r), timeUnit: int(r, 7) };
    case 2:
      return {
        kind: 'token_bucket',
        tokenBucket: {
          maxTokens: randUint32(r),
          tokensPerFill: r() < 0.7 ? randUint32(r) : undefined,
          fillInterval: r() < 0.8 ? randDuration(r) : undefined,
        },
      };
    default:
      return { kind: 'none' };
  }
}

function randResponse(r: Rand): RateLimitQuotaResponseMsg {
  return {
    bucketAction: Array.from({ length: int(r, 5) }, (): BucketActionMsg => {
      const k = int(r, 5);
      return {
        bucketId: r() < 0.9 ? randBucketId(r) : undefined,
        action:
          k === 0
            ? { kind: 'abandon' }
            : k === 1
              ? undefined
              : {
                  kind: 'quota_assignment',
                  assignmentTimeToLive: r() < 0.8 ? randDuration(r) : undefined,
                  rateLimitStrategy: r() < 0.9 ? randStrategy(r) : undefined,
                },
      };
    }),
  };
}

// ---- our messages <-> protobufjs plain objects ----

type Plain = Record<string, unknown>;
const num = (v: unknown): number => (v === undefined || v === null ? 0 : Number(v));
const durToPb = (d: number): Plain => {
  const seconds = Math.trunc(d);
  return { seconds, nanos: Math.round((d - seconds) * 1e9) };
};
const durFromPb = (p: unknown): number | undefined => (p === undefined || p === null ? undefined : durationSeconds(num((p as Plain).seconds), num((p as Plain).nanos)));
const idToPb = (id: BucketIdMsg): Plain => ({ bucket: Object.fromEntries(id.map((e) => [e.key, e.value])) });
const idFromPb = (p: unknown): BucketIdMsg | undefined =>
  p === undefined || p === null ? undefined : Object.entries(((p as Plain).bucket as Record<string, string> | undefined) ?? {}).map(([key, value]) => ({ key, value }));

function reportsToPb(m: RateLimitQuotaUsageReportsMsg): Plain {
  return {
    domain: m.domain,
    bucketQuotaUsages: m.bucketQuotaUsages.map((u) => ({
      ...(u.bucketId !== undefined ? { bucketId: idToPb(u.bucketId) } : {}),
      ...(u.timeElapsed !== undefined ? { timeElapsed: durToPb(u.timeElapsed) } : {}),
      numRequestsAllowed: u.numRequestsAllowed,
      numRequestsDenied: u.numRequestsDenied,
    })),
  };
}
function reportsFromPb(p: Plain): RateLimitQuotaUsageReportsMsg {
  return {
    domain: (p.domain as string | undefined) ?? '',
    bucketQuotaUsages: ((p.bucketQuotaUsages as Plain[] | undefined) ?? []).map((u) => ({
      bucketId: idFromPb(u.bucketId),
      timeElapsed: durFromPb(u.timeElapsed),
      numRequestsAllowed: num(u.numRequestsAllowed),
      numRequestsDenied: num(u.numRequestsDenied),
    })),
  };
}
function strategyToPb(s: RateLimitStrategyMsg): Plain {
  switch (s.kind) {
    case 'blanket_rule':
      return { blanketRule: s.blanketRule };
    case 'requests_per_time_unit':
      return { requestsPerTimeUnit: { requestsPerTimeUnit: s.requestsPerTimeUnit, timeUnit: s.timeUnit } };
    case 'token_bucket': {
      const t = s.tokenBucket;
      return {
        tokenBucket: {
          maxTokens: t.maxTokens,
          ...(t.tokensPerFill !== undefined ? { tokensPerFill: { value: t.tokensPerFill } } : {}),
          ...(t.fillInterval !== undefined ? { fillInterval: durToPb(t.fillInterval) } : {}),
        },
      };
    }
    case 'none':
      return {};
  }
}
function strategyFromPb(p: Plain): RateLimitStrategyMsg {
  if (p.blanketRule !== undefined && p.blanketRule !== null) return { kind: 'blanket_rule', blanketRule: num(p.blanketRule) };
  const rptu = p.requestsPerTimeUnit as Plain | undefined;
  if (rptu !== undefined && rptu !== null) return { kind: 'requests_per_time_unit', requestsPerTimeUnit: num(rptu.requestsPerTimeUnit), timeUnit: num(rptu.timeUnit) };
  const tb = p.tokenBucket as Plain | undefined;
  if (tb !== undefined && tb !== null) {
    const tpf = tb.tokensPerFill as Plain | undefined;
    return {
      kind: 'token_bucket',
      tokenBucket: { maxTokens: num(tb.maxTokens), tokensPerFill: tpf === undefined || tpf === null ? undefined : num(tpf.value), fillInterval: durFromPb(tb.fillInterval) },
    };
  }
  return { kind: 'none' };
}
function responseToPb(m: RateLimitQuotaResponseMsg): Plain {
  return {
    bucketAction: m.bucketAction.map((b) => {
      const out: Plain = b.bucketId !== undefined ? { bucketId: idToPb(b.bucketId) } : {};
      const a = b.action;
      if (a?.kind === 'abandon') out.abandonAction = {};
      else if (a !== undefined) {
        out.quotaAssignmentAction = {
          ...(a.assignmentTimeToLive !== undefined ? { assignmentTimeToLive: durToPb(a.assignmentTimeToLive) } : {}),
          ...(a.rateLimitStrategy !== undefined ? { rateLimitStrategy: strategyToPb(a.rateLimitStrategy) } : {}),
        };
      }
      return out;
    }),
  };
}
function responseFromPb(p: Plain): RateLimitQuotaResponseMsg {
  return {
    bucketAction: ((p.bucketAction as Plain[] | undefined) ?? []).map((b): BucketActionMsg => {
      const qa = b.quotaAssignmentAction as Plain | undefined;
      let action: BucketActionMsg['action'];
      if (b.abandonAction !== undefined && b.abandonAction !== null) action = { kind: 'abandon' };
      else if (qa !== undefined && qa !== null) {
        action = {
          kind: 'quota_assignment',
          assignmentTimeToLive: durFromPb(qa.assignmentTimeToLive),
          rateLimitStrategy: qa.rateLimitStrategy === undefined || qa.rateLimitStrategy === null ? undefined : strategyFromPb(qa.rateLimitStrategy as Plain),
        };
      }
      return { bucketId: idFromPb(b.bucketId), action };
    }),
  };
}

/** Map order carries no meaning (and JS objects put integer-like keys first): compare ids sorted by key. */
const sortId = (id: BucketIdMsg | undefined): BucketIdMsg | undefined => (id === undefined ? undefined : [...id].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)));
const normReports = (m: RateLimitQuotaUsageReportsMsg): RateLimitQuotaUsageReportsMsg => ({
  ...m,
  bucketQuotaUsages: m.bucketQuotaUsages.map((u) => ({ ...u, bucketId: sortId(u.bucketId) })),
});
const normResponse = (m: RateLimitQuotaResponseMsg): RateLimitQuotaResponseMsg => ({ bucketAction: m.bucketAction.map((b) => ({ ...b, bucketId: sortId(b.bucketId) })) });

const toObjectOpts: protobuf.IConversionOptions = { longs: Number, enums: Number, defaults: false, oneofs: false };

describe('hand-coded RLQS codec vs protobufjs', () => {
  let Reports: protobuf.Type;
  let Response: protobuf.Type;

  before(async () => {
    const root = await loadProtobufRoot();
    Reports = root.lookupType('envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports');
    Response = root.lookupType('envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse');
  });

  test(`RateLimitQuotaUsageReports: ours → protobufjs and protobufjs → ours (${ROUNDS} seeded messages, seed ${SEED})`, () => {
    const r = prng(SEED);
    for (let i = 0; i < ROUNDS; i++) {
      const msg = randReports(r);
      assert.deepEqual(normReports(reportsFromPb(Reports.toObject(Reports.decode(encodeRateLimitQuotaUsageReports(msg)), toObjectOpts))), normReports(msg), `round ${i}: ours → protobufjs`);
      const pbBytes = Reports.encode(Reports.fromObject(reportsToPb(msg))).finish();
      assert.deepEqual(normReports(decodeRateLimitQuotaUsageReports(pbBytes)), normReports(msg), `round ${i}: protobufjs → ours`);
    }
  });

  test(`RateLimitQuotaResponse: ours → protobufjs and protobufjs → ours (${ROUNDS} seeded messages, seed ${SEED + 1})`, () => {
    const r = prng(SEED + 1);
    for (let i = 0; i < ROUNDS; i++) {
      const msg = randResponse(r);
      assert.deepEqual(normResponse(responseFromPb(Response.toObject(Response.decode(encodeRateLimitQuotaResponse(msg)), toObjectOpts))), normResponse(msg), `round ${i}: ours → protobufjs`);
      const pbBytes = Response.encode(Response.fromObject(responseToPb(msg))).finish();
      assert.deepEqual(normResponse(decodeRateLimitQuotaResponse(pbBytes)), normResponse(msg), `round ${i}: protobufjs → ours`);
    }
  });

  test('blanket_rule ALLOW_ALL (0) is written and read as set; an empty abandon_action is an abandon', () => {
    const bytes = encodeRateLimitQuotaResponse({
      bucketAction: [
        { bucketId: [{ key: 'name', value: 'a' }], action: { kind: 'quota_assignment', assignmentTimeToLive: 0, rateLimitStrategy: { kind: 'blanket_rule', blanketRule: 0 } } },
        { bucketId: [{ key: 'name', value: 'b' }], action: { kind: 'abandon' } },
      ],
    });
    const obj = Response.toObject(Response.decode(bytes), { enums: String, longs: Number, oneofs: true });
    assert.deepEqual(obj, {
      bucketAction: [
        {
          bucketId: { bucket: { name: 'a' } },
          quotaAssignmentAction: { assignmentTimeToLive: {}, rateLimitStrategy: { blanketRule: 'ALLOW_ALL', strategy: 'blanketRule' } },
          bucketAction: 'quotaAssignmentAction',
        },
        { bucketId: { bucket: { name: 'b' } }, abandonAction: {}, bucketAction: 'abandonAction' },
      ],
    });
  });

  test('a bucket_id sent twice merges (proto3 rule for a repeated message field); within it a repeated key keeps the last value', () => {
    // usage { bucket_id { bucket {k:"1"} bucket {k:"2"} } bucket_id { bucket {j:"x"} } }
    const entry = (k: string, v: string): number[] => [0x0a, 2 + k.length + 2 + v.length, 0x0a, k.length, ...Buffer.from(k), 0x12, v.length, ...Buffer.from(v)];
    const id1 = [...entry('k', '1'), ...entry('k', '2')];
    const id2 = entry('j', 'x');
    const usage = [0x0a, id1.length, ...id1, 0x0a, id2.length, ...id2];
    const bytes = Buffer.from([0x12, usage.length, ...usage]);
    // Envoy's C++ protobuf merges the two occurrences; protobufjs keeps only the second, so only
    // the single-occurrence half is compared with it.
    assert.deepEqual(decodeRateLimitQuotaUsageReports(bytes).bucketQuotaUsages[0]!.bucketId, [
      { key: 'k', value: '2' },
      { key: 'j', value: 'x' },
    ]);
    const single = Buffer.from([0x12, 2 + id1.length, 0x0a, id1.length, ...id1]);
    assert.deepEqual(reportsFromPb(Reports.toObject(Reports.decode(single), toObjectOpts)).bucketQuotaUsages[0]!.bucketId, [{ key: 'k', value: '2' }]);
    assert.deepEqual(decodeRateLimitQuotaUsageReports(single).bucketQuotaUsages[0]!.bucketId, [{ key: 'k', value: '2' }]);
  });
});
