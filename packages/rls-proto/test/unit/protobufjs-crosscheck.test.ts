// Proves the hand-coded codecs wire-identical to protobufjs reading the same .proto files:
// many seeded random messages, encoded by one side and decoded by the other, both directions.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import type protobuf from 'protobufjs';
import { loadProtobufRoot, prng } from './protobufjs-root.js';
import {
  decodeRateLimitRequest,
  decodeRateLimitResponse,
  encodeRateLimitRequest,
  encodeRateLimitResponse,
  decodeHealthCheckRequest,
  encodeHealthCheckResponse,
  type JsonValue,
  type RateLimitRequestMsg,
  type RateLimitResponseMsg,
  type RlsCodeNumber,
} from '../../src/index.js';

const SEED = 20260705;
const ROUNDS = 400;

type Rand = () => number;
const int = (r: Rand, n: number): number => Math.floor(r() * n);
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[int(r, xs.length)]!;

const alphabet = ['a', 'b', 'Z', '0', '_', '-', '.', ' ', 'é', 'ü', '中', '😀', '\u0000', '/'];
function randString(r: Rand, max = 12): string {
  const n = int(r, max + 1);
  let s = '';
  for (let i = 0; i < n; i++) s += pick(r, alphabet);
  return s;
}
function randUint32(r: Rand): number {
  return pick(r, [0, 1, 127, 128, 16383, 16384, 2 ** 31 - 1, 2 ** 31, 4294967295, int(r, 4294967296)]);
}
function randUint64(r: Rand): number {
  return pick(r, [0, 1, 300, 4294967295, 4294967296, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER, int(r, 2 ** 45)]);
}
function randJson(r: Rand, depth: number): JsonValue {
  const k = int(r, depth > 2 ? 4 : 6);
  switch (k) {
    case 0:
      return null;
    case 1:
      return pick(r, [0, 1.5, -2, 1e300, 3.14159, -0.001]);
    case 2:
      return randString(r);
    case 3:
      return r() < 0.5;
    case 4:
      return Array.from({ length: int(r, 4) }, () => randJson(r, depth + 1));
    default:
      return randStruct(r, depth + 1);
  }
}
function randStruct(r: Rand, depth: number): { [k: string]: JsonValue } {
  const out: { [k: string]: JsonValue } = {};
  const n = int(r, 4);
  for (let i = 0; i < n; i++) out[`k${randString(r, 4)}`] = randJson(r, depth);
  return out;
}

function randRequest(r: Rand): RateLimitRequestMsg {
  return {
    domain: randString(r),
    descriptors: Array.from({ length: int(r, 4) }, () => ({
      entries: Array.from({ length: int(r, 4) }, () => ({ key: randString(r), value: randString(r) })),
      limit: r() < 0.4 ? { requestsPerUnit: randUint32(r), unit: int(r, 8) } : undefined,
      hitsAddend: r() < 0.5 ? randUint64(r) : undefined,
    })),
    hitsAddend: randUint32(r),
  };
}

function randResponse(r: Rand): RateLimitResponseMsg {
  const code = (): RlsCodeNumber => pick(r, [0, 1, 2] as const);
  const res: RateLimitResponseMsg = {
    overallCode: code(),
    statuses: Array.from({ length: int(r, 4) }, () => ({
      code: code(),
      currentLimit: r() < 0.6 ? { requestsPerUnit: randUint32(r), unit: int(r, 8), name: r() < 0.3 ? randString(r) : '' } : undefined,
      limitRemaining: randUint32(r),
      durationUntilReset: r() < 0.6 ? pick(r, [0, 1, 37, 86400, 2 ** 40, 1.5, 0.25]) : undefined,
    })),
    responseHeadersToAdd: Array.from({ length: int(r, 3) }, () => ({ key: randString(r), value: randString(r) })),
  };
  if (r() < 0.4) res.dynamicMetadata = randStruct(r, 0);
  if (r() < 0.2) res.requestHeadersToAdd = [{ key: randString(r), value: randString(r), rawValue: new Uint8Array([1, int(r, 256)]) }];
  if (r() < 0.2) res.rawBody = new Uint8Array(Array.from({ length: 1 + int(r, 5) }, () => int(r, 256)));
  return res;
}

// ---- shape conversions between our messages and protobufjs plain objects ----

type Plain = Record<string, unknown>;
const num = (v: unknown): number => (v === undefined || v === null ? 0 : Number(v));

function jsonToPbValue(v: JsonValue): Plain {
  if (v === null) return { nullValue: 0 };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(jsonToPbValue) } };
  return { structValue: jsonToPbStruct(v) };
}
function jsonToPbStruct(o: { [k: string]: JsonValue }): Plain {
  const fields: Plain = {};
  for (const [k, v] of Object.entries(o)) fields[k] = jsonToPbValue(v);
  return { fields };
}
function pbValueToJson(v: Plain): JsonValue {
  if ('numberValue' in v) return v.numberValue as number;
  if ('stringValue' in v) return v.stringValue as string;
  if ('boolValue' in v) return v.boolValue as boolean;
  if ('listValue' in v) return (((v.listValue as Plain).values as Plain[] | undefined) ?? []).map(pbValueToJson);
  if ('structValue' in v) return pbStructToJson(v.structValue as Plain);
  return null;
}
function pbStructToJson(s: Plain): { [k: string]: JsonValue } {
  const out: { [k: string]: JsonValue } = {};
  for (const [k, v] of Object.entries((s.fields as Record<string, Plain> | undefined) ?? {})) out[k] = pbValueToJson(v);
  return out;
}
function durationToPb(d: number): Plain {
  const seconds = Math.trunc(d);
  return { seconds, nanos: Math.round((d - seconds) * 1e9) };
}

function requestToPb(m: RateLimitRequestMsg): Plain {
  return {
    domain: m.domain,
    hitsAddend: m.hitsAddend,
    descriptors: m.descriptors.map((d) => ({
      entries: d.entries,
      ...(d.limit !== undefined ? { limit: d.limit } : {}),
      ...(d.hitsAddend !== undefined ? { hitsAddend: { value: d.hitsAddend } } : {}),
    })),
  };
}
function requestFromPb(p: Plain): RateLimitRequestMsg {
  return {
    domain: (p.domain as string | undefined) ?? '',
    hitsAddend: num(p.hitsAddend),
    descriptors: ((p.descriptors as Plain[] | undefined) ?? []).map((d) => ({
      entries: ((d.entries as Plain[] | undefined) ?? []).map((e) => ({ key: (e.key as string | undefined) ?? '', value: (e.value as string | undefined) ?? '' })),
      limit: d.limit === undefined ? undefined : { requestsPerUnit: num((d.limit as Plain).requestsPerUnit), unit: num((d.limit as Plain).unit) },
      hitsAddend: d.hitsAddend === undefined ? undefined : num((d.hitsAddend as Plain).value),
    })),
  };
}
function headersToPb(hs: RateLimitResponseMsg['responseHeadersToAdd']): Plain[] {
  return hs.map((h) => ({ key: h.key, value: h.value, ...(h.rawValue !== undefined ? { rawValue: h.rawValue } : {}) }));
}
function headersFromPb(hs: unknown): RateLimitResponseMsg['responseHeadersToAdd'] {
  return ((hs as Plain[] | undefined) ?? []).map((h) => ({
    key: (h.key as string | undefined) ?? '',
    value: (h.value as string | undefined) ?? '',
    ...(h.rawValue !== undefined ? { rawValue: new Uint8Array(h.rawValue as Uint8Array) } : {}),
  }));
}
function responseToPb(m: RateLimitResponseMsg): Plain {
  const out: Plain = {
    overallCode: m.overallCode,
    statuses: m.statuses.map((s) => ({
      code: s.code,
      limitRemaining: s.limitRemaining,
      ...(s.currentLimit !== undefined ? { currentLimit: s.currentLimit } : {}),
      ...(s.durationUntilReset !== undefined ? { durationUntilReset: durationToPb(s.durationUntilReset) } : {}),
    })),
    responseHeadersToAdd: headersToPb(m.responseHeadersToAdd),
  };
  if (m.requestHeadersToAdd !== undefined) out.requestHeadersToAdd = headersToPb(m.requestHeadersToAdd);
  if (m.rawBody !== undefined) out.rawBody = m.rawBody;
  if (m.dynamicMetadata !== undefined) out.dynamicMetadata = jsonToPbStruct(m.dynamicMetadata);
  return out;
}
function responseFromPb(p: Plain): RateLimitResponseMsg {
  const out: RateLimitResponseMsg = {
    overallCode: num(p.overallCode) as RlsCodeNumber,
    statuses: ((p.statuses as Plain[] | undefined) ?? []).map((s) => {
      const cl = s.currentLimit as Plain | undefined;
      const d = s.durationUntilReset as Plain | undefined;
      return {
        code: num(s.code) as RlsCodeNumber,
        currentLimit: cl === undefined ? undefined : { requestsPerUnit: num(cl.requestsPerUnit), unit: num(cl.unit), name: (cl.name as string | undefined) ?? '' },
        limitRemaining: num(s.limitRemaining),
        durationUntilReset: d === undefined ? undefined : num(d.seconds) + num(d.nanos) / 1e9,
      };
    }),
    responseHeadersToAdd: headersFromPb(p.responseHeadersToAdd),
  };
  if (p.requestHeadersToAdd !== undefined) out.requestHeadersToAdd = headersFromPb(p.requestHeadersToAdd);
  if (p.rawBody !== undefined) out.rawBody = new Uint8Array(p.rawBody as Uint8Array);
  if (p.dynamicMetadata !== undefined) out.dynamicMetadata = pbStructToJson(p.dynamicMetadata as Plain);
  return out;
}

const toObjectOpts: protobuf.IConversionOptions = { longs: Number, enums: Number, bytes: Array, defaults: false, oneofs: false };

describe('hand-coded codec vs protobufjs', () => {
  let ReqType: protobuf.Type;
  let ResType: protobuf.Type;
  let HcReq: protobuf.Type;
  let HcRes: protobuf.Type;

  before(async () => {
    const root = await loadProtobufRoot();
    ReqType = root.lookupType('envoy.service.ratelimit.v3.RateLimitRequest');
    ResType = root.lookupType('envoy.service.ratelimit.v3.RateLimitResponse');
    HcReq = root.lookupType('grpc.health.v1.HealthCheckRequest');
    HcRes = root.lookupType('grpc.health.v1.HealthCheckResponse');
  });

  test(`RateLimitRequest: ours → protobufjs and protobufjs → ours (${ROUNDS} seeded messages, seed ${SEED})`, () => {
    const r = prng(SEED);
    for (let i = 0; i < ROUNDS; i++) {
      const msg = randRequest(r);
      const viaPbjs = requestFromPb(ReqType.toObject(ReqType.decode(encodeRateLimitRequest(msg)), toObjectOpts));
      assert.deepEqual(viaPbjs, msg, `round ${i}: ours → protobufjs`);
      const pbBytes = ReqType.encode(ReqType.fromObject(requestToPb(msg))).finish();
      assert.deepEqual(decodeRateLimitRequest(pbBytes), msg, `round ${i}: protobufjs → ours`);
    }
  });

  test(`RateLimitResponse: ours → protobufjs and protobufjs → ours (${ROUNDS} seeded messages, seed ${SEED})`, () => {
    const r = prng(SEED + 1);
    for (let i = 0; i < ROUNDS; i++) {
      const msg = randResponse(r);
      const pbMsg = ResType.decode(encodeRateLimitResponse(msg));
      assert.deepEqual(responseFromPb(ResType.toObject(pbMsg, { ...toObjectOpts, bytes: Uint8Array } as protobuf.IConversionOptions)), msg, `round ${i}: ours → protobufjs`);
      const pbBytes = ResType.encode(ResType.fromObject(responseToPb(msg))).finish();
      assert.deepEqual(decodeRateLimitResponse(pbBytes), msg, `round ${i}: protobufjs → ours`);
    }
  });

  test('hits_addend presence survives both ways (0 present vs absent)', () => {
    const pbPresent = ReqType.encode(ReqType.fromObject({ domain: 'd', descriptors: [{ entries: [], hitsAddend: { value: 0 } }] })).finish();
    const pbAbsent = ReqType.encode(ReqType.fromObject({ domain: 'd', descriptors: [{ entries: [] }] })).finish();
    assert.equal(decodeRateLimitRequest(pbPresent).descriptors[0]!.hitsAddend, 0);
    assert.equal(decodeRateLimitRequest(pbAbsent).descriptors[0]!.hitsAddend, undefined);
    const ours = ReqType.decode(encodeRateLimitRequest({ domain: 'd', descriptors: [{ entries: [], hitsAddend: 0 }], hitsAddend: 0 })) as unknown as { descriptors: Array<{ hitsAddend?: unknown }> };
    assert.ok(ours.descriptors[0]!.hitsAddend !== undefined && ours.descriptors[0]!.hitsAddend !== null);
  });

  test('WEEK (7) and the RateLimit name (field 3) read back by protobufjs with enum names', () => {
    const bytes = encodeRateLimitResponse({
      overallCode: 2,
      statuses: [{ code: 2, currentLimit: { requestsPerUnit: 3, unit: 7, name: 'weekly' }, limitRemaining: 0, durationUntilReset: 58 }],
      responseHeadersToAdd: [],
    });
    const obj = ResType.toObject(ResType.decode(bytes), { enums: String, longs: Number });
    assert.deepEqual(obj, {
      overallCode: 'OVER_LIMIT',
      statuses: [{ code: 'OVER_LIMIT', currentLimit: { requestsPerUnit: 3, unit: 'WEEK', name: 'weekly' }, durationUntilReset: { seconds: 58 } }],
    });
  });

  test('unknown fields written by a newer protobufjs schema are skipped', () => {
    // is_negative_hits is in our proto but ignored by the decoder; protobufjs writes it.
    const bytes = ReqType.encode(ReqType.fromObject({ domain: 'x', descriptors: [{ entries: [{ key: 'k', value: 'v' }], isNegativeHits: true }] })).finish();
    assert.deepEqual(decodeRateLimitRequest(bytes), { domain: 'x', descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: undefined, hitsAddend: undefined }], hitsAddend: 0 });
  });

  test('health messages agree with protobufjs', () => {
    assert.deepEqual(decodeHealthCheckRequest(HcReq.encode({ service: 'ratelimit' }).finish()), { service: 'ratelimit' });
    for (const status of [0, 1, 2, 3]) {
      assert.deepEqual(HcRes.toObject(HcRes.decode(encodeHealthCheckResponse({ status })), { enums: Number, defaults: true }), { status });
    }
  });
});
