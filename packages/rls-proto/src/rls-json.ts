// proto3 JSON mapping (as Go's protojson does it) for the HTTP `/json` endpoint: parse a
// RateLimitRequest strictly, with errors that name the offending field path, and render a
// RateLimitResponse with lowerCamelCase names, defaults omitted, enums as names, Duration as "58s".
import { Buffer } from 'node:buffer';
import {
  rlsCodeName,
  rlsUnitName,
  type CurrentLimitMsg,
  type DescriptorEntryMsg,
  type DescriptorStatusMsg,
  type HeaderValueMsg,
  type JsonValue,
  type LimitOverrideMsg,
  type RateLimitRequestMsg,
  type RateLimitResponseMsg,
  type RequestDescriptorMsg,
} from './rls-messages.js';
import { DEFAULT_REQUEST_LIMITS, entryTooLong, tooManyDescriptors, tooManyEntries, type RequestLimits } from './request-limits.js';

/** A JSON body that is not a valid RateLimitRequest. `path` is e.g. `descriptors[0].entries[1].value`. */
export class JsonMappingError extends Error {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(path === '' ? problem : `${path}: ${problem}`);
    this.path = path;
    this.name = 'JsonMappingError';
  }
}

// `envoy.type.v3.RateLimitUnit` (the request-side enum has no WEEK; the number 7 is still accepted).
const requestUnitByName: ReadonlyMap<string, number> = new Map([
  ['UNKNOWN', 0],
  ['SECOND', 1],
  ['MINUTE', 2],
  ['HOUR', 3],
  ['DAY', 4],
  ['MONTH', 5],
  ['YEAR', 6],
]);

const TWO_64 = 18446744073709551616;
const MAX_UINT64 = 18446744073709551615n;

function join(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

type JsonObj = Record<string, unknown>;

function isObject(v: unknown): v is JsonObj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Maps each key of `obj` to its canonical field name using `names` (JSON name and original name
 * both map to the canonical one). Unknown keys and a field given under both names are errors.
 */
function fieldsOf(obj: JsonObj, path: string, names: ReadonlyMap<string, string>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const key of Object.keys(obj)) {
    const canonical = names.get(key);
    if (canonical === undefined) throw new JsonMappingError(path, `unknown field "${key}"`);
    if (out.has(canonical)) throw new JsonMappingError(join(path, key), 'duplicate field');
    out.set(canonical, obj[key]);
  }
  return out;
}

function names(...pairs: Array<[string, string]>): ReadonlyMap<string, string> {
  const m = new Map<string, string>();
  for (const [json, orig] of pairs) {
    m.set(json, orig);
    m.set(orig, orig);
  }
  return m;
}

const requestFields = names(['domain', 'domain'], ['descriptors', 'descriptors'], ['hitsAddend', 'hits_addend']);
const descriptorFields = names(
  ['entries', 'entries'],
  ['limit', 'limit'],
  ['hitsAddend', 'hits_addend'],
  ['isNegativeHits', 'is_negative_hits'],
);
const entryFields = names(['key', 'key'], ['value', 'value']);
const overrideFields = names(['requestsPerUnit', 'requests_per_unit'], ['unit', 'unit']);
const uint64ValueFields = names(['value', 'value']);

function str(v: unknown, path: string): string {
  if (v === null || v === undefined) return '';
  if (typeof v !== 'string') throw new JsonMappingError(path, `expected string, got ${describe(v)}`);
  return v;
}

const numericString = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** JSON number or numeric string holding an integer (protojson accepts both, and 1e2 / 1.0 forms). */
function integer(v: unknown, path: string, what: string): number {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && numericString.test(v)) n = Number(v);
  else throw new JsonMappingError(path, `expected ${what}, got ${describe(v)}`);
  if (!Number.isFinite(n) || !Number.isInteger(n)) throw new JsonMappingError(path, `expected ${what}, got ${String(v)}`);
  return n;
}

function uint32(v: unknown, path: string): number {
  if (v === null || v === undefined) return 0;
  const n = integer(v, path, 'unsigned 32-bit integer');
  if (n < 0 || n > 0xffffffff) throw new JsonMappingError(path, `value ${n} out of range for uint32`);
  return n;
}

/** uint64 as a JS number; values above 2^53-1 clamp (same rule as the binary decoder). */
function uint64(v: unknown, path: string): number {
  if (typeof v === 'string' && /^-?\d+$/.test(v)) {
    // Exact check: a double cannot tell 2^64-1 (valid) from 2^64 (out of range).
    const b = BigInt(v);
    if (b < 0n || b > MAX_UINT64) throw new JsonMappingError(path, `value ${v} out of range for uint64`);
    return b > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(b);
  }
  const n = integer(v, path, 'unsigned 64-bit integer');
  // JSON numbers were already rounded to doubles by the parser; 2^64 is where 2^64-1 lands.
  if (n < 0 || n > TWO_64) throw new JsonMappingError(path, `value ${String(v)} out of range for uint64`);
  return Math.min(n, Number.MAX_SAFE_INTEGER);
}

function bool(v: unknown, path: string): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v !== 'boolean') throw new JsonMappingError(path, `expected boolean, got ${describe(v)}`);
  return v;
}

function enumValue(v: unknown, path: string, byName: ReadonlyMap<string, number>): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'string') {
    const n = byName.get(v);
    if (n === undefined) throw new JsonMappingError(path, `invalid enum value "${v}"`);
    return n;
  }
  if (typeof v === 'number' && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff) return v;
  throw new JsonMappingError(path, `expected enum name or number, got ${typeof v === 'number' ? String(v) : describe(v)}`);
}

function list(v: unknown, path: string): unknown[] {
  if (v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw new JsonMappingError(path, `expected array, got ${describe(v)}`);
  return v;
}

function obj(v: unknown, path: string): JsonObj {
  if (!isObject(v)) throw new JsonMappingError(path, `expected object, got ${describe(v)}`);
  return v;
}

function entryFromJson(v: unknown, path: string, limits: RequestLimits, di: number, ei: number): DescriptorEntryMsg {
  const f = fieldsOf(obj(v, path), path, entryFields);
  const key = str(f.get('key'), join(path, 'key'));
  const value = str(f.get('value'), join(path, 'value'));
  // A UTF-16 unit is at most 3 UTF-8 bytes: only long strings need the exact count.
  const units = key.length + value.length;
  if (units > limits.maxEntryBytes || (units * 3 > limits.maxEntryBytes && Buffer.byteLength(key) + Buffer.byteLength(value) > limits.maxEntryBytes)) {
    throw entryTooLong(limits, di, ei);
  }
  return { key, value };
}

function overrideFromJson(v: unknown, path: string): LimitOverrideMsg {
  const f = fieldsOf(obj(v, path), path, overrideFields);
  return {
    requestsPerUnit: uint32(f.get('requests_per_unit'), join(path, 'requestsPerUnit')),
    unit: enumValue(f.get('unit'), join(path, 'unit'), requestUnitByName),
  };
}

/** `google.protobuf.UInt64Value` maps to a bare number or string; the `{"value": n}` form is not proto3 JSON. */
function uint64ValueFromJson(v: unknown, path: string): number | undefined {
  if (v === null || v === undefined) return undefined;
  if (isObject(v)) {
    // Not canonical, but name the problem precisely rather than "expected integer, got object".
    fieldsOf(v, path, uint64ValueFields);
    throw new JsonMappingError(path, 'expected unsigned 64-bit integer (wrappers are written as bare values), got object');
  }
  return uint64(v, path);
}

function descriptorFromJson(v: unknown, path: string, limits: RequestLimits, di: number): RequestDescriptorMsg {
  const f = fieldsOf(obj(v, path), path, descriptorFields);
  const entriesPath = join(path, 'entries');
  const entryList = list(f.get('entries'), entriesPath);
  if (entryList.length > limits.maxEntriesPerDescriptor) throw tooManyEntries(limits, di);
  const entries = entryList.map((e, i) => entryFromJson(e, `${entriesPath}[${i}]`, limits, di, i));
  const limitJson = f.get('limit');
  const limit = limitJson === null || limitJson === undefined ? undefined : overrideFromJson(limitJson, join(path, 'limit'));
  const hitsAddend = uint64ValueFromJson(f.get('hits_addend'), join(path, 'hitsAddend'));
  bool(f.get('is_negative_hits'), join(path, 'isNegativeHits')); // type-checked, then ignored
  return { entries, limit, hitsAddend };
}

/**
 * Converts an already-parsed JSON value to a RateLimitRequest. Beyond `limits` it throws
 * RequestLimitError before mapping the descriptors.
 */
export function rateLimitRequestFromJson(value: unknown, limits: RequestLimits = DEFAULT_REQUEST_LIMITS): RateLimitRequestMsg {
  if (!isObject(value)) throw new JsonMappingError('', `request must be a JSON object, got ${describe(value)}`);
  const f = fieldsOf(value, '', requestFields);
  const descriptorList = list(f.get('descriptors'), 'descriptors');
  if (descriptorList.length > limits.maxDescriptors) throw tooManyDescriptors(limits);
  const descriptors = descriptorList.map((d, i) => descriptorFromJson(d, `descriptors[${i}]`, limits, i));
  return {
    domain: str(f.get('domain'), 'domain'),
    descriptors,
    hitsAddend: uint32(f.get('hits_addend'), 'hitsAddend'),
  };
}

/** Parses a `/json` body. Throws JsonMappingError for empty, invalid or mistyped input, RequestLimitError beyond `limits`. */
export function parseRateLimitRequestJson(text: string, limits: RequestLimits = DEFAULT_REQUEST_LIMITS): RateLimitRequestMsg {
  if (text.trim() === '') throw new JsonMappingError('', 'empty request body');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new JsonMappingError('', `invalid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  return rateLimitRequestFromJson(value, limits);
}

// ---------------------------------- response -> JSON ----------------------------------

/** Duration in seconds as protojson writes it: "58s", "1.500s", "-0.000000001s" (0, 3, 6 or 9 digits). */
export function formatDurationJson(seconds: number): string {
  const neg = seconds < 0;
  const abs = Math.abs(seconds);
  let whole = Math.trunc(abs);
  let nanos = Math.round((abs - whole) * 1e9);
  if (nanos >= 1e9) {
    whole += 1;
    nanos -= 1e9;
  }
  let frac = '';
  if (nanos !== 0) {
    frac = String(nanos).padStart(9, '0');
    if (frac.endsWith('000000')) frac = frac.slice(0, 3);
    else if (frac.endsWith('000')) frac = frac.slice(0, 6);
    frac = `.${frac}`;
  }
  return `${neg ? '-' : ''}${whole}${frac}s`;
}

function enumJson(n: number, name: string | undefined): string | number {
  return name ?? n;
}

function currentLimitJson(c: CurrentLimitMsg): JsonObj {
  const out: JsonObj = {};
  if (c.requestsPerUnit !== 0) out.requestsPerUnit = c.requestsPerUnit;
  if (c.unit !== 0) out.unit = enumJson(c.unit, rlsUnitName(c.unit));
  if (c.name !== '') out.name = c.name;
  return out;
}

function statusJson(s: DescriptorStatusMsg): JsonObj {
  const out: JsonObj = {};
  if (s.code !== 0) out.code = enumJson(s.code, rlsCodeName(s.code));
  if (s.currentLimit !== undefined) out.currentLimit = currentLimitJson(s.currentLimit);
  if (s.limitRemaining !== 0) out.limitRemaining = s.limitRemaining;
  if (s.durationUntilReset !== undefined) out.durationUntilReset = formatDurationJson(s.durationUntilReset);
  return out;
}

function headerJson(h: HeaderValueMsg): JsonObj {
  const out: JsonObj = {};
  if (h.key !== '') out.key = h.key;
  if (h.value !== '') out.value = h.value;
  if (h.rawValue !== undefined && h.rawValue.length > 0) out.rawValue = Buffer.from(h.rawValue).toString('base64');
  return out;
}

/** The response as a proto3-JSON object (field order = field-number order, as protojson). */
export function rateLimitResponseToJson(res: RateLimitResponseMsg): { [k: string]: JsonValue } {
  const out: JsonObj = {};
  if (res.overallCode !== 0) out.overallCode = enumJson(res.overallCode, rlsCodeName(res.overallCode));
  if (res.statuses.length > 0) out.statuses = res.statuses.map(statusJson);
  if (res.responseHeadersToAdd.length > 0) out.responseHeadersToAdd = res.responseHeadersToAdd.map(headerJson);
  if (res.requestHeadersToAdd !== undefined && res.requestHeadersToAdd.length > 0) {
    out.requestHeadersToAdd = res.requestHeadersToAdd.map(headerJson);
  }
  if (res.rawBody !== undefined && res.rawBody.length > 0) out.rawBody = Buffer.from(res.rawBody).toString('base64');
  if (res.dynamicMetadata !== undefined) out.dynamicMetadata = res.dynamicMetadata;
  return out as { [k: string]: JsonValue };
}

export function encodeRateLimitResponseJson(res: RateLimitResponseMsg): string {
  return JSON.stringify(rateLimitResponseToJson(res));
}
