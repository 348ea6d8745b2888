// Hand-coded protobuf codec for envoy.service.ratelimit.v3 RateLimitRequest / RateLimitResponse.
// Field numbers (tags are written as literal bytes: (field << 3) | wire type):
//   RateLimitRequest:    domain=1 string, descriptors=2 msg, hits_addend=3 uint32
//   RateLimitDescriptor: entries=1 msg, limit=2 msg, hits_addend=3 UInt64Value, is_negative_hits=4 bool (ignored)
//     Entry: key=1, value=2;  RateLimitOverride: requests_per_unit=1 uint32, unit=2 enum
//   RateLimitResponse:   overall_code=1 enum, statuses=2, response_headers_to_add=3, request_headers_to_add=4,
//                        raw_body=5 bytes, dynamic_metadata=6 Struct, quota=7 (skipped)
//     DescriptorStatus: code=1, current_limit=2, limit_remaining=3 uint32, duration_until_reset=4 Duration, quota=5 (skipped)
//     RateLimit: requests_per_unit=1, unit=2, name=3;  Duration: seconds=1 int64, nanos=2 int32
//   HeaderValue: key=1, value=2, raw_value=3 bytes
// Decoders follow proto3: last scalar wins, repeated embedded messages merge, unknown fields (and
// known fields with an unexpected wire type) are skipped. Encoders omit proto3 defaults.
import type { Buffer } from 'node:buffer';
import { ProtoReader } from './wire-reader.js';
import { int32Size, lenFieldSize, ProtoWriter, utf8Length, varint32Size, varint64Size } from './wire-writer.js';
import { readStruct, structSize, writeStruct } from './struct-codec.js';
import { durationSize, readDuration, writeDurationBody } from './duration-codec.js';
import { DEFAULT_REQUEST_LIMITS, entryTooLong, tooManyDescriptors, tooManyEntries, type RequestLimits } from './request-limits.js';
import {
  toRlsCode,
  type CurrentLimitMsg,
  type DescriptorEntryMsg,
  type DescriptorStatusMsg,
  type HeaderValueMsg,
  type LimitOverrideMsg,
  type RateLimitRequestMsg,
  type RateLimitResponseMsg,
  type RequestDescriptorMsg,
} from './rls-messages.js';

// ============================== RateLimitRequest: decode ==============================

/**
 * Decodes a RateLimitRequest. Throws ProtoDecodeError for bad bytes and RequestLimitError as soon
 * as the request goes beyond `limits`, before the excess descriptors or entries are built.
 */
export function decodeRateLimitRequest(bytes: Uint8Array, limits: RequestLimits = DEFAULT_REQUEST_LIMITS): RateLimitRequestMsg {
  const r = new ProtoReader(bytes);
  const req: RateLimitRequestMsg = { domain: '', descriptors: [], hitsAddend: 0 };
  const end = r.end;
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x0a:
        req.domain = r.string();
        break;
      case 0x12:
        if (req.descriptors.length >= limits.maxDescriptors) throw tooManyDescriptors(limits);
        req.descriptors.push(readDescriptor(r, r.lengthEnd(), limits, req.descriptors.length));
        break;
      case 0x18:
        req.hitsAddend = r.uint32();
        break;
      default:
        r.skip(tag);
    }
  }
  return req;
}

function readDescriptor(r: ProtoReader, end: number, limits: RequestLimits, index: number): RequestDescriptorMsg {
  const outer = r.end;
  r.end = end;
  // All three properties are always present so descriptors share one hidden class.
  const d: RequestDescriptorMsg = { entries: [], limit: undefined, hitsAddend: undefined };
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x0a:
        if (d.entries.length >= limits.maxEntriesPerDescriptor) throw tooManyEntries(limits, index);
        d.entries.push(readEntry(r, r.lengthEnd(), limits, index, d.entries.length));
        break;
      case 0x12:
        d.limit = readOverride(r, r.lengthEnd(), d.limit);
        break;
      case 0x1a:
        d.hitsAddend = readUInt64Value(r, r.lengthEnd(), d.hitsAddend ?? 0);
        break;
      default:
        // is_negative_hits (4) and anything newer are skipped.
        r.skip(tag);
    }
  }
  r.end = outer;
  return d;
}

/** Framing bytes around key and value (two tags and two length varints) tolerated before decoding. */
const ENTRY_FRAMING = 8;

function readEntry(r: ProtoReader, end: number, limits: RequestLimits, di: number, ei: number): DescriptorEntryMsg {
  // The encoded size bounds key + value bytes, so a huge entry is refused without decoding it;
  // only an entry within the framing slack needs the exact count below.
  const encoded = end - r.pos;
  if (encoded > limits.maxEntryBytes + ENTRY_FRAMING) throw entryTooLong(limits, di, ei);
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
  if (encoded > limits.maxEntryBytes && utf8Length(key) + utf8Length(value) > limits.maxEntryBytes) throw entryTooLong(limits, di, ei);
  return { key, value };
}

function readOverride(r: ProtoReader, end: number, prev: LimitOverrideMsg | undefined): LimitOverrideMsg {
  const outer = r.end;
  r.end = end;
  const o: LimitOverrideMsg = prev ?? { requestsPerUnit: 0, unit: 0 };
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x08) o.requestsPerUnit = r.uint32();
    else if (tag === 0x10) o.unit = r.int32();
    else r.skip(tag);
  }
  r.end = outer;
  return o;
}

function readUInt64Value(r: ProtoReader, end: number, prev: number): number {
  const outer = r.end;
  r.end = end;
  let v = prev;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x08) v = r.uint64();
    else r.skip(tag);
  }
  r.end = outer;
  return v;
}

// ============================== RateLimitRequest: encode ==============================

function entrySize(e: DescriptorEntryMsg): number {
  const k = utf8Length(e.key);
  const v = utf8Length(e.value);
  return (k > 0 ? lenFieldSize(k) : 0) + (v > 0 ? lenFieldSize(v) : 0);
}

function overrideSize(o: LimitOverrideMsg): number {
  return (o.requestsPerUnit !== 0 ? 1 + varint32Size(o.requestsPerUnit) : 0) + (o.unit !== 0 ? 1 + int32Size(o.unit) : 0);
}

function uint64ValueSize(v: number): number {
  return v !== 0 ? 1 + varint64Size(v) : 0;
}

function descriptorSize(d: RequestDescriptorMsg): number {
  let size = 0;
  for (const e of d.entries) size += lenFieldSize(entrySize(e));
  if (d.limit !== undefined) size += lenFieldSize(overrideSize(d.limit));
  if (d.hitsAddend !== undefined) size += lenFieldSize(uint64ValueSize(d.hitsAddend));
  return size;
}

/**
 * Encodes a RateLimitRequest. `headroom` bytes are left unwritten at the start of the returned
 * Buffer (a gRPC transport puts its 5-byte frame prefix there).
 */
export function encodeRateLimitRequest(req: RateLimitRequestMsg, headroom = 0): Buffer {
  const domainLen = utf8Length(req.domain);
  let size = domainLen > 0 ? lenFieldSize(domainLen) : 0;
  for (const d of req.descriptors) size += lenFieldSize(descriptorSize(d));
  if (req.hitsAddend !== 0) size += 1 + varint32Size(req.hitsAddend);
  const w = ProtoWriter.alloc(size, headroom);
  if (domainLen > 0) {
    w.byte(0x0a);
    w.string(req.domain, domainLen);
  }
  for (const d of req.descriptors) {
    w.byte(0x12);
    w.uint32(descriptorSize(d));
    for (const e of d.entries) {
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
    if (d.limit !== undefined) {
      const o = d.limit;
      w.byte(0x12);
      w.uint32(overrideSize(o));
      if (o.requestsPerUnit !== 0) {
        w.byte(0x08);
        w.uint32(o.requestsPerUnit);
      }
      if (o.unit !== 0) {
        w.byte(0x10);
        w.int32(o.unit);
      }
    }
    if (d.hitsAddend !== undefined) {
      w.byte(0x1a);
      w.uint32(uint64ValueSize(d.hitsAddend));
      if (d.hitsAddend !== 0) {
        w.byte(0x08);
        w.uint64(d.hitsAddend);
      }
    }
  }
  if (req.hitsAddend !== 0) {
    w.byte(0x18);
    w.uint32(req.hitsAddend);
  }
  return w.buf;
}

// ============================== RateLimitResponse: encode ==============================

function currentLimitSize(c: CurrentLimitMsg): number {
  const n = utf8Length(c.name);
  return (
    (c.requestsPerUnit !== 0 ? 1 + varint32Size(c.requestsPerUnit) : 0) +
    (c.unit !== 0 ? 1 + int32Size(c.unit) : 0) +
    (n > 0 ? lenFieldSize(n) : 0)
  );
}

function statusSize(s: DescriptorStatusMsg): number {
  let size = 0;
  if (s.code !== 0) size += 2; // 1-byte tag + 1-byte enum (0..2)
  if (s.currentLimit !== undefined) size += lenFieldSize(currentLimitSize(s.currentLimit));
  if (s.limitRemaining !== 0) size += 1 + varint32Size(s.limitRemaining);
  if (s.durationUntilReset !== undefined) size += lenFieldSize(durationSize(s.durationUntilReset));
  return size;
}

function headerSize(h: HeaderValueMsg): number {
  const k = utf8Length(h.key);
  const v = utf8Length(h.value);
  const raw = h.rawValue;
  return (k > 0 ? lenFieldSize(k) : 0) + (v > 0 ? lenFieldSize(v) : 0) + (raw !== undefined && raw.length > 0 ? lenFieldSize(raw.length) : 0);
}

function writeHeaders(w: ProtoWriter, tag: number, list: HeaderValueMsg[]): void {
  for (const h of list) {
    w.byte(tag);
    w.uint32(headerSize(h));
    const k = utf8Length(h.key);
    if (k > 0) {
      w.byte(0x0a);
      w.string(h.key, k);
    }
    const v = utf8Length(h.value);
    if (v > 0) {
      w.byte(0x12);
      w.string(h.value, v);
    }
    if (h.rawValue !== undefined && h.rawValue.length > 0) {
      w.byte(0x1a);
      w.bytes(h.rawValue);
    }
  }
}

function writeStatus(w: ProtoWriter, s: DescriptorStatusMsg): void {
  if (s.code !== 0) {
    w.byte(0x08);
    w.byte(s.code);
  }
  const c = s.currentLimit;
  if (c !== undefined) {
    w.byte(0x12);
    w.uint32(currentLimitSize(c));
    if (c.requestsPerUnit !== 0) {
      w.byte(0x08);
      w.uint32(c.requestsPerUnit);
    }
    if (c.unit !== 0) {
      w.byte(0x10);
      w.int32(c.unit);
    }
    const n = utf8Length(c.name);
    if (n > 0) {
      w.byte(0x1a);
      w.string(c.name, n);
    }
  }
  if (s.limitRemaining !== 0) {
    w.byte(0x18);
    w.uint32(s.limitRemaining);
  }
  const d = s.durationUntilReset;
  if (d !== undefined) {
    w.byte(0x22);
    w.uint32(durationSize(d));
    writeDurationBody(w, d);
  }
}

/**
 * Encodes a RateLimitResponse into one Buffer with `headroom` unwritten bytes in front (the gRPC
 * server writes its frame prefix there, so the response goes out without another copy).
 */
export function encodeRateLimitResponse(res: RateLimitResponseMsg, headroom = 0): Buffer {
  let size = res.overallCode !== 0 ? 2 : 0;
  const statuses = res.statuses;
  for (let i = 0; i < statuses.length; i++) size += lenFieldSize(statusSize(statuses[i]!));
  for (const h of res.responseHeadersToAdd) size += lenFieldSize(headerSize(h));
  const reqHeaders = res.requestHeadersToAdd;
  if (reqHeaders !== undefined) for (const h of reqHeaders) size += lenFieldSize(headerSize(h));
  const rawBody = res.rawBody;
  if (rawBody !== undefined && rawBody.length > 0) size += lenFieldSize(rawBody.length);
  const meta = res.dynamicMetadata;
  const metaSize = meta !== undefined ? structSize(meta) : 0;
  if (meta !== undefined) size += lenFieldSize(metaSize);

  const w = ProtoWriter.alloc(size, headroom);
  if (res.overallCode !== 0) {
    w.byte(0x08);
    w.byte(res.overallCode);
  }
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i]!;
    w.byte(0x12);
    w.uint32(statusSize(s));
    writeStatus(w, s);
  }
  writeHeaders(w, 0x1a, res.responseHeadersToAdd);
  if (reqHeaders !== undefined) writeHeaders(w, 0x22, reqHeaders);
  if (rawBody !== undefined && rawBody.length > 0) {
    w.byte(0x2a);
    w.bytes(rawBody);
  }
  if (meta !== undefined) {
    w.byte(0x32);
    w.uint32(metaSize);
    writeStruct(w, meta);
  }
  return w.buf;
}

// ============================== RateLimitResponse: decode ==============================

export function decodeRateLimitResponse(bytes: Uint8Array): RateLimitResponseMsg {
  const r = new ProtoReader(bytes);
  const res: RateLimitResponseMsg = { overallCode: 0, statuses: [], responseHeadersToAdd: [] };
  const end = r.end;
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x08:
        res.overallCode = toRlsCode(r.int32());
        break;
      case 0x12:
        res.statuses.push(readStatus(r, r.lengthEnd()));
        break;
      case 0x1a:
        res.responseHeadersToAdd.push(readHeader(r, r.lengthEnd()));
        break;
      case 0x22:
        (res.requestHeadersToAdd ??= []).push(readHeader(r, r.lengthEnd()));
        break;
      case 0x2a:
        res.rawBody = r.bytes();
        break;
      case 0x32:
        res.dynamicMetadata = readStruct(r, r.lengthEnd(), 0, res.dynamicMetadata);
        break;
      default:
        // quota (7): never produced by the service; skipped like any unknown field.
        r.skip(tag);
    }
  }
  return res;
}

function readStatus(r: ProtoReader, end: number): DescriptorStatusMsg {
  const outer = r.end;
  r.end = end;
  const s: DescriptorStatusMsg = { code: 0, currentLimit: undefined, limitRemaining: 0, durationUntilReset: undefined };
  while (r.pos < end) {
    const tag = r.tag();
    switch (tag) {
      case 0x08:
        s.code = toRlsCode(r.int32());
        break;
      case 0x12:
        s.currentLimit = readCurrentLimit(r, r.lengthEnd(), s.currentLimit);
        break;
      case 0x18:
        s.limitRemaining = r.uint32();
        break;
      case 0x22:
        s.durationUntilReset = readDuration(r, r.lengthEnd(), s.durationUntilReset);
        break;
      default:
        r.skip(tag);
    }
  }
  r.end = outer;
  return s;
}

function readCurrentLimit(r: ProtoReader, end: number, prev: CurrentLimitMsg | undefined): CurrentLimitMsg {
  const outer = r.end;
  r.end = end;
  const c: CurrentLimitMsg = prev ?? { requestsPerUnit: 0, unit: 0, name: '' };
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x08) c.requestsPerUnit = r.uint32();
    else if (tag === 0x10) c.unit = r.int32();
    else if (tag === 0x1a) c.name = r.string();
    else r.skip(tag);
  }
  r.end = outer;
  return c;
}

function readHeader(r: ProtoReader, end: number): HeaderValueMsg {
  const outer = r.end;
  r.end = end;
  const h: HeaderValueMsg = { key: '', value: '' };
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) h.key = r.string();
    else if (tag === 0x12) h.value = r.string();
    else if (tag === 0x1a) h.rawValue = r.bytes();
    else r.skip(tag);
  }
  r.end = outer;
  return h;
}
