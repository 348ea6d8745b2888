// Live reload of rule files on a real file system with real fs.watch events: both watch modes,
// symlink swap and directory rename, the Kubernetes ConfigMap layout, bad edits that keep the old
// rules, bursts of writes, and in-flight requests finishing on the rule set they started with.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock, tempDir, waitFor } from '@rls/testkit';
import { MemoryStore, RateLimitService, StatsStore, mathRandom, type CounterOp, type CounterStore } from '@rls/engine';
import { limiterOptionsFrom } from '../../src/compose.js';
import { createLogger } from '../../src/logger.js';
import { FileRuleProvider, type FileProviderOptions } from '../../src/provider/file-provider.js';
import { loadSettings } from '../../src/settings.js';

const rules = (domain: string, limit: number): string => `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: ${limit} }\n`;

const dirs: { cleanup: () => void }[] = [];
after(() => {
  for (const d of dirs) d.cleanup();
});

interface Harness {
  provider: FileRuleProvider;
  service: RateLimitService;
  stats: StatsStore;
  logs: string[];
  successes: () => number;
  errors: () => number;
  dump: () => string;
  /** Resolves after the next `n` load attempts. */
  loads: (n?: number) => Promise<void>;
}

function harness(opts: Partial<FileProviderOptions> & { runtimeRoot: string }, store?: CounterStore): Harness {
  const stats = new StatsStore();
  const clock = new FakeClock(1_700_000_000_000);
  const settings = loadSettings({ BACKEND_TYPE: 'memory' }).settings;
  const service = new RateLimitService({ store: store ?? new MemoryStore({ clock }), stats, clock, random: mathRandom, options: limiterOptionsFrom(settings) });
  const logs: string[] = [];
  const logger = createLogger({ level: 'debug', format: 'json', destination: { write: (l: string) => logs.push(l) } });
  const provider = new FileRuleProvider(
    { runtimeSubdirectory: 'ratelimit', runtimeAppDirectory: 'config', ignoreDotfiles: false, watchRoot: true, debounceMs: 100, mergeDomainConfig: false, ...opts },
    { sink: service, stats, logger },
  );
  let attempts = 0;
  provider.onLoad(() => (attempts += 1));
  return {
    provider,
    service,
    stats,
    logs,
    successes: () => stats.counterValue('ratelimit.service.config_load_success'),
    errors: () => stats.counterValue('ratelimit.service.config_load_error'),
    dump: () => service.currentRuleSet()?.dump() ?? '',
    loads: async (n = 1) => {
      const target = attempts + n;
      await waitFor(() => attempts >= target, { what: `${n} reload(s)`, timeoutMs: 5000 });
    },
  };
}

/** `<base>/<name>/ratelimit/config/<file>` trees for watch-root tests. */
function version(base: string, name: string, files: Record<string, string>): string {
  const dir = join(base, name, 'ratelimit', 'config');
  mkdirSync(dir, { recursive: true });
  for (const [f, c] of Object.entries(files)) writeFileSync(join(dir, f), c);
  return join(base, name);
}

describe('RUNTIME_WATCH_ROOT=true', () => {
  test('a symlink swap (by rename, then by unlink + symlink) reloads; edits inside the tree do not', async () => {
    const t = tempDir('rls-reload-');
    dirs.push(t);
    version(t.path, 'v1', { 'a.yaml': rules('one', 1) });
    version(t.path, 'v2', { 'a.yaml': rules('two', 2) });
    version(t.path, 'v3', { 'a.yaml': rules('three', 3) });
    const current = join(t.path, 'current');
    symlinkSync('v1', current);
    const h = harness({ runtimeRoot: current });
    h.provider.load();
    h.provider.start();
    try {
      assert.match(h.dump(), /^one\.k: unit=MINUTE requests_per_unit=1/);
      // An in-place edit is not a re-point: no reload in this mode (as upstream).
      writeFileSync(join(t.path, 'v1', 'ratelimit', 'config', 'a.yaml'), rules('edited', 9));
      // The atomic swap ConfigMap-style tools do: new link under a temporary name, renamed over.
      const loaded = h.loads();
      symlinkSync('v2', join(t.path, 'current.tmp'));
      renameSync(join(t.path, 'current.tmp'), current);
      await loaded;
      assert.match(h.dump(), /^two\.k: unit=MINUTE requests_per_unit=2/);
      assert.equal(h.successes(), 2, 'initial load plus exactly one reload (the in-place edit did not reload)');

      const again = h.loads();
      unlinkSync(current);
      symlinkSync('v3', current);
      await again;
      assert.match(h.dump(), /^three\.k:/);
      assert.equal(h.successes(), 3);
    } finally {
      h.provider.stop();
    }
  });

  test('a directory renamed over RUNTIME_ROOT reloads (new inode, same path)', async () => {
    const t = tempDir('rls-reload-');
    dirs.push(t);
    const current = version(t.path, 'current', { 'a.yaml': rules('first', 1) });
    version(t.path, 'staged', { 'a.yaml': rules('second', 2) });
    const h = harness({ runtimeRoot: current });
    h.provider.load();
    h.provider.start();
    try {
      const loaded = h.loads();
      renameSync(current, join(t.path, 'old'));
      renameSync(join(t.path, 'staged'), current);
      await loaded;
      assert.match(h.dump(), /^second\.k:/);
    } finally {
      h.provider.stop();
    }
  });
});

describe('RUNTIME_WATCH_ROOT=false', () => {
  function appDir(): { root: string; dir: string } {
    const t = tempDir('rls-reload-');
    dirs.push(t);
    const dir = join(t.path, 'ratelimit', 'config');
    mkdirSync(dir, { recursive: true });
    return { root: t.path, dir };
  }

  test('write, create, chmod and remove each reload', async () => {
    const { root, dir } = appDir();
    writeFileSync(join(dir, 'a.yaml'), rules('a', 1));
    const h = harness({ runtimeRoot: root, watchRoot: false });
    h.provider.load();
    h.provider.start();
    try {
      let next = h.loads();
      writeFileSync(join(dir, 'a.yaml'), rules('a', 5));
      await next;
      assert.match(h.dump(), /^a\.k: unit=MINUTE requests_per_unit=5,/);

      next = h.loads();
      writeFileSync(join(dir, 'b.yaml'), rules('b', 7));
      await next;
      assert.match(h.dump(), /^b\.k: unit=MINUTE requests_per_unit=7,/m);

      const before = h.successes();
      next = h.loads();
      chmodSync(join(dir, 'b.yaml'), 0o600);
      await next;
      assert.equal(h.successes(), before + 1, 'chmod reloads');

      next = h.loads();
      rmSync(join(dir, 'b.yaml'));
      await next;
      assert.doesNotMatch(h.dump(), /^b\.k/m);
      assert.match(h.dump(), /^a\.k:/);
    } finally {
      h.provider.stop();
    }
  });

  test('a burst of writes gives one reload', async () => {
    const { root, dir } = appDir();
    writeFileSync(join(dir, 'a.yaml'), rules('a', 1));
    const h = harness({ runtimeRoot: root, watchRoot: false });
    h.provider.load();
    h.provider.start();
    try {
      const start = h.successes();
      const next = h.loads();
      for (let i = 2; i <= 30; i++) writeFileSync(join(dir, 'a.yaml'), rules('a', i));
      await next;
      assert.match(h.dump(), /requests_per_unit=30,/);
      // A later single write reloads once more; a second reload from the burst would have come
      // before it (one pending timer at a time), so the count proves the burst reloaded once.
      const sentinel = h.loads();
      writeFileSync(join(dir, 'a.yaml'), rules('a', 31));
      await sentinel;
      assert.equal(h.successes(), start + 2);
      assert.match(h.dump(), /requests_per_unit=31,/);
    } finally {
      h.provider.stop();
    }
  });

  test('a bad edit keeps the old rules, counts config_load_error and logs the file name', async () => {
    const { root, dir } = appDir();
    writeFileSync(join(dir, 'a.yaml'), rules('a', 3));
    writeFileSync(join(dir, 'b.yaml'), rules('b', 4));
    const h = harness({ runtimeRoot: root, watchRoot: false });
    h.provider.load();
    h.provider.start();
    try {
      const good = h.dump();
      let next = h.loads();
      writeFileSync(join(dir, 'b.yaml'), 'domain: b\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n');
      await next;
      assert.equal(h.errors(), 1);
      assert.equal(h.dump(), good, 'previous rules still serve');
      const res = await h.service.shouldRateLimit({ domain: 'b', descriptors: [{ entries: [{ key: 'k', value: 'x' }] }], hitsAddend: 1 });
      assert.equal(res.statuses[0]?.currentLimit?.requestsPerUnit, 4);
      const line = h.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.level === 'error');
      assert.ok(line !== undefined, 'an error line was logged');
      assert.equal(line.file, 'b.yaml');
      assert.match(String(line.err), /^b\.yaml: /);

      next = h.loads();
      writeFileSync(join(dir, 'b.yaml'), rules('b', 6));
      await next;
      assert.match(h.dump(), /^b\.k: unit=MINUTE requests_per_unit=6,/m);
      assert.equal(h.errors(), 1);
    } finally {
      h.provider.stop();
    }
  });

  test('Kubernetes ConfigMap layout loads once (no duplicate domain) and follows a kubelet update', async () => {
    const { root, dir } = appDir();
    // What the kubelet writes: a timestamped directory, `..data` pointing at it, and one link per key.
    mkdirSync(join(dir, '..2024_01_01_00_00_00.1'));
    writeFileSync(join(dir, '..2024_01_01_00_00_00.1', 'config.yaml'), rules('cm', 10));
    symlinkSync('..2024_01_01_00_00_00.1', join(dir, '..data'));
    symlinkSync('..data/config.yaml', join(dir, 'config.yaml'));
    const h = harness({ runtimeRoot: root, watchRoot: false, ignoreDotfiles: false });
    const first = h.provider.load();
    assert.ok(first.ok, first.ok ? '' : first.error.message);
    assert.equal(h.dump(), 'cm.k: unit=MINUTE requests_per_unit=10, shadow_mode: false, quota_mode: false\n');
    h.provider.start();
    try {
      const next = h.loads();
      mkdirSync(join(dir, '..2024_01_01_00_01_00.2'));
      writeFileSync(join(dir, '..2024_01_01_00_01_00.2', 'config.yaml'), rules('cm', 20));
      symlinkSync('..2024_01_01_00_01_00.2', join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      rmSync(join(dir, '..2024_01_01_00_00_00.1'), { recursive: true });
      await next;
      await waitFor(() => h.dump().includes('requests_per_unit=20,'), { what: 'the updated ConfigMap rules' });
      assert.equal(h.errors(), 0);
    } finally {
      h.provider.stop();
    }
  });
});

test('an in-flight request finishes on the rule set it started with', async () => {
  const t = tempDir('rls-reload-');
  dirs.push(t);
  const dir = join(t.path, 'ratelimit', 'config');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'a.yaml'), rules('d', 5));
  const inner = new MemoryStore({ clock: new FakeClock(1_700_000_000_000) });
  let release: () => void = () => undefined;
  let entered = false;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // A real store whose first round trip is held until the test lets it go.
  const gated: CounterStore = {
    kind: 'memory',
    increment: async (ops: readonly CounterOp[]) => {
      if (!entered) {
        entered = true;
        await gate;
      }
      return inner.increment(ops);
    },
    get: (keys) => inner.get(keys),
    isConnected: () => true,
    close: () => inner.close(),
  };
  const h = harness({ runtimeRoot: t.path, watchRoot: false }, gated);
  h.provider.load();
  const req = { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 1 };
  const inFlight = h.service.shouldRateLimit(req);
  await waitFor(() => entered, { what: 'the request to reach the store' });
  writeFileSync(join(dir, 'a.yaml'), rules('d', 100));
  assert.ok(h.provider.load().ok);
  release();
  const old = await inFlight;
  assert.equal(old.statuses[0]?.currentLimit?.requestsPerUnit, 5);
  assert.equal(old.statuses[0]?.limitRemaining, 4);
  const fresh = await h.service.shouldRateLimit(req);
  assert.equal(fresh.statuses[0]?.currentLimit?.requestsPerUnit, 100);
  assert.equal(fresh.statuses[0]?.limitRemaining, 98);
});
