// Which memcached node holds a key: a ketama-style consistent-hash ring. Each node (`host:port`)
// puts 160 points on a 32-bit circle (the four little-endian words of MD5(`<host:port>-<i>`),
// i = 0..39); a key goes to the first point at or after the hash of the key (FNV-1a 32 with a
// murmur3 finaliser), wrapping around. The ring depends only on the set of addresses, not on
// their order, so every replica given the same list (or the same SRV answer) maps a key to the
// same node, and adding or removing one node moves only about 1/n of the keys.
import { createHash } from 'node:crypto';

const POINTS_PER_DIGEST = 4;
const DIGESTS_PER_NODE = 40;

/** FNV-1a 32 over the key's UTF-16 code units, then murmur3's fmix32 so nearby keys spread. */
export function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class HashRing<T> {
  private readonly points: Uint32Array;
  private readonly owners: T[];

  /** `nodes` maps each address to the value lookups return (a node object). */
  constructor(nodes: ReadonlyMap<string, T>) {
    const pts: { p: number; owner: T; addr: string }[] = [];
    for (const [addr, owner] of nodes) {
      for (let i = 0; i < DIGESTS_PER_NODE; i++) {
        const d = createHash('md5').update(`${addr}-${i}`).digest();
        for (let j = 0; j < POINTS_PER_DIGEST; j++) pts.push({ p: d.readUInt32LE(j * 4), owner, addr });
      }
    }
    // Ties (vanishingly rare) are broken by address so the ring stays order-independent.
    pts.sort((a, b) => a.p - b.p || (a.addr < b.addr ? -1 : a.addr > b.addr ? 1 : 0));
    this.points = Uint32Array.from(pts.map((x) => x.p));
    this.owners = pts.map((x) => x.owner);
  }

  get empty(): boolean {
    return this.owners.length === 0;
  }

  /** The owner of a key hash; undefined when the ring is empty. */
  lookup(hash: number): T | undefined {
    const pts = this.points;
    const n = pts.length;
    if (n === 0) return undefined;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((pts[mid] as number) < hash) lo = mid + 1;
      else hi = mid;
    }
    return this.owners[lo === n ? 0 : lo];
  }
}
