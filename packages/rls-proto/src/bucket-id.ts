// The canonical form of an RLQS BucketId. The id is a map, so {a: A, b: B} and {b: B, a: A} are one
// bucket: the key sorts the entries by key and encodes them unambiguously (JSON strings escape
// every character that could otherwise be read as a separator), so two ids share a key exactly
// when they hold the same pairs. The key is what the server indexes, shares through the counter
// store and prints; it is computed once per reported bucket, not per request.
import type { BucketEntryMsg } from './rlqs-messages.js';

/**
 * `[["a","A"],["b","B"]]` for {b: B, a: A}. Entries with the same key are expected to have been
 * merged by the decoder; if a caller passes duplicates, the last one wins, as on the wire.
 */
export function bucketKey(id: readonly BucketEntryMsg[]): string {
  if (id.length === 1) {
    const e = id[0]!;
    return `[[${JSON.stringify(e.key)},${JSON.stringify(e.value)}]]`;
  }
  const byKey = new Map<string, string>();
  for (const e of id) byKey.set(e.key, e.value);
  const keys = [...byKey.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  let out = '[';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    out += `${i > 0 ? ',' : ''}[${JSON.stringify(k)},${JSON.stringify(byKey.get(k)!)}]`;
  }
  return out + ']';
}

/** The entries of a canonical key, sorted by key (the inverse of bucketKey). */
export function bucketIdOfKey(key: string): BucketEntryMsg[] {
  const pairs = JSON.parse(key) as [string, string][];
  return pairs.map(([k, v]) => ({ key: k, value: v }));
}
