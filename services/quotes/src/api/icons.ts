import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const SYMBOL = /^[a-z0-9$]{1,20}$/;

/** A neutral coin drawn with the symbol's first letters, for coins without an icon. */
export function fallbackIcon(symbol: string): string {
  const label = symbol.toUpperCase().replace(/[^A-Z0-9]/g, '').slice(0, 4) || '?';
  const size = label.length <= 2 ? 12 : label.length === 3 ? 10 : 8;
  return (
    '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">' +
    '<circle cx="16" cy="16" r="16" fill="#8A92B2"/>' +
    `<text x="16" y="20" font-family="sans-serif" font-size="${size}" font-weight="bold" fill="#fff" text-anchor="middle">${label}</text>` +
    '</svg>'
  );
}

/** Serves the colour SVGs of `cryptocurrency-icons`, read once and kept in memory. */
export class IconStore {
  private readonly cache = new Map<string, { svg: Buffer; found: boolean }>();
  constructor(private readonly dir: string) {}

  /** Undefined for names that cannot be a symbol; otherwise the icon or the fallback. */
  get(symbol: string): { svg: Buffer; found: boolean } | undefined {
    const s = symbol.toLowerCase();
    if (!SYMBOL.test(s)) return undefined;
    let hit = this.cache.get(s);
    if (hit === undefined) {
      try {
        hit = { svg: readFileSync(join(this.dir, `${s}.svg`)), found: true };
      } catch {
        hit = { svg: Buffer.from(fallbackIcon(s)), found: false };
      }
      if (this.cache.size < 5000) this.cache.set(s, hit);
    }
    return hit;
  }
}
