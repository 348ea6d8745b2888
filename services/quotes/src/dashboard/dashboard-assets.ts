import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative } from 'node:path';

export interface Asset {
  body: Buffer;
  type: string;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * The built dashboard (Vite output), read into memory once: a few hundred kilobytes, served
 * without touching the disk and with no path ever derived from a request.
 */
export class DashboardAssets {
  private readonly files = new Map<string, Asset>();
  readonly built: boolean;
  constructor(readonly dir: string) {
    this.built = existsSync(join(dir, 'index.html'));
    if (this.built) this.load(dir);
  }

  private load(dir: string): void {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) this.load(p);
      else this.files.set(relative(this.dir, p).split('\\').join('/'), { body: readFileSync(p), type: TYPES[extname(name)] ?? 'application/octet-stream' });
    }
  }

  /** `index.html`, `assets/index-abc123.js`, ... */
  get(path: string): Asset | undefined {
    return this.files.get(path);
  }
}
