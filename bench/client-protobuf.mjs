#!/usr/bin/env node
// Protobuf codecs: @rls/rls-proto's hand-written RateLimitRequest/Response codecs against
// protobufjs (what @grpc/proto-loader uses) loaded from the same .proto files. One op is the
// server's share of a ShouldRateLimit call: decode a realistic request (3 descriptors of 2–3
// entries, one with hits_addend and a limit override) and encode a realistic response (3 statuses
// with current limit and duration until reset, the x-ratelimit-* headers). Before measuring, each
// side's request bytes are decoded by the other codec and compared, and both must encode the
// response to the same bytes, so both do the same work.
// protobufjs gets its fastest use: Type.decode to its message class, Type.encode of a plain object
// (no create/verify).
//
//   node --conditions=source --import tsx bench/client-protobuf.mjs
//   env: ROUNDS (3) DURATION (s per run, 2) MODE (both | decode | encode) ONLY (comma list)
import { deepStrictEqual } from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { alternate, childRequest, envNumber, reportAndExit, syncLoop } from './lib/alternate.mjs';

const REQUEST = {
  domain: 'edge_proxy_per_ip',
  hitsAddend: 1,
  descriptors: [
    { entries: [{ key: 'remote_address', value: '203.0.113.57' }, { key: 'path', value: '/api/v2/crypto' }] },
    {
      entries: [{ key: 'generic_key', value: 'quotes-api' }, { key: 'header_match', value: 'authenticated' }, { key: 'plan', value: 'pro' }],
      hitsAddend: 2,
    },
    { entries: [{ key: 'destination_cluster', value: 'quotes_backend' }, { key: 'source_cluster', value: 'edge' }], limit: { requestsPerUnit: 500, unit: 2 } },
  ],
};
const RESPONSE = {
  overallCode: 1,
  statuses: [
    { code: 1, currentLimit: { requestsPerUnit: 100, unit: 2, name: 'per_ip' }, limitRemaining: 63, durationUntilReset: 37 },
    { code: 1, currentLimit: { requestsPerUnit: 10000, unit: 3, name: 'pro_plan' }, limitRemaining: 9512, durationUntilReset: 1837 },
    { code: 1, currentLimit: { requestsPerUnit: 500, unit: 2, name: '' }, limitRemaining: 121, durationUntilReset: 37 },
  ],
  responseHeadersToAdd: [
    { key: 'x-ratelimit-limit', value: '100, 100;w=60' },
    { key: 'x-ratelimit-remaining', value: '63' },
    { key: 'x-ratelimit-reset', value: '37' },
  ],
};

/**
 * The same response as protobufjs's plain-object form (Duration as seconds). Fields at their
 * default are left out: protobufjs writes every field present, proto3 writers skip defaults.
 */
function toProtobufjs(res) {
  return {
    overallCode: res.overallCode,
    statuses: res.statuses.map((s) => ({
      code: s.code,
      // undefined (not absent) keeps one object shape; protobufjs skips it as absent.
      currentLimit: { requestsPerUnit: s.currentLimit.requestsPerUnit, unit: s.currentLimit.unit, name: s.currentLimit.name !== '' ? s.currentLimit.name : undefined },
      limitRemaining: s.limitRemaining,
      durationUntilReset: { seconds: s.durationUntilReset },
    })),
    responseHeadersToAdd: res.responseHeadersToAdd,
  };
}

// MODE=decode or encode measures one half alone (the op then returns the request or the answer).
const CANDIDATES = {
  'rls-proto': async (mode) => {
    const { decodeRateLimitRequest, encodeRateLimitResponse } = await import('@rls/rls-proto');
    if (mode === 'decode') return (bytes) => (decodeRateLimitRequest(bytes), bytes);
    if (mode === 'encode') return () => encodeRateLimitResponse(RESPONSE);
    return (bytes) => {
      decodeRateLimitRequest(bytes);
      return encodeRateLimitResponse(RESPONSE);
    };
  },
  protobufjs: async (mode) => {
    const { loadRls } = await import('./servers/proto.mjs');
    const { Req, Res } = loadRls();
    const res = toProtobufjs(RESPONSE);
    if (mode === 'decode') return (bytes) => (Req.decode(bytes), bytes);
    if (mode === 'encode') return () => Res.encode(res).finish();
    return (bytes) => {
      Req.decode(bytes);
      return Res.encode(res).finish();
    };
  },
};

/** Both codecs read each other's bytes back to the same messages. */
async function crossCheck() {
  const rp = await import('@rls/rls-proto');
  const { loadRls } = await import('./servers/proto.mjs');
  const { Req, Res } = loadRls();
  const ourReq = rp.encodeRateLimitRequest(REQUEST);
  const theirReq = Req.toObject(Req.decode(ourReq), { longs: Number });
  deepStrictEqual(rp.decodeRateLimitRequest(Req.encode(theirReq).finish()), rp.decodeRateLimitRequest(ourReq));
  // The responses must be the same bytes.
  const ourRes = Buffer.from(rp.encodeRateLimitResponse(RESPONSE));
  deepStrictEqual(Buffer.from(Res.encode(toProtobufjs(RESPONSE)).finish()), ourRes);
  return { request: ourReq, responseBytes: ourRes.length };
}

const child = childRequest();
if (child !== undefined) {
  const { request, responseBytes } = await crossCheck();
  const op = await CANDIDATES[child.name](child.context.mode);
  const r = syncLoop({ op: () => op(request), seconds: child.context.seconds });
  reportAndExit({ ...r, requestBytes: request.length, responseBytes });
}

const only = (process.env.ONLY ?? '').split(',').filter((x) => x !== '');
const context = { seconds: envNumber('DURATION', 2), mode: process.env.MODE ?? 'both' };
await alternate({
  title: `${context.mode === 'both' ? 'RateLimitRequest decode + RateLimitResponse encode' : context.mode === 'decode' ? 'RateLimitRequest decode' : 'RateLimitResponse encode'} (3 descriptors, 3 statuses, 3 headers), ${context.seconds} s per run`,
  self: fileURLToPath(import.meta.url),
  candidates: only.length > 0 ? only : Object.keys(CANDIDATES),
  rounds: envNumber('ROUNDS', 3),
  context,
  unit: 'call',
  extraColumns: [{ label: 'bytes in/out', value: (r) => `${r.requestBytes}/${r.responseBytes}` }],
});
