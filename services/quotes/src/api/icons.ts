import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const SYMBOL = /^[a-z0-9$]{1,20}$/;

/** FNV-1a of a string: the seed of a generated icon (stable across runs and machines). */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * A coin-like icon generated from a name, for coins (and exchanges) without a drawn one: a disc
 * in a colour of its own with a mirrored 5 x 5 pattern, so every coin in a list is told apart at
 * a glance and the same name always gets the same icon. Shapes only: no lettering, which reads
 * as a placeholder and clashes with the drawn icons beside it.
 */
export function fallbackIcon(name: string): string {
  const h = fnv1a(name.toLowerCase());
  const hue = h % 360;
  const cells: string[] = [];
  let bits = fnv1a(`${name}:pattern`);
  for (let y = 0; y < 5; y++) {
    for (let x = 0; x < 3; x++) {
      const on = (bits & 1) === 1;
      bits = bits >>> 1 || fnv1a(`${name}:${y}:${x}`);
      if (!on) continue;
      for (const cx of x === 2 ? [2] : [x, 4 - x]) cells.push(`<rect x="${6 + cx * 4}" y="${6 + y * 4}" width="4" height="4"/>`);
    }
  }
  return (
    '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">' +
    `<circle cx="16" cy="16" r="16" fill="hsl(${hue} 55% 45%)"/>` +
    `<circle cx="16" cy="16" r="13" fill="none" stroke="hsl(${hue} 60% 70%)" stroke-width="1.5"/>` +
    `<g fill="#fff" fill-opacity="0.92">${cells.join('')}</g>` +
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
