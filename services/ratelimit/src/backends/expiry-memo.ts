// Which `expireOnCreate` keys (counter-store.ts: keys that name their window in our own format,
// e.g. a `rate_limits` entry's) a Redis store has already given their TTL, so later increments of
// the same key send INCRBY alone instead of INCRBY + EXPIRE (docs/ratelimit.md, "Several limits on
// one descriptor": half the commands per limit on Redis).
//
// A fixed-size, direct-mapped table of 32-bit key hashes: it never grows whatever keys clients make
// (one Int32Array of EXPIRY_MEMO_SLOTS entries, 256 KiB), and a new key simply takes the slot of
// an older one. Being wrong is never unsafe, because the store checks INCRBY's answer:
//   - a key the memo does not know gets EXPIRE as before (a forgotten or evicted entry costs one
//     EXPIRE, today's price);
//   - a key the memo wrongly believes has a TTL (a hash collision, a key deleted or reset or lost
//     since) is created again by INCRBY, which then answers exactly the addend: the store sends the
//     EXPIRE in a second round trip before answering (counter-store.ts: a key it creates always
//     gets its TTL).
// The one case INCRBY cannot reveal is a key that exists without a TTL (a failover that replicated
// an INCRBY but not its EXPIRE): stores clear the memo whenever their connections drop or the
// node behind them changes, so such a key gets its EXPIRE on its next increment, as upstream's
// re-applied EXPIRE would give it.

/** Slots of the table (a power of two). */
export const EXPIRY_MEMO_SLOTS = 1 << 16;

/** FNV-1a over the key's UTF-16 code units; never 0 (0 marks an empty slot). */
export function expiryHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h === 0 ? 1 : h;
}

export class ExpiryMemo {
  private readonly slots = new Int32Array(EXPIRY_MEMO_SLOTS);

  /** True when the key of hash `h` was recorded (and not overwritten or cleared since). */
  has(h: number): boolean {
    return this.slots[(h ^ (h >>> 16)) & (EXPIRY_MEMO_SLOTS - 1)] === h;
  }

  /** Records that the key of hash `h` has its TTL (Redis answered EXPIRE with 1). */
  add(h: number): void {
    this.slots[(h ^ (h >>> 16)) & (EXPIRY_MEMO_SLOTS - 1)] = h;
  }

  /** Forgets every key (connections dropped, another node took over, keys were reset). */
  clear(): void {
    this.slots.fill(0);
  }
}
