// xDS wire types for the ADS State-of-the-World exchange that carries rate limit rules:
// DiscoveryRequest / DiscoveryResponse (envoy.service.discovery.v3), google.protobuf.Any and
// ratelimit.config.ratelimit.v3.RateLimitConfig. These messages are not on the request hot path,
// so they are coded with protobufjs from this package's .proto files instead of by hand.
// google.protobuf.Struct fields are converted to plain JSON values at the edge.
import protobuf from 'protobufjs';
import { ProtoDecodeError } from './decode-error.js';
import { PROTO_DIR, PROTO_FILES } from './proto-files.js';
import type { JsonValue } from './rls-messages.js';
import { MAX_DEPTH, ProtoReader, WireType } from './wire-reader.js';

export const RATE_LIMIT_CONFIG_TYPE_URL = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig';
export const ADS_SERVICE_NAME = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const ADS_STREAM_PATH = `/${ADS_SERVICE_NAME}/StreamAggregatedResources`;

export type JsonObject = { [k: string]: JsonValue };

export interface XdsNodeMsg {
  id: string;
  cluster?: string | undefined;
  metadata?: JsonObject | undefined;
}

export interface RpcStatusMsg {
  code: number;
  message: string;
}

export interface DiscoveryRequestMsg {
  versionInfo: string;
  node?: XdsNodeMsg | undefined;
  resourceNames: string[];
  typeUrl: string;
  responseNonce: string;
  errorDetail?: RpcStatusMsg | undefined;
}

export interface AnyMsg {
  typeUrl: string;
  value: Uint8Array;
}

export interface DiscoveryResponseMsg {
  versionInfo: string;
  resources: AnyMsg[];
  typeUrl: string;
  nonce: string;
}

/** Unit names of `ratelimit.config.ratelimit.v3.RateLimitUnit` (unknown numbers come back as numbers' text). */
export type RateLimitConfigUnit = 'UNKNOWN' | 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';

export interface RateLimitPolicyMsg {
  /** A RateLimitConfigUnit name; a number outside the enum arrives as its decimal text. */
  unit: string;
  requestsPerUnit: number;
  unlimited: boolean;
  name: string;
  replaces: { name: string }[];
  /** Extension (field 1000): the algorithm as sent; '' when unset (fixed_window). */
  algorithm?: string | undefined;
  /** Extension (field 1001): token_bucket size; undefined when unset (0 on the wire). */
  burst?: number | undefined;
  /** Extension (field 1002): a window of this many units; undefined when unset (0 on the wire). */
  unitMultiplier?: number | undefined;
}

export interface RateLimitConfigDescriptorMsg {
  key: string;
  value: string;
  rateLimit?: RateLimitPolicyMsg | undefined;
  descriptors: RateLimitConfigDescriptorMsg[];
  shadowMode: boolean;
  detailedMetric: boolean;
  quotaMode: boolean;
  metadata?: JsonObject | undefined;
  /** Extension (field 1003): several limits on one descriptor; undefined or empty when unset. */
  rateLimits?: RateLimitPolicyMsg[] | undefined;
  /** Extension (field 1004): match the value by CIDR block; undefined when unset. */
  cidr?: string | undefined;
  /** Extension (field 1005): match the value by prefix; undefined when unset. */
  prefix?: string | undefined;
  /** Extension (field 1008): match the value by any block of the list (one rule); undefined or empty when unset. */
  cidrs?: string[] | undefined;
  /** Extension (field 1009): match the value by any prefix of the list (one rule); undefined or empty when unset. */
  prefixes?: string[] | undefined;
}

/** Extension `QuotaRule`: a quota as written; '' and undefined are "not written". */
export interface QuotaRuleMsg {
  strategy: string;
  /** A RateLimitConfigUnit name ('UNKNOWN': not written). */
  unit: string;
  requestsPerUnit?: number | undefined;
  unitMultiplier?: number | undefined;
  burst?: number | undefined;
  onStoreFailure: string;
}

/** Extension `QuotaBucketRule`: one quota_buckets entry. */
export interface QuotaBucketRuleMsg {
  /** key -> value ("*" any, a value with "*" a wildcard). */
  bucketId: Record<string, string>;
  /** key -> CIDR block. */
  bucketIdCidr: Record<string, string>;
  quota?: QuotaRuleMsg | undefined;
  name: string;
}

export interface RateLimitConfigMsg {
  name: string;
  domain: string;
  descriptors: RateLimitConfigDescriptorMsg[];
  /** Extension (field 1006): RLQS quota rules; undefined or empty when unset. */
  quotaBuckets?: QuotaBucketRuleMsg[] | undefined;
  /** Extension (field 1007): the quota of buckets no entry matches; undefined when unset. */
  defaultQuota?: QuotaRuleMsg | undefined;
}

interface Types {
  request: protobuf.Type;
  response: protobuf.Type;
  config: protobuf.Type;
  unitEnum: protobuf.Enum;
}

let types: Types | undefined;

function load(): Types {
  if (types !== undefined) return types;
  const root = new protobuf.Root();
  // google/protobuf/* come from protobufjs's bundled well-known types.
  root.resolvePath = (_origin: string, target: string): string => (target.startsWith('google/protobuf/') ? target : `${PROTO_DIR}${target}`);
  root.loadSync([PROTO_FILES.discovery, PROTO_FILES.rlsConfig], { keepCase: true });
  root.resolveAll();
  types = {
    request: root.lookupType('envoy.service.discovery.v3.DiscoveryRequest'),
    response: root.lookupType('envoy.service.discovery.v3.DiscoveryResponse'),
    config: root.lookupType('ratelimit.config.ratelimit.v3.RateLimitConfig'),
    unitEnum: root.lookupEnum('ratelimit.config.ratelimit.v3.RateLimitUnit'),
  };
  return types;
}

// ---- wire check before protobufjs -------------------------------------------------------------
// protobufjs decodes leniently where a hostile control plane can hurt: a string whose length runs
// past the end is cut short instead of refused, a known field with another wire type is misread,
// and nesting (RateLimitDescriptor.descriptors, Struct) recurses until the stack overflows. So
// every message is first walked against its schema with the bounds-checked reader, which throws
// the same ProtoDecodeError as the hand-coded decoders; only then does protobufjs decode it.

const basicWire = protobuf.types.basic as Readonly<Record<string, number | undefined>>;
const packedWire = protobuf.types.packed as Readonly<Record<string, number | undefined>>;
const mapKeyWire = protobuf.types.mapKey as Readonly<Record<string, number | undefined>>;

function wrongWire(field: protobuf.FieldBase, wt: number, at: number): ProtoDecodeError {
  return new ProtoDecodeError('malformed', `field ${field.name} (${field.id}) has wire type ${wt}`, at);
}

/** Checks one value of `field` (the tag was read at `at`). */
function checkValue(field: protobuf.FieldBase, valueType: string, resolved: protobuf.ReflectionObject | null, tag: number, r: ProtoReader, at: number, depth: number): void {
  const wt = tag & 7;
  if (resolved instanceof protobuf.Type) {
    if (wt !== WireType.LEN) throw wrongWire(field, wt, at);
    checkMessage(resolved, r, r.lengthEnd(), depth + 1);
    return;
  }
  const want = resolved instanceof protobuf.Enum ? WireType.VARINT : basicWire[valueType];
  if (want === undefined) throw new ProtoDecodeError('malformed', `field ${field.name} has unsupported type ${valueType}`, at);
  if (wt === WireType.LEN && want !== WireType.LEN && field.repeated && (resolved instanceof protobuf.Enum || packedWire[valueType] !== undefined)) {
    // A packed run of scalars: bounded by its length prefix.
    r.pos = r.lengthEnd();
    return;
  }
  if (wt !== want) throw wrongWire(field, wt, at);
  if (valueType === 'string') r.string();
  else r.skip(tag);
}

function checkMapEntry(field: protobuf.MapField, r: ProtoReader, end: number, depth: number): void {
  if (depth > MAX_DEPTH) throw new ProtoDecodeError('too_deep', `${field.name} nested too deeply`, r.pos);
  const outer = r.end;
  r.end = end;
  while (r.pos < end) {
    const at = r.pos;
    const tag = r.tag();
    const id = tag >>> 3;
    if (id === 1) {
      const want = mapKeyWire[field.keyType];
      if ((tag & 7) !== want) throw wrongWire(field, tag & 7, at);
      if (field.keyType === 'string') r.string();
      else r.skip(tag);
    } else if (id === 2) checkValue(field, field.type, field.resolvedType, tag, r, at, depth);
    else r.skip(tag);
  }
  r.end = outer;
}

function checkMessage(type: protobuf.Type, r: ProtoReader, end: number, depth: number): void {
  if (depth > MAX_DEPTH) throw new ProtoDecodeError('too_deep', `${type.name} nested too deeply`, r.pos);
  const outer = r.end;
  r.end = end;
  const fields = type.fieldsById;
  while (r.pos < end) {
    const at = r.pos;
    const tag = r.tag();
    const field = fields[tag >>> 3];
    if (field === undefined) r.skip(tag);
    else if (field instanceof protobuf.MapField) {
      if ((tag & 7) !== WireType.LEN) throw wrongWire(field, tag & 7, at);
      checkMapEntry(field, r, r.lengthEnd(), depth + 1);
    } else checkValue(field, field.type, field.resolvedType, tag, r, at, depth);
  }
  r.end = outer;
}

/** Checks `bytes` as a `type` message, then decodes with `decode`; every failure is a ProtoDecodeError. */
function decodeChecked<T>(type: protobuf.Type, bytes: Uint8Array, decode: () => T): T {
  const r = new ProtoReader(bytes);
  checkMessage(type, r, r.end, 0);
  try {
    return decode();
  } catch (err) {
    // Not expected after the check; kept so a protobufjs error still reaches callers typed.
    if (err instanceof ProtoDecodeError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw new ProtoDecodeError(/index out of range/.test(message) ? 'truncated' : 'malformed', `${type.name}: ${message}`, 0);
  }
}

// ---- google.protobuf.Struct <-> JSON ----------------------------------------------------------

interface PbValue {
  nullValue?: number;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: PbStruct;
  listValue?: { values?: PbValue[] };
}
interface PbStruct {
  fields?: { [k: string]: PbValue };
}

function toPbValue(v: JsonValue): PbValue {
  if (v === null) return { nullValue: 0 };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toPbValue) } };
  return { structValue: toPbStruct(v) };
}

function toPbStruct(obj: JsonObject): PbStruct {
  const fields: { [k: string]: PbValue } = {};
  for (const [k, v] of Object.entries(obj)) fields[k] = toPbValue(v);
  return { fields };
}

function fromPbValue(v: PbValue): JsonValue {
  if (v.numberValue !== undefined) return v.numberValue;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.structValue !== undefined) return fromPbStruct(v.structValue);
  if (v.listValue !== undefined) return (v.listValue.values ?? []).map(fromPbValue);
  return null;
}

function fromPbStruct(s: PbStruct): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(s.fields ?? {})) out[k] = fromPbValue(v);
  return out;
}

// ---- DiscoveryRequest ---------------------------------------------------------------------------

interface PbRequest {
  version_info?: string;
  node?: { id?: string; cluster?: string; metadata?: PbStruct };
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string };
}

export function encodeDiscoveryRequest(msg: DiscoveryRequestMsg): Buffer {
  const t = load();
  const pb: PbRequest = {
    version_info: msg.versionInfo,
    resource_names: msg.resourceNames,
    type_url: msg.typeUrl,
    response_nonce: msg.responseNonce,
  };
  if (msg.node !== undefined) {
    pb.node = { id: msg.node.id };
    if (msg.node.cluster !== undefined) pb.node.cluster = msg.node.cluster;
    if (msg.node.metadata !== undefined) pb.node.metadata = toPbStruct(msg.node.metadata);
  }
  if (msg.errorDetail !== undefined) pb.error_detail = { code: msg.errorDetail.code, message: msg.errorDetail.message };
  return Buffer.from(t.request.encode(t.request.fromObject(pb)).finish());
}

export function decodeDiscoveryRequest(bytes: Uint8Array): DiscoveryRequestMsg {
  const t = load();
  const pb = decodeChecked(t.request, bytes, () => t.request.toObject(t.request.decode(bytes), { defaults: true, arrays: true, longs: Number }) as PbRequest);
  const out: DiscoveryRequestMsg = {
    versionInfo: pb.version_info ?? '',
    resourceNames: pb.resource_names ?? [],
    typeUrl: pb.type_url ?? '',
    responseNonce: pb.response_nonce ?? '',
  };
  if (pb.node !== undefined && pb.node !== null) {
    out.node = { id: pb.node.id ?? '', cluster: pb.node.cluster ?? '' };
    if (pb.node.metadata !== undefined && pb.node.metadata !== null) out.node.metadata = fromPbStruct(pb.node.metadata);
  }
  if (pb.error_detail !== undefined && pb.error_detail !== null) {
    out.errorDetail = { code: pb.error_detail.code ?? 0, message: pb.error_detail.message ?? '' };
  }
  return out;
}

// ---- DiscoveryResponse --------------------------------------------------------------------------

interface PbResponse {
  version_info?: string;
  resources?: { type_url?: string; value?: Uint8Array }[];
  type_url?: string;
  nonce?: string;
}

export function encodeDiscoveryResponse(msg: DiscoveryResponseMsg): Buffer {
  const t = load();
  const pb: PbResponse = {
    version_info: msg.versionInfo,
    resources: msg.resources.map((r) => ({ type_url: r.typeUrl, value: r.value })),
    type_url: msg.typeUrl,
    nonce: msg.nonce,
  };
  return Buffer.from(t.response.encode(t.response.fromObject(pb)).finish());
}

export function decodeDiscoveryResponse(bytes: Uint8Array): DiscoveryResponseMsg {
  const t = load();
  // Any is kept as raw bytes (no json conversion of well-known types).
  const pb = decodeChecked(t.response, bytes, () => t.response.toObject(t.response.decode(bytes), { defaults: true, arrays: true, bytes: Buffer }) as PbResponse);
  return {
    versionInfo: pb.version_info ?? '',
    resources: (pb.resources ?? []).map((r) => ({ typeUrl: r.type_url ?? '', value: r.value ?? new Uint8Array(0) })),
    typeUrl: pb.type_url ?? '',
    nonce: pb.nonce ?? '',
  };
}

// ---- RateLimitConfig ----------------------------------------------------------------------------

interface PbPolicy {
  unit?: string | number;
  requests_per_unit?: number;
  unlimited?: boolean;
  name?: string;
  replaces?: { name?: string }[];
  algorithm?: string;
  burst?: number;
  unit_multiplier?: number;
}
interface PbDescriptor {
  key?: string;
  value?: string;
  rate_limit?: PbPolicy | null;
  descriptors?: PbDescriptor[];
  shadow_mode?: boolean;
  detailed_metric?: boolean;
  quota_mode?: boolean;
  metadata?: PbStruct | null;
  rate_limits?: PbPolicy[];
  cidr?: string;
  prefix?: string;
  cidrs?: string[];
  prefixes?: string[];
}
interface PbQuotaRule {
  strategy?: string;
  unit?: number | string;
  requests_per_unit?: number | null;
  unit_multiplier?: number;
  burst?: number;
  on_store_failure?: string;
}
interface PbQuotaBucketRule {
  bucket_id?: Record<string, string>;
  bucket_id_cidr?: Record<string, string>;
  quota?: PbQuotaRule | null;
  name?: string;
}
interface PbConfig {
  name?: string;
  domain?: string;
  descriptors?: PbDescriptor[];
  quota_buckets?: PbQuotaBucketRule[];
  default_quota?: PbQuotaRule | null;
}

function quotaToPb(q: QuotaRuleMsg, unitEnum: protobuf.Enum): PbQuotaRule {
  const pb: PbQuotaRule = { strategy: q.strategy, unit: unitEnum.values[q.unit] ?? (/^\d+$/.test(q.unit) ? Number(q.unit) : 0), on_store_failure: q.onStoreFailure };
  if (q.requestsPerUnit !== undefined) pb.requests_per_unit = q.requestsPerUnit;
  if (q.unitMultiplier !== undefined && q.unitMultiplier !== 0) pb.unit_multiplier = q.unitMultiplier;
  if (q.burst !== undefined && q.burst !== 0) pb.burst = q.burst;
  return pb;
}

function quotaFromPb(pb: PbQuotaRule, unitEnum: protobuf.Enum): QuotaRuleMsg {
  const unit = typeof pb.unit === 'number' ? (unitEnum.valuesById[pb.unit] ?? String(pb.unit)) : (pb.unit ?? 'UNKNOWN');
  const out: QuotaRuleMsg = { strategy: pb.strategy ?? '', unit, onStoreFailure: pb.on_store_failure ?? '' };
  if (pb.requests_per_unit !== undefined && pb.requests_per_unit !== null) out.requestsPerUnit = pb.requests_per_unit;
  if (pb.unit_multiplier !== undefined && pb.unit_multiplier !== 0) out.unitMultiplier = pb.unit_multiplier;
  if (pb.burst !== undefined && pb.burst !== 0) out.burst = pb.burst;
  return out;
}

function configToPb(msg: RateLimitConfigMsg, unitEnum: protobuf.Enum): PbConfig {
  const pb: PbConfig = { name: msg.name, domain: msg.domain, descriptors: msg.descriptors.map((d) => descriptorToPb(d, unitEnum)) };
  if (msg.quotaBuckets !== undefined && msg.quotaBuckets.length > 0) {
    pb.quota_buckets = msg.quotaBuckets.map((b) => {
      const e: PbQuotaBucketRule = { bucket_id: { ...b.bucketId }, bucket_id_cidr: { ...b.bucketIdCidr }, name: b.name };
      if (b.quota !== undefined) e.quota = quotaToPb(b.quota, unitEnum);
      return e;
    });
  }
  if (msg.defaultQuota !== undefined) pb.default_quota = quotaToPb(msg.defaultQuota, unitEnum);
  return pb;
}

function configFromPb(pb: PbConfig, unitEnum: protobuf.Enum): RateLimitConfigMsg {
  const out: RateLimitConfigMsg = { name: pb.name ?? '', domain: pb.domain ?? '', descriptors: (pb.descriptors ?? []).map((d) => descriptorFromPb(d, unitEnum)) };
  if (pb.quota_buckets !== undefined && pb.quota_buckets.length > 0) {
    out.quotaBuckets = pb.quota_buckets.map((e) => {
      const b: QuotaBucketRuleMsg = { bucketId: { ...(e.bucket_id ?? {}) }, bucketIdCidr: { ...(e.bucket_id_cidr ?? {}) }, name: e.name ?? '' };
      if (e.quota !== undefined && e.quota !== null) b.quota = quotaFromPb(e.quota, unitEnum);
      return b;
    });
  }
  if (pb.default_quota !== undefined && pb.default_quota !== null) out.defaultQuota = quotaFromPb(pb.default_quota, unitEnum);
  return out;
}

function descriptorToPb(d: RateLimitConfigDescriptorMsg, unitEnum: protobuf.Enum): PbDescriptor {
  const pb: PbDescriptor = {
    key: d.key,
    value: d.value,
    descriptors: d.descriptors.map((c) => descriptorToPb(c, unitEnum)),
    shadow_mode: d.shadowMode,
    detailed_metric: d.detailedMetric,
    quota_mode: d.quotaMode,
  };
  if (d.rateLimit !== undefined) pb.rate_limit = policyToPb(d.rateLimit, unitEnum);
  if (d.rateLimits !== undefined && d.rateLimits.length > 0) pb.rate_limits = d.rateLimits.map((rl) => policyToPb(rl, unitEnum));
  if (d.cidr !== undefined && d.cidr !== '') pb.cidr = d.cidr;
  if (d.prefix !== undefined && d.prefix !== '') pb.prefix = d.prefix;
  if (d.cidrs !== undefined && d.cidrs.length > 0) pb.cidrs = [...d.cidrs];
  if (d.prefixes !== undefined && d.prefixes.length > 0) pb.prefixes = [...d.prefixes];
  if (d.metadata !== undefined) pb.metadata = toPbStruct(d.metadata);
  return pb;
}

function policyToPb(rl: RateLimitPolicyMsg, unitEnum: protobuf.Enum): PbPolicy {
  const unit = unitEnum.values[rl.unit] ?? (/^\d+$/.test(rl.unit) ? Number(rl.unit) : 0);
  const pb: PbPolicy = { unit, requests_per_unit: rl.requestsPerUnit, unlimited: rl.unlimited, name: rl.name, replaces: rl.replaces.map((r) => ({ name: r.name })) };
  if (rl.algorithm !== undefined && rl.algorithm !== '') pb.algorithm = rl.algorithm;
  if (rl.burst !== undefined && rl.burst !== 0) pb.burst = rl.burst;
  if (rl.unitMultiplier !== undefined && rl.unitMultiplier !== 0) pb.unit_multiplier = rl.unitMultiplier;
  return pb;
}

function policyFromPb(rl: PbPolicy, unitEnum: protobuf.Enum): RateLimitPolicyMsg {
  const unit = typeof rl.unit === 'number' ? (unitEnum.valuesById[rl.unit] ?? String(rl.unit)) : (rl.unit ?? 'UNKNOWN');
  const out: RateLimitPolicyMsg = {
    unit,
    requestsPerUnit: rl.requests_per_unit ?? 0,
    unlimited: rl.unlimited ?? false,
    name: rl.name ?? '',
    replaces: (rl.replaces ?? []).map((r) => ({ name: r.name ?? '' })),
  };
  if (rl.algorithm !== undefined && rl.algorithm !== '') out.algorithm = rl.algorithm;
  if (rl.burst !== undefined && rl.burst !== 0) out.burst = rl.burst;
  if (rl.unit_multiplier !== undefined && rl.unit_multiplier !== 0) out.unitMultiplier = rl.unit_multiplier;
  return out;
}

function descriptorFromPb(pb: PbDescriptor, unitEnum: protobuf.Enum): RateLimitConfigDescriptorMsg {
  const out: RateLimitConfigDescriptorMsg = {
    key: pb.key ?? '',
    value: pb.value ?? '',
    descriptors: (pb.descriptors ?? []).map((c) => descriptorFromPb(c, unitEnum)),
    shadowMode: pb.shadow_mode ?? false,
    detailedMetric: pb.detailed_metric ?? false,
    quotaMode: pb.quota_mode ?? false,
  };
  if (pb.rate_limit !== undefined && pb.rate_limit !== null) out.rateLimit = policyFromPb(pb.rate_limit, unitEnum);
  if (pb.rate_limits !== undefined && pb.rate_limits.length > 0) out.rateLimits = pb.rate_limits.map((rl) => policyFromPb(rl, unitEnum));
  if (pb.cidr !== undefined && pb.cidr !== '') out.cidr = pb.cidr;
  if (pb.prefix !== undefined && pb.prefix !== '') out.prefix = pb.prefix;
  if (pb.cidrs !== undefined && pb.cidrs.length > 0) out.cidrs = pb.cidrs;
  if (pb.prefixes !== undefined && pb.prefixes.length > 0) out.prefixes = pb.prefixes;
  if (pb.metadata !== undefined && pb.metadata !== null) out.metadata = fromPbStruct(pb.metadata);
  return out;
}

export function encodeRateLimitConfig(msg: RateLimitConfigMsg): Buffer {
  const t = load();
  return Buffer.from(t.config.encode(t.config.fromObject(configToPb(msg, t.unitEnum))).finish());
}

/** Throws ProtoDecodeError when the bytes are not a valid RateLimitConfig. */
export function decodeRateLimitConfig(bytes: Uint8Array): RateLimitConfigMsg {
  const t = load();
  // Enums as numbers so values unknown to this schema survive as their number.
  const pb = decodeChecked(t.config, bytes, () => t.config.toObject(t.config.decode(bytes), { defaults: false, arrays: true, enums: Number }) as PbConfig);
  return configFromPb(pb, t.unitEnum);
}

/** A RateLimitConfig packed as google.protobuf.Any. */
export function packRateLimitConfig(msg: RateLimitConfigMsg): AnyMsg {
  return { typeUrl: RATE_LIMIT_CONFIG_TYPE_URL, value: encodeRateLimitConfig(msg) };
}
