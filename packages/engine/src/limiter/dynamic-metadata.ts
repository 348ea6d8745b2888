// `dynamic_metadata` of a response (RESPONSE_DYNAMIC_METADATA; the layout upstream's src/service/ratelimit.go builds).
import { Code, type DescriptorStatus, type JsonValue, type RateLimitRequest } from '../domain.js';
import type { LimitMatch } from '../config/rule-tree.js';
import { unitName } from '../units.js';

type JsonObject = { [k: string]: JsonValue };

export function buildDynamicMetadata(
  req: RateLimitRequest,
  statuses: readonly DescriptorStatus[],
  matches: readonly (LimitMatch | undefined)[],
): JsonObject {
  const descriptors: JsonValue[] = req.descriptors.map((d) => {
    const out: JsonObject = { entries: d.entries.map((e) => `${e.key}=${e.value}`) };
    // Upstream renders the override message as protobuf text; the shape is informative only.
    if (d.limit !== undefined) out.limit = `requests_per_unit:${d.limit.requestsPerUnit} unit:${unitName(d.limit.unit)}`;
    if (d.hitsAddend !== undefined) out.hitsAddend = d.hitsAddend;
    return out;
  });
  const result: JsonObject = { domain: req.domain, descriptors };
  if (req.hitsAddend !== 0) result.hitsAddend = req.hitsAddend;
  const merged: JsonObject = {};
  let any = false;
  for (let i = 0; i < statuses.length; i++) {
    const meta = matches[i]?.limit.metadata;
    if (meta === undefined || statuses[i]!.code === Code.OVER_LIMIT) continue;
    mergeInto(merged, meta);
    any = true;
  }
  if (any && Object.keys(merged).length > 0) result.metadata = merged;
  return result;
}

/** Adds `src` into `dst` (which this module owns): existing keys win, nested objects merge; `src` is never mutated. */
function mergeInto(dst: JsonObject, src: { readonly [k: string]: JsonValue }): void {
  for (const [k, v] of Object.entries(src)) {
    const have = dst[k];
    if (have === undefined) dst[k] = clone(v);
    else if (isObject(have) && isObject(v)) mergeInto(have, v);
  }
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function clone(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(clone);
  if (isObject(v)) {
    const o: JsonObject = {};
    for (const [k, x] of Object.entries(v)) o[k] = clone(x);
    return o;
  }
  return v;
}
