// docs/architecture.md names files; every one it names exists. A name with a folder in it must be the
// end of a real path (e.g. `store/decorate-store.ts`); a bare file name must be some file's name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const SKIP = new Set(['node_modules', 'dist', '.git', 'data']);
// Not after `/` (a URL path such as /openapi.json), `*` or `>` (patterns such as `*-settings.ts`, `<name>-routes.ts`).
const NAMED = /(?<![\w.\-/*>])((?:[\w.-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|mjs|js|md|sh|yaml|yml|json|proto))(?![\w])/g;

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else out.push(relative(ROOT, p).split('\\').join('/'));
  }
  return out;
}

test('every file docs/architecture.md names exists', () => {
  const all = files(ROOT);
  const names = new Set(all.map((f) => f.slice(f.lastIndexOf('/') + 1)));
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const named = new Set([...doc.matchAll(NAMED)].map((m) => m[1]!));
  assert.ok(named.size > 100, `read ${named.size} file names`);
  const missing = [...named].filter((n) => (n.includes('/') ? !all.some((f) => f === n || f.endsWith(`/${n}`)) : !names.has(n)));
  assert.deepEqual(missing, [], `docs/architecture.md names files that do not exist: ${missing.join(', ')}`);
});
