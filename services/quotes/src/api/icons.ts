import { readdirSync, readFileSync } from 'node:fs';
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

/**
 * Serves the colour SVGs of `cryptocurrency-icons`. `/icons/<name>.svg` needs no token, so the
 * name is anyone's to choose: only names of files the package ships are kept in memory (read once
 * each, so at most the directory's ~500 icons), and the fallback for any other name is drawn per
 * request and never kept.
 */
export class IconStore {
  private readonly files: ReadonlySet<string>;
  private readonly cache = new Map<string, Buffer>();
  constructor(private readonly dir: string) {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      // No icon package: every coin gets the drawn fallback.
    }
    this.files = new Set(names.filter((n) => n.endsWith('.svg')).map((n) => n.slice(0, -4).toLowerCase()));
  }

  /** Icons held in memory (bounded by the package's files, whatever names are asked). */
  get size(): number {
    return this.cache.size;
  }

  /** Undefined for names that cannot be a symbol; otherwise the icon or the fallback. */
  get(symbol: string): { svg: Buffer; found: boolean } | undefined {
    const s = symbol.toLowerCase();
    if (!SYMBOL.test(s)) return undefined;
    let svg = this.files.has(s) ? this.cache.get(s) : undefined;
    if (svg === undefined && this.files.has(s)) {
      try {
        svg = readFileSync(join(this.dir, `${s}.svg`));
        this.cache.set(s, svg);
      } catch {
        svg = undefined;
      }
    }
    return svg === undefined ? { svg: Buffer.from(fallbackIcon(s)), found: false } : { svg, found: true };
  }
}
