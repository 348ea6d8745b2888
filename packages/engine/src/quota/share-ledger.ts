// The bookkeeping of one bucket's shared record (share-store.ts), as plain functions on a map of
// instance entries: the memory store runs these, and the Redis store's Lua scripts are a line-by-
// line port of them (services/ratelimit/src/backends/redis-quota-share.ts), so one contract suite
// holds both to the same behaviour.
import type { GrantRequest, InstanceShare, DemandUpdate } from './share-store.js';

export interface ShareEntry {
  demand: number;
  grant: number;
  /** A grant that was lowered stays reserved at this value until heldUntil. */
  held: number;
  heldUntil: number;
  expiresAt: number;
}

/** What an entry keeps from the bucket's capacity at `now`. */
export function reservedOf(e: ShareEntry, now: number): number {
  return e.heldUntil > now && e.held > e.grant ? e.held : e.grant;
}

/** Deletes the entries whose lifetime ended; returns the reserved total of the rest. */
export function pruneEntries(entries: Map<string, ShareEntry>, now: number): number {
  let total = 0;
  for (const [id, e] of entries) {
    if (e.expiresAt <= now) entries.delete(id);
    else total += reservedOf(e, now);
  }
  return total;
}

export function exchangeEntries(entries: Map<string, ShareEntry>, updates: readonly DemandUpdate[], now: number, ttl: number): InstanceShare[] {
  pruneEntries(entries, now);
  for (const u of updates) {
    const e = entries.get(u.instance);
    if (e === undefined) entries.set(u.instance, { demand: u.demand, grant: 0, held: 0, heldUntil: 0, expiresAt: now + ttl });
    else {
      e.demand = u.demand;
      e.expiresAt = now + ttl;
    }
  }
  return sortedShares(entries);
}

export function sortedShares(entries: ReadonlyMap<string, ShareEntry>): InstanceShare[] {
  const ids = [...entries.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return ids.map((instance) => {
    const e = entries.get(instance)!;
    return { instance, demand: e.demand, grant: e.grant };
  });
}

export function reserveEntries(
  entries: Map<string, ShareEntry>,
  capacity: number,
  requests: readonly GrantRequest[],
  now: number,
  ttl: number,
  hold: number,
): number[] {
  let total = pruneEntries(entries, now);
  const out = new Array<number>(requests.length).fill(0);
  const lowered = new Uint8Array(requests.length);
  const entryOf = (instance: string): ShareEntry => {
    let e = entries.get(instance);
    if (e === undefined) entries.set(instance, (e = { demand: 0, grant: 0, held: 0, heldUntil: 0, expiresAt: now + ttl }));
    e.expiresAt = now + ttl;
    return e;
  };
  // Decreases first: they cannot fail, and once their hold ends they make room for increases.
  requests.forEach((r, i) => {
    const e = entryOf(r.instance);
    if (r.want >= e.grant) return;
    const before = reservedOf(e, now);
    // The lowered grant stays reserved for `hold`, covering the time until the data plane applies it.
    e.held = before;
    e.heldUntil = now + hold;
    e.grant = r.want;
    total += reservedOf(e, now) - before;
    out[i] = r.want;
    lowered[i] = 1;
  });
  requests.forEach((r, i) => {
    const e = entries.get(r.instance)!;
    if (lowered[i] === 1 || r.want < e.grant) return;
    const before = reservedOf(e, now);
    const room = capacity - total;
    const limit = before + (room > 0 ? room : 0);
    const granted = r.want < limit ? r.want : limit;
    // Never below the current grant: a replica that could not grow simply keeps what it had.
    if (granted > e.grant) e.grant = granted;
    total += reservedOf(e, now) - before;
    out[i] = e.grant;
  });
  return out;
}

export function releaseEntries(entries: Map<string, ShareEntry>, instances: readonly string[]): void {
  for (const id of instances) entries.delete(id);
}
