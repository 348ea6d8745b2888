// Tags on statistics: EXTRA_TAGS (every stat) plus a stat's own tags. The plain statsd sink has no
// tag syntax, so upstream (gostats) folds tags into the name as `<name>.__<k>=<v>`, sorted by key,
// with `.`, `:` and `|` in values turned into `_` (they would break the name or the line) and empty
// keys or values dropped. The tagged sink and Prometheus get the same (sanitised) pairs as real
// tags / labels, so a value reads the same on every sink.
import type { StatTags } from '@rls/engine';

export type TagPair = readonly [key: string, value: string];

/** Parses EXTRA_TAGS (`k1:v1,k2:v2`); throws an Error naming the bad item. Empty ⇒ no tags. */
export function parseExtraTags(raw: string): StatTags {
  const out: Record<string, string> = {};
  if (raw.trim() === '') return Object.freeze(out);
  for (const item of raw.split(',')) {
    const i = item.indexOf(':');
    const key = i < 0 ? '' : item.slice(0, i).trim();
    const value = i < 0 ? '' : item.slice(i + 1).trim();
    if (key === '' || value === '') throw new Error(`expected key:value pairs separated by commas, got '${item}'`);
    out[key] = value;
  }
  return Object.freeze(out);
}

export function sanitizeTagValue(v: string): string {
  return v.replace(/[.:|]/g, '_');
}

/**
 * The stat's tags and the extra tags as sorted, sanitised pairs (stat tags win on a shared key,
 * they are the more specific). Empty keys/values are dropped as upstream does.
 */
export function mergedTagPairs(statTags: StatTags, extraTags: StatTags): TagPair[] {
  const merged = new Map<string, string>();
  for (const [k, v] of Object.entries(extraTags)) merged.set(k, v);
  for (const [k, v] of Object.entries(statTags)) merged.set(k, v);
  const pairs: TagPair[] = [];
  for (const [k, v] of merged) {
    if (k === '' || v === '') continue;
    pairs.push([k, sanitizeTagValue(v)]);
  }
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return pairs;
}

/** `<name>.__k1=v1.__k2=v2` — the plain statsd rendering of a tagged stat. */
export function serializeTaggedName(name: string, pairs: readonly TagPair[]): string {
  let out = name;
  for (const [k, v] of pairs) out += `.__${k}=${v}`;
  return out;
}
