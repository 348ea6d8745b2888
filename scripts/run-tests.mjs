#!/usr/bin/env node
// Runs every *.test.ts of the repository with node's own test runner. TypeScript is loaded
// through tsx, and workspace packages resolve to their sources (the "source" export condition),
// so a test run never depends on a stale dist/. Extra arguments narrow the run to paths
// containing any of them, e.g. `node scripts/run-tests.mjs ratelimit/test/redis`.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

const root = new URL('..', import.meta.url).pathname;
const roots = ['packages', 'services'];
const skipDirs = new Set(['node_modules', 'dist', '.git', 'data']);

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    if (skipDirs.has(name)) continue;
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) walk(p, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, p));
  }
  return out;
}

const filters = process.argv.slice(2);
let files = roots.flatMap((r) => walk(join(root, r), []));
if (filters.length > 0) files = files.filter((f) => filters.some((x) => f.includes(x)));
files.sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? String(Math.max(2, availableParallelism()));
const args = [
  '--conditions=source',
  '--import', 'tsx',
  '--test',
  `--test-concurrency=${concurrency}`,
  '--test-timeout=120000',
  ...files,
];
const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
