// Hand-coded protobuf codec for the Rate Limit Quota Service (envoy.service.rate_limit_quota.v3).
// Field numbers (tags are written as literal bytes: (field << 3) | wire type):
//   RateLimitQuotaUsageReports: domain=1 string, bucket_quota_usages=2 msg
//     BucketQuotaUsage: bucket_id=1 BucketId, time_elapsed=2 Duration, num_requests_allowed=3 uint64,
//                       num_requests_denied=4 uint64
//   BucketId: bucket=1 map<string,string> (entries: key=1, value=2)
//   RateLimitQuotaResponse: bucket_action=1 msg
//     BucketAction: bucket_id=1, oneof {quota_assignment_action=2, abandon_action=3 (empty)}
//     QuotaAssignmentAction: assignment_time_to_live=2 Duration, rate_limit_strategy=3
//   RateLimitStrategy: oneof {blanket_rule=1 enum, requests_per_time_unit=2 msg, token_bucket=3 msg}
//     RequestsPerTimeUnit: requests_per_time_unit=1 uint64, time_unit=2 enum
//     TokenBucket: max_tokens=1 uint32, tokens_per_fill=2 UInt32Value, fill_interval=3 Duration
// Decoders follow proto3: last scalar wins, a repeated singular message merges, a oneof member
// replaces another, map keys are unique (last value wins), unknown fields are skipped. Encoders
// omit proto3 defaults except inside a oneof, where presence is the value (blanket_rule ALLOW_ALL
// is 0 and still written).
import type { Buffer } from 'node:buffer';
import { durationSize, readDuration, writeDurationBody } from './duration-codec.js';
import { DEFAULT_RLQS_REPORT_LIMITS, RlqsLimitError, type RlqsReportLimits } from './rlqs-limits.js';
import type {
  BucketActionMsg,
  BucketEntryMsg,
  BucketIdMsg,
  BucketQuotaUsageMsg,
  QuotaAssignmentActionMsg,
  RateLimitQuotaResponseMsg,
  RateLimitQuotaUsageReportsMsg,
  RateLimitStrategyMsg,
  TokenBucketMsg,
} from './rlqs-messages.js';
import { ProtoReader } from './wire-reader.js';
import { int32Size, lenFieldSize, ProtoWriter, utf8Length, varint32Size, varint64Size } from './wire-writer.js';

/** The fully qualified method, as a gRPC path. */
export const STREAM_RATE_LIMIT_QUOTAS_PATH = '/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas';

// ============================== BucketId ==============================

/** Framing bytes around key and value (two tags and two length varints) tolerated before decoding. */
const ENTRY_FRAMING = 8;

interface BucketIdBounds {
  readonly limits: RlqsReportLimits;
  /** Field path for errors, e.g. `bucket_quota_usages[2].bucket_id`. */
  readonly path: string;
}

/** Reads a BucketId body into `prev` (merging a repeated field); keys stay unique, the last value wins. */
function readBucketId(r: ProtoReader, end: number, prev: BucketIdMsg | undefined, bounds: BucketIdBounds | undefined): BucketIdMsg {
  const outer = r.end;
  r.end = end;
  const id: BucketIdMsg = prev ?? [];
  let wireEntries = id.length;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag !== 0x0a) {
      r.skip(tag);
      continue;
    }
    if (bounds !== undefined && ++wireEntries > bounds.limits.maxBucketIdEntries) {
      throw new RlqsLimitError(bounds.limits, 'maxBucketIdEntries', bounds.path, `more than ${bounds.limits.maxBucketIdEntries} entries in one bucket id`);
    }
    const e = readEntry(r, r.lengthEnd(), bounds, wireEntries - 1);
    let i = 0;
    while (i < id.length && id[i]!.key !== e.key) i++;
    if (i < id.length) id[i]!.value = e.value;
    else id.push(e);
  }
  r.end = outer;
  return id;
}

function readEntry(r: ProtoReader, end: number, bounds: BucketIdBounds | undefined, index: number): BucketEntryMsg {
  // The encoded size bounds key + value bytes, so a huge entry is refused without decoding it.
  const encoded = end - r.pos;
  const max = bounds?.limits.maxBucketEntryBytes ?? Infinity;
  const tooLong = (): RlqsLimitError =>
    new RlqsLimitError(bounds!.limits, 'maxBucketEntryBytes', `${bounds!.path}[${index}]`, `key and value longer than ${max} bytes`);
  if (encoded > max + ENTRY_FRAMING) throw tooLong();
  const outer = r.end;
  r.end = end;
  let key = '';
  let value = '';
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) key = r.string();
    else if (tag === 0x12) value = r.string();
    else r.skip(tag);
  }
  r.end = outer;
  if (encoded > max && utf8Length(key) + utf8Length(value) > max) throw tooLong();
  return { key, value };
}

function entrySize(e: BucketEntryMsg): number {
  const k = utf8Length(e.key);
  const v = utf8Length(e.value);
  return (k > 0 ? lenFieldSize(k) : 0) + (v > 0 ? lenFieldSize(v) : 0);
}

function bucketIdSize(id: BucketIdMsg): number {
  let size = 0;
  for (const e of id) size += lenFieldSize(entrySize(e));
  return size;
}

function writeBucketId(w: ProtoWriter, tag: number, id: BucketIdMsg): void {
  w.byte(tag);
  w.uint32(bucketIdSize(id));
  for (const e of id) {
    w.byte(0x0a);
    w.uint32(entrySize(e));
    const k = utf8Length(e.key);
    if (k > 0) {
      w.byte(0x0a);
      w.string(e.key, k);
    }
    const v = utf8Length(e.value);
    if (v > 0) {
      w.byte(0x12);
      w.string(e.value, v);
    }
  }
}

// ============================== RateLimitQuotaUsageReports ==============================

/**
 * Decodes one usage report message. Throws ProtoDecodeError for bad bytes and RlqsLimitError as
 * soon as the message goes beyond `limits` (the size before anything is read; the count of
 * buckets, of bucket id entries and their lengths before the excess is built).
 */
export function decodeRateLimitQuotaUsageReports(bytes: Uint8Array, limits: RlqsReportLimits = DEFAULT_RLQS_REPORT_LIMITS): RateLimitQuotaUsageReportsMsg {
  if (bytes.length > limits.maxMessageBytes) {
    throw new RlqsLimitError(limits, 'maxMessageBytes', 'message', `report of ${bytes.length} bytes is larger than ${limits.maxMessageBytes} bytes`);
  }
  const r = new ProtoReader(bytes);
  const msg: RateLimitQuotaUsageReportsMsg = { domain: '', bucketQuotaUsages: [] };
  const end = r.end;
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x0a: {
        const start = r.pos;
        const fieldEnd = r.lengthEnd();
        if (fieldEnd - r.pos > limits.maxDomainBytes) {
          throw new RlqsLimitError(limits, 'maxDomainBytes', 'domain', `domain longer than ${limits.maxDomainBytes} bytes`);
        }
        r.pos = start;
        msg.domain = r.string();
        break;
      }
      case 0x12: {
        const list = msg.bucketQuotaUsages;
        if (list.length >= limits.maxBucketsPerReport) {
          throw new RlqsLimitError(limits, 'maxBucketsPerReport', 'bucket_quota_usages', `more than ${limits.maxBucketsPerReport} buckets in one report`);
        }
        list.push(readUsage(r, r.lengthEnd(), limits, list.length));
        break;
      }
      default:
        r.skip(tag);
    }
  }
  return msg;
}

function readUsage(r: ProtoReader, end: number, limits: RlqsReportLimits, index: number): BucketQuotaUsageMsg {
  const outer = r.end;
  r.end = end;
  // All four properties always present so usages share one hidden class.
  const u: BucketQuotaUsageMsg = { bucketId: undefined, timeElapsed: undefined, numRequestsAllowed: 0, numRequestsDenied: 0 };
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x0a:
        u.bucketId = readBucketId(r, r.lengthEnd(), u.bucketId, { limits, path: `bucket_quota_usages[${index}].bucket_id` });
        break;
      case 0x12:
        u.timeElapsed = readDuration(r, r.lengthEnd(), u.timeElapsed);
        break;
      case 0x18:
        u.numRequestsAllowed = r.uint64();
        break;
      case 0x20:
        u.numRequestsDenied = r.uint64();
        break;
      default:
        r.skip(tag);
    }
  }
  r.end = outer;
  return u;
}

function usageSize(u: BucketQuotaUsageMsg): number {
  let size = 0;
  if (u.bucketId !== undefined) size += lenFieldSize(bucketIdSize(u.bucketId));
  if (u.timeElapsed !== undefined) size += lenFieldSize(durationSize(u.timeElapsed));
  if (u.numRequestsAllowed !== 0) size += 1 + varint64Size(u.numRequestsAllowed);
  if (u.numRequestsDenied !== 0) size += 1 + varint64Size(u.numRequestsDenied);
  return size;
}

/** Encodes a usage report message (the data plane's direction; used by test clients). */
export function encodeRateLimitQuotaUsageReports(msg: RateLimitQuotaUsageReportsMsg, headroom = 0): Buffer {
  const domainLen = utf8Length(msg.domain);
  let size = domainLen > 0 ? lenFieldSize(domainLen) : 0;
  for (const u of msg.bucketQuotaUsages) size += lenFieldSize(usageSize(u));
  const w = ProtoWriter.alloc(size, headroom);
  if (domainLen > 0) {
    w.byte(0x0a);
    w.string(msg.domain, domainLen);
  }
  for (const u of msg.bucketQuotaUsages) {
    w.byte(0x12);
    w.uint32(usageSize(u));
    if (u.bucketId !== undefined) writeBucketId(w, 0x0a, u.bucketId);
    if (u.timeElapsed !== undefined) {
      w.byte(0x12);
      w.uint32(durationSize(u.timeElapsed));
      writeDurationBody(w, u.timeElapsed);
    }
    if (u.numRequestsAllowed !== 0) {
      w.byte(0x18);
      w.uint64(u.numRequestsAllowed);
    }
    if (u.numRequestsDenied !== 0) {
      w.byte(0x20);
      w.uint64(u.numRequestsDenied);
    }
  }
  return w.buf;
}

// ============================== RateLimitQuotaResponse: encode ==============================

function tokenBucketSize(t: TokenBucketMsg): number {
  let size = t.maxTokens !== 0 ? 1 + varint32Size(t.maxTokens) : 0;
  if (t.tokensPerFill !== undefined) size += lenFieldSize(t.tokensPerFill !== 0 ? 1 + varint32Size(t.tokensPerFill) : 0);
  if (t.fillInterval !== undefined) size += lenFieldSize(durationSize(t.fillInterval));
  return size;
}

function rptuSize(requests: number, unit: number): number {
  return (requests !== 0 ? 1 + varint64Size(requests) : 0) + (unit !== 0 ? 1 + int32Size(unit) : 0);
}

function strategySize(s: RateLimitStrategyMsg): number {
  switch (s.kind) {
    case 'blanket_rule':
      return 1 + int32Size(s.blanketRule);
    case 'requests_per_time_unit':
      return lenFieldSize(rptuSize(s.requestsPerTimeUnit, s.timeUnit));
    case 'token_bucket':
      return lenFieldSize(tokenBucketSize(s.tokenBucket));
    case 'none':
      return 0;
  }
}

function assignmentSize(a: QuotaAssignmentActionMsg): number {
  let size = 0;
  if (a.assignmentTimeToLive !== undefined) size += lenFieldSize(durationSize(a.assignmentTimeToLive));
  if (a.rateLimitStrategy !== undefined) size += lenFieldSize(strategySize(a.rateLimitStrategy));
  return size;
}

function actionSize(b: BucketActionMsg): number {
  let size = b.bucketId !== undefined ? lenFieldSize(bucketIdSize(b.bucketId)) : 0;
  const a = b.action;
  if (a !== undefined) size += a.kind === 'abandon' ? 2 : lenFieldSize(assignmentSize(a));
  return size;
}

function writeStrategy(w: ProtoWriter, s: RateLimitStrategyMsg): void {
  switch (s.kind) {
    case 'blanket_rule':
      w.byte(0x08);
      w.int32(s.blanketRule);
      return;
    case 'requests_per_time_unit':
      w.byte(0x12);
      w.uint32(rptuSize(s.requestsPerTimeUnit, s.timeUnit));
      if (s.requestsPerTimeUnit !== 0) {
        w.byte(0x08);
        w.uint64(s.requestsPerTimeUnit);
      }
      if (s.timeUnit !== 0) {
        w.byte(0x10);
        w.int32(s.timeUnit);
      }
      return;
    case 'token_bucket': {
      const t = s.tokenBucket;
      w.byte(0x1a);
      w.uint32(tokenBucketSize(t));
      if (t.maxTokens !== 0) {
        w.byte(0x08);
        w.uint32(t.maxTokens);
      }
      if (t.tokensPerFill !== undefined) {
        w.byte(0x12);
        if (t.tokensPerFill !== 0) {
          w.byte(1 + varint32Size(t.tokensPerFill));
          w.byte(0x08);
          w.uint32(t.tokensPerFill);
        } else {
          w.byte(0);
        }
      }
      if (t.fillInterval !== undefined) {
        w.byte(0x1a);
        w.uint32(durationSize(t.fillInterval));
        writeDurationBody(w, t.fillInterval);
      }
      return;
    }
    case 'none':
      return;
  }
}

/**
 * Encodes a RateLimitQuotaResponse into one Buffer with `headroom` unwritten bytes in front (room
 * for the gRPC frame prefix, as encodeRateLimitResponse leaves).
 */
export function encodeRateLimitQuotaResponse(res: RateLimitQuotaResponseMsg, headroom = 0): Buffer {
  let size = 0;
  for (const b of res.bucketAction) size += lenFieldSize(actionSize(b));
  const w = ProtoWriter.alloc(size, headroom);
  for (const b of res.bucketAction) {
    w.byte(0x0a);
    w.uint32(actionSize(b));
    if (b.bucketId !== undefined) writeBucketId(w, 0x0a, b.bucketId);
    const a = b.action;
    if (a === undefined) continue;
    if (a.kind === 'abandon') {
      w.byte(0x1a);
      w.byte(0);
      continue;
    }
    w.byte(0x12);
    w.uint32(assignmentSize(a));
    if (a.assignmentTimeToLive !== undefined) {
      w.byte(0x12);
      w.uint32(durationSize(a.assignmentTimeToLive));
      writeDurationBody(w, a.assignmentTimeToLive);
    }
    if (a.rateLimitStrategy !== undefined) {
      w.byte(0x1a);
      w.uint32(strategySize(a.rateLimitStrategy));
      writeStrategy(w, a.rateLimitStrategy);
    }
  }
  return w.buf;
}

// ============================== RateLimitQuotaResponse: decode ==============================

/**
 * Decodes a RateLimitQuotaResponse (the data plane's direction; used by test clients). Throws
 * ProtoDecodeError for bad bytes; the result is never larger than its input can describe.
 */
export function decodeRateLimitQuotaResponse(bytes: Uint8Array): RateLimitQuotaResponseMsg {
  const r = new ProtoReader(bytes);
  const res: RateLimitQuotaResponseMsg = { bucketAction: [] };
  const end = r.end;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) res.bucketAction.push(readAction(r, r.lengthEnd()));
    else r.skip(tag);
  }
  return res;
}

function readAction(r: ProtoReader, end: number): BucketActionMsg {
  const outer = r.end;
  r.end = end;
  const b: BucketActionMsg = { bucketId: undefined, action: undefined };
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x0a:
        b.bucketId = readBucketId(r, r.lengthEnd(), b.bucketId, undefined);
        break;
      case 0x12:
        b.action = readAssignment(r, r.lengthEnd(), b.action?.kind === 'quota_assignment' ? b.action : undefined);
        break;
      case 0x1a:
        // AbandonAction has no fields; whatever it carries is skipped.
        r.pos = r.lengthEnd();
        b.action = { kind: 'abandon' };
        break;
      default:
        r.skip(tag);
    }
  }
  r.end = outer;
  return b;
}

function readAssignment(r: ProtoReader, end: number, prev: QuotaAssignmentActionMsg | undefined): QuotaAssignmentActionMsg {
  const outer = r.end;
  r.end = end;
  const a: QuotaAssignmentActionMsg = prev ?? { kind: 'quota_assignment', assignmentTimeToLive: undefined, rateLimitStrategy: undefined };
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x12) a.assignmentTimeToLive = readDuration(r, r.lengthEnd(), a.assignmentTimeToLive);
    else if (tag === 0x1a) a.rateLimitStrategy = readStrategy(r, r.lengthEnd(), a.rateLimitStrategy);
    else r.skip(tag);
  }
  r.end = outer;
  return a;
}

function readStrategy(r: ProtoReader, end: number, prev: RateLimitStrategyMsg | undefined): RateLimitStrategyMsg {
  const outer = r.end;
  r.end = end;
  let s: RateLimitStrategyMsg = prev ?? { kind: 'none' };
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x08:
        s = { kind: 'blanket_rule', blanketRule: r.int32() };
        break;
      case 0x12: {
        const p = s.kind === 'requests_per_time_unit' ? s : { kind: 'requests_per_time_unit' as const, requestsPerTimeUnit: 0, timeUnit: 0 };
        s = readRequestsPerTimeUnit(r, r.lengthEnd(), p);
        break;
      }
      case 0x1a:
        s = { kind: 'token_bucket', tokenBucket: readTokenBucket(r, r.lengthEnd(), s.kind === 'token_bucket' ? s.tokenBucket : undefined) };
        break;
      default:
        r.skip(tag);
    }
  }
  r.end = outer;
  return s;
}

function readRequestsPerTimeUnit(
  r: ProtoReader,
  end: number,
  p: { kind: 'requests_per_time_unit'; requestsPerTimeUnit: number; timeUnit: number },
): RateLimitStrategyMsg {
  const outer = r.end;
  r.end = end;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x08) p.requestsPerTimeUnit = r.uint64();
    else if (tag === 0x10) p.timeUnit = r.int32();
    else r.skip(tag);
  }
  r.end = outer;
  return p;
}

function readTokenBucket(r: ProtoReader, end: number, prev: TokenBucketMsg | undefined): TokenBucketMsg {
  const outer = r.end;
  r.end = end;
  const t: TokenBucketMsg = prev ?? { maxTokens: 0, tokensPerFill: undefined, fillInterval: undefined };
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x08) t.maxTokens = r.uint32();
    else if (tag === 0x12) t.tokensPerFill = readUInt32Value(r, r.lengthEnd(), t.tokensPerFill ?? 0);
    else if (tag === 0x1a) t.fillInterval = readDuration(r, r.lengthEnd(), t.fillInterval);
    else r.skip(tag);
  }
  r.end = outer;
  return t;
}

function readUInt32Value(r: ProtoReader, end: number, prev: number): number {
  const outer = r.end;
  r.end = end;
  let v = prev;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x08) v = r.uint32();
    else r.skip(tag);
  }
  r.end = outer;
  return v;
}
