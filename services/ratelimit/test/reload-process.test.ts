// Live reload wired into the real process: the default watch-root mode follows a symlink swap of
// RUNTIME_ROOT; directory mode over a Kubernetes ConfigMap layout with RUNTIME_IGNOREDOTFILES=false
// survives a bad update (old rules keep serving, the error is counted) and picks up the fix.
// Rules and stats are read from the debug server, decisions from /json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, waitFor } from '@rls/testkit';
import { postJson, startService } from './support/service-process.js';

const rules = (limit: number): string => `domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: ${limit} }\n`;
const limitOf = async (httpUrl: string): Promise<unknown> => {
  const r = await postJson(httpUrl, { domain: 'live', descriptors: [{ entries: [{ key: 'k', value: `v${Math.random()}` }] }] });
  return (r.json.statuses as { currentLimit?: { requestsPerUnit?: number } }[])[0]?.currentLimit?.requestsPerUnit;
};
const stat = async (debugUrl: string, name: string): Promise<string | undefined> => {
  const text = await (await fetch(`${debugUrl}/stats`)).text();
  return text.split('\n').find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
};

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
  const svc = await startService({ BACKEND_TYPE: 'memory', USE_STATS_PUSH: 'false', RUNTIME_ROOT: join(t.path, 'current'), RUNTIME_SUBDIRECTORY: 'rl' });
  try {
    assert.equal(await limitOf(svc.httpUrl), 3);
    symlinkSync('v2', join(t.path, 'next'));
    renameSync(join(t.path, 'next'), join(t.path, 'current'));
    await waitFor(async () => (await limitOf(svc.httpUrl)) === 30, { what: 'the swapped rules to serve', timeoutMs: 20_000 });
    assert.equal(await (await fetch(`${svc.debugUrl}/rlconfig`)).text(), 'live.k: unit=MINUTE requests_per_unit=30, shadow_mode: false, quota_mode: false\n');
    assert.equal(await stat(svc.debugUrl, 'ratelimit.service.config_load_success'), '2');
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
    BACKEND_TYPE: 'memory',
    USE_STATS_PUSH: 'false',
    RUNTIME_ROOT: t.path,
    RUNTIME_SUBDIRECTORY: 'rl',
    RUNTIME_WATCH_ROOT: 'false',
    RUNTIME_IGNOREDOTFILES: 'false',
  });
  try {
    assert.equal(await limitOf(svc.httpUrl), 4, 'loaded once, no duplicate-domain error');
    kubeletUpdate('domain: live\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: -1 }\n');
    await waitFor(async () => (await stat(svc.debugUrl, 'ratelimit.service.config_load_error')) === '1', { what: 'the bad update to be rejected', timeoutMs: 20_000 });
    assert.equal(await limitOf(svc.httpUrl), 4, 'old rules keep serving');
    assert.match(svc.output(), /error loading rate limit configuration; previous rules kept.*file=live\.yaml/);
    kubeletUpdate(rules(40));
    await waitFor(async () => (await limitOf(svc.httpUrl)) === 40, { what: 'the fixed rules to serve', timeoutMs: 20_000 });
    assert.equal(await stat(svc.debugUrl, 'ratelimit.service.config_load_error'), '1');
  } finally {
    await svc.stop();
    t.cleanup();
  }
});
