// The Node versions the repository declares (package.json `engines.node`) are ones every locked
// dependency accepts, so `npm ci` on a supported Node prints no EBADENGINE warning (issue 27,
// point 8: cookie@2 wanted Node >= 22 through fastify's inject path and is overridden to 1.1.1).
// The check is by range inclusion, not by the Node running the test: a dependency bump that
// narrows the range fails here on any machine, naming the package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const repo = new URL('../../../../', import.meta.url).pathname;

/** The two functions of npm's own range library (a root devDependency) this test needs. */
interface SemverRanges {
  subset(sub: string, dom: string): boolean;
  satisfies(version: string, range: string): boolean;
}
const semver = createRequire(import.meta.url)('semver') as SemverRanges;

interface LockEntry {
  version?: string;
  engines?: { node?: string } | string[];
  optional?: boolean;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(join(repo, path), 'utf8')) as T;
}

const declared = readJson<{ engines: { node: string } }>('package.json').engines.node;
const lock = readJson<{ packages: Record<string, LockEntry> }>('package-lock.json');

test('every locked package accepts every Node version package.json declares', () => {
  const narrower: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    // Old packages wrote engines as an array of strings; npm ignores that form.
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (path === '' || range === undefined) continue;
    if (!semver.subset(declared, range)) narrower.push(`${path.replace(/^.*node_modules\//, '')}@${entry.version ?? '?'} wants node ${range}`);
  }
  assert.deepEqual(narrower, [], `package.json declares node "${declared}", narrower than:\n${narrower.join('\n')}`);
});

test('the Node running the tests is one package.json declares', () => {
  assert.ok(semver.satisfies(process.version, declared), `node ${process.version} is outside engines.node "${declared}"`);
});

test('fastify inject runs on cookie 1.x: the override in package.json is what the lock installs', () => {
  const overrides = readJson<{ overrides?: Record<string, Record<string, string>> }>('package.json').overrides;
  const pinned = overrides?.['light-my-request']?.cookie;
  assert.ok(pinned !== undefined, 'package.json overrides light-my-request > cookie');
  const installed = lock.packages['node_modules/light-my-request/node_modules/cookie'] ?? lock.packages['node_modules/cookie'];
  assert.equal(installed?.version, pinned);
  // light-my-request calls stringifySetCookie({ name, value }), which cookie 1.1 provides.
  const cookie = createRequire(join(repo, 'node_modules/light-my-request/package.json'))('cookie') as { stringifySetCookie(c: { name: string; value: string }): string };
  assert.equal(cookie.stringifySetCookie({ name: 'sid', value: 'a b' }), 'sid=a%20b');
});
