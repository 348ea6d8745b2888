// Live reload wired into the real process: the default watch-root mode follows a symlink swap of
// RUNTIME_ROOT; directory mode over a Kubernetes ConfigMap layout with RUNTIME_IGNOREDOTFILES=false
// survives a bad update (old rules keep serving, the error is counted and logged once) and picks
// up the fix. Rules and stats are read from the debug server, decisions from /json — every read on
// a new connection, so in worker mode (WORKERS=2, where the primary owns the watcher) every
// worker is asked and must answer the same.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, tempDir, waitFor, type RedisServer } from '@rls/testkit';
import { limitFresh, requestFresh, statFresh } from '../support/fresh-connection.js';
import { startService } from '../support/service-process.js';

const rules = (limit: number): string => `domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: ${limit} }\n`;
/** Requests on this many connections: both workers answer (round robin), twice each. */
const READS = 4;
const limitsOf = async (httpUrl: string): Promise<(number | undefined)[]> => {
  const out: (number | undefined)[] = [];
  for (let i = 0; i < READS; i++) out.push(await limitFresh(httpUrl, { domain: 'live', descriptors: [{ entries: [{ key: 'k', value: `v${Math.random()}` }] }] }));
  return out;
};
const all = (n: number): number[] => Array.from({ length: READS }, () => n);
const statsOf = async (debugUrl: string, name: string): Promise<(string | undefined)[]> => {
  const out: (string | undefined)[] = [];
  for (let i = 0; i < READS; i++) out.push(await statFresh(debugUrl, name));
  return out;
};
const allStat = (v: string): string[] => Array.from({ length: READS }, () => v);

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const MODES: { name: string; env: () => Record<string, string> }[] = [
  { name: 'single process', env: () => ({ BACKEND_TYPE: 'memory' }) },
  // The memory store always runs one process: worker mode needs a shared store.
  { name: 'WORKERS=2', env: () => ({ WORKERS: '2', BACKEND_TYPE: 'redis', KVSTORE_SOCKET_TYPE: 'tcp', KVSTORE_URL: redis.url }) },
];

for (const mode of MODES) {
  describe(`live reload (${mode.name})`, () => {
    test('RUNTIME_WATCH_ROOT default: re-pointing the RUNTIME_ROOT symlink reloads the process', async () => {
      const t = tempDir('rls-live-');
      for (const [v, limit] of [
        ['v1', 3],
        ['v2', 30],
      ] as const) {
        mkdirSync(join(t.path, v, 'rl', 'config'), { recursive: true });
        writeFileSync(join(t.path, v, 'rl', 'config', 'live.yaml'), rules(limit));
      }
      symlinkSync('v1', join(t.path, 'current'));
      const svc = await startService({ ...mode.env(), USE_STATS_PUSH: 'false', RUNTIME_ROOT: join(t.path, 'current'), RUNTIME_SUBDIRECTORY: 'rl' });
      try {
        await waitFor(() => mode.name === 'single process' || svc.output().includes('all workers listening'), { what: 'every worker listening', timeoutMs: 30_000 });
        assert.deepEqual(await limitsOf(svc.httpUrl), all(3));
        symlinkSync('v2', join(t.path, 'next'));
        renameSync(join(t.path, 'next'), join(t.path, 'current'));
        await waitFor(async () => (await limitFresh(svc.httpUrl, { domain: 'live', descriptors: [{ entries: [{ key: 'k', value: 'x' }] }] })) === 30, { what: 'the swapped rules to serve', timeoutMs: 20_000 });
        assert.deepEqual(await limitsOf(svc.httpUrl), all(30), 'every worker serves the new rules');
        for (let i = 0; i < READS; i++) {
          assert.equal((await requestFresh(`${svc.debugUrl}/rlconfig`)).body, 'live.k: unit=MINUTE requests_per_unit=30, shadow_mode: false, quota_mode: false\n');
        }
        // Two loads (start, swap), counted once each whichever worker answers /stats.
        assert.deepEqual(await statsOf(svc.debugUrl, 'ratelimit.service.config_load_success'), allStat('2'));
      } finally {
        await svc.stop();
        t.cleanup();
      }
    });

    test('RUNTIME_WATCH_ROOT=false on a ConfigMap volume: a bad update keeps the old rules, the fix is picked up', async () => {
      const t = tempDir('rls-live-');
      const dir = join(t.path, 'rl', 'config');
      mkdirSync(join(dir, '..2024_01_01_00_00_00.1'), { recursive: true });
      writeFileSync(join(dir, '..2024_01_01_00_00_00.1', 'live.yaml'), rules(4));
      symlinkSync('..2024_01_01_00_00_00.1', join(dir, '..data'));
      symlinkSync('..data/live.yaml', join(dir, 'live.yaml'));
      let n = 1;
      const kubeletUpdate = (content: string): void => {
        n += 1;
        const ts = `..2024_01_01_00_00_0${n}.${n}`;
        mkdirSync(join(dir, ts));
        writeFileSync(join(dir, ts, 'live.yaml'), content);
        symlinkSync(ts, join(dir, '..data_tmp'));
        renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      };
      const svc = await startService({
        ...mode.env(),
        USE_STATS_PUSH: 'false',
        RUNTIME_ROOT: t.path,
        RUNTIME_SUBDIRECTORY: 'rl',
        RUNTIME_WATCH_ROOT: 'false',
        RUNTIME_IGNOREDOTFILES: 'false',
      });
      try {
        await waitFor(() => mode.name === 'single process' || svc.output().includes('all workers listening'), { what: 'every worker listening', timeoutMs: 30_000 });
        assert.deepEqual(await limitsOf(svc.httpUrl), all(4), 'loaded once, no duplicate-domain error');
        kubeletUpdate('domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: -1 }\n');
        await waitFor(async () => (await statFresh(svc.debugUrl, 'ratelimit.service.config_load_error')) === '1', { what: 'the bad update to be rejected', timeoutMs: 20_000 });
        assert.deepEqual(await limitsOf(svc.httpUrl), all(4), 'old rules keep serving');
        assert.match(svc.output(), /error loading rate limit configuration; previous rules kept.*file=live\.yaml/);
        assert.equal(svc.output().split('error loading rate limit configuration').length - 1, 1, 'the error is reported once');
        kubeletUpdate(rules(40));
        await waitFor(async () => (await limitFresh(svc.httpUrl, { domain: 'live', descriptors: [{ entries: [{ key: 'k', value: 'x' }] }] })) === 40, { what: 'the fixed rules to serve', timeoutMs: 20_000 });
        assert.deepEqual(await limitsOf(svc.httpUrl), all(40), 'every worker serves the fix');
        assert.deepEqual(await statsOf(svc.debugUrl, 'ratelimit.service.config_load_error'), allStat('1'));
        assert.deepEqual(await statsOf(svc.debugUrl, 'ratelimit.service.config_load_success'), allStat('2'));
      } finally {
        await svc.stop();
        t.cleanup();
      }
    });
  });
}
