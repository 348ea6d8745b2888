// Keeps the unit test tier honest. A test file's tier is its directory (<workspace>/test/unit,
// test/integration, test/e2e; *.test.ts beside the code under src/ are unit), and unit tests may
// not depend on anything outside the test process: no Redis, Sentinel, Cluster, memcached or
// PostgreSQL, no spawned service, browser or Python. The server starters of this kit call
// `assertMayStartServers`, and scripts/run-tests.mjs preloads unit-tier-preload.ts, which closes
// the side door of calling node:child_process or node:cluster directly.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { basename } from 'node:path';

export type TestTier = 'unit' | 'integration' | 'e2e';

const TIERS: readonly TestTier[] = ['unit', 'integration', 'e2e'];

/** The variable scripts/run-tests.mjs sets for a run narrowed to one tier. */
export const TEST_TIER_ENV = 'RLS_TEST_TIER';

export class UnitTierViolation extends Error {
  constructor(what: string) {
    super(`unit tests may not start servers: move this file to test/integration (or test/e2e for spawned processes); it called ${what}`);
    this.name = 'UnitTierViolation';
  }
}

/** The tier a test file belongs to by its path, or undefined for a file outside the tier layout. */
export function tierOfTestFile(path: string): TestTier | undefined {
  const p = path.replaceAll('\\', '/');
  for (const tier of TIERS) if (p.includes(`/test/${tier}/`)) return tier;
  if (p.includes('/src/') && p.endsWith('.test.ts')) return 'unit';
  return undefined;
}

/**
 * The tier of the running test process: the file node's test runner started (argv[1]) decides,
 * so a whole-suite run guards its unit files too; RLS_TEST_TIER covers a file outside the layout.
 * Only a process the test runner started counts (it sets NODE_TEST_CONTEXT), never the runner
 * itself or a service process a test spawned.
 */
export function currentTestTier(): TestTier | undefined {
  if (process.env.NODE_TEST_CONTEXT === undefined) return undefined;
  const script = process.argv[1];
  const byPath = script === undefined ? undefined : tierOfTestFile(script);
  if (byPath !== undefined) return byPath;
  const env = process.env[TEST_TIER_ENV];
  return TIERS.find((t) => t === env);
}

/** Throws when a unit test tries to start an external server or process. */
export function assertMayStartServers(what: string): void {
  if (currentTestTier() === 'unit') throw new UnitTierViolation(what);
}

// One-shot tools such as openssl (certificates for TLS tests) run to completion inside the
// call, so synchronous child_process calls stay allowed unless they start node or Python,
// which is how a test would run a service or a CLI as a process.
function startsServiceOrInterpreter(file: unknown): boolean {
  if (typeof file !== 'string') return false;
  const name = basename(file);
  return file === process.execPath || name === 'node' || name.startsWith('python') || name === 'tsx';
}

let installed = false;

/**
 * In a unit test process, makes the process-starting functions of node:child_process and
 * node:cluster throw. Patches the shared builtin objects and re-syncs their ESM bindings, so
 * both `import { spawn } from 'node:child_process'` and `require` see the guarded versions.
 */
export function installUnitTierGuard(): void {
  if (installed || currentTestTier() !== 'unit') return;
  installed = true;
  const require = createRequire(import.meta.url);
  // The builtin module objects are mutable by design; typed loosely only for the assignment.
  const cp = require('node:child_process') as Record<string, unknown>;
  for (const name of ['spawn', 'fork', 'exec', 'execFile']) {
    cp[name] = (): never => {
      throw new UnitTierViolation(`child_process.${name}`);
    };
  }
  for (const name of ['spawnSync', 'execFileSync']) {
    const original = cp[name];
    if (typeof original !== 'function') continue;
    cp[name] = (file: unknown, ...rest: unknown[]): unknown => {
      if (startsServiceOrInterpreter(file)) throw new UnitTierViolation(`child_process.${name}(${String(file)})`);
      return Reflect.apply(original, cp, [file, ...rest]) as unknown;
    };
  }
  const execSync = cp.execSync;
  if (typeof execSync === 'function') {
    cp.execSync = (command: unknown, ...rest: unknown[]): unknown => {
      const first = typeof command === 'string' ? command.trim().split(/\s+/)[0] : undefined;
      if (startsServiceOrInterpreter(first)) throw new UnitTierViolation(`child_process.execSync(${String(command)})`);
      return Reflect.apply(execSync, cp, [command, ...rest]) as unknown;
    };
  }
  const cluster = require('node:cluster') as Record<string, unknown>;
  cluster.fork = (): never => {
    throw new UnitTierViolation('cluster.fork');
  };
  syncBuiltinESMExports();
}
