#!/usr/bin/env node
// Runs the repository's *.test.ts files with node's own test runner, in one invocation, so the
// closing lines are node's summary (`# tests N`, `# pass N`, `# fail N`) that CI reads. TypeScript
// is loaded through tsx, and workspace packages resolve to their sources (the "source" export
// condition), so a test run never depends on a stale dist/.
//
//   node scripts/run-tests.mjs                       every test file
//   node scripts/run-tests.mjs --tier unit           one tier (unit | integration | e2e)
//   node scripts/run-tests.mjs ratelimit/test/redis  only paths containing any argument
//
// A file's tier is its directory: <workspace>/test/unit, test/integration, test/e2e; *.test.ts
// beside the code under src/ are unit. Unit tests need no external server and no spawned process;
// integration tests use real stores and databases with the app in-process; e2e tests spawn
// service processes, a browser or Python. Every test process preloads testkit's unit-tier guard,
// which makes server starters and child_process throw inside a unit test file, so the split
// cannot rot (see packages/testkit/src/tier-guard.ts).
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';

const root = new URL('..', import.meta.url).pathname;
const roots = ['packages', 'services'];
const skipDirs = new Set(['node_modules', 'dist', '.git', 'data']);
const tiers = ['unit', 'integration', 'e2e'];

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

/** Mirrors tierOfTestFile in packages/testkit/src/tier-guard.ts (this script stays plain JS). */
function tierOf(file) {
  for (const tier of tiers) if (file.includes(`/test/${tier}/`)) return tier;
  if (file.includes('/src/')) return 'unit';
  return undefined;
}

function parseArgs(argv) {
  const filters = [];
  let tier;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--tier' || a.startsWith('--tier=')) {
      tier = a === '--tier' ? argv[++i] : a.slice('--tier='.length);
      if (!tiers.includes(tier)) {
        console.error(`--tier must be one of ${tiers.join(', ')}, got ${String(tier)}`);
        process.exit(2);
      }
    } else filters.push(a);
  }
  return { tier, filters };
}

const { tier, filters } = parseArgs(process.argv.slice(2));
let files = roots.flatMap((r) => walk(join(root, r), []));
const untiered = files.filter((f) => tierOf(f) === undefined);
if (tier !== undefined) {
  files = files.filter((f) => tierOf(f) === tier);
  // Left outside the layout a file would silently drop out of every tier run; say so.
  if (untiered.length > 0) console.error(`warning: ${untiered.length} test files are in no tier directory and were not run: ${untiered.join(', ')}`);
}
if (filters.length > 0) files = files.filter((f) => filters.some((x) => f.includes(x)));
files.sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// Unit files start no servers and mostly wait on tsx loading and timers, so they overlap well
// beyond the core count (2 cores: 34 s at 2, 25 s at 4); tiers with real servers keep one file per core.
const concurrency = process.env.TEST_CONCURRENCY ?? String(tier === 'unit' ? Math.max(4, availableParallelism()) : Math.max(2, availableParallelism()));
const args = [
  '--conditions=source',
  '--import', 'tsx',
  // absolute, so a process a test starts with this process's execArgv finds it from any cwd
  '--import', pathToFileURL(join(root, 'packages/testkit/src/unit-tier-preload.ts')).href,
  '--test',
  // node's TAP output with a list of the failing tests just above the closing summary
  '--test-reporter', pathToFileURL(join(root, 'scripts/test-reporter.mjs')).href,
  '--test-reporter-destination', 'stdout',
  `--test-concurrency=${concurrency}`,
  '--test-timeout=120000',
  ...files,
];
const env = tier === undefined ? process.env : { ...process.env, RLS_TEST_TIER: tier };
const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit', env });
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
