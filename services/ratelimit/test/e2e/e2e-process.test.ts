// Process-level behaviour: the quick start's embedded store and example rules, start-up setting
// errors, and a clean exit on SIGTERM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { postJson, startService } from '../support/service-process.js';

const repo = new URL('../../../../', import.meta.url).pathname;
const mainTs = new URL('../../src/main.ts', import.meta.url).pathname;

function quickstartEnv(): Record<string, string> {
  const raw = readFileSync(`${repo}examples/quickstart.env`, 'utf8');
  const env = parseEnv(raw) as Record<string, string>;
  env.RUNTIME_ROOT = `${repo}${env.RUNTIME_ROOT}`;
  delete env.PORT;
  delete env.GRPC_PORT;
  return env;
}

test('quick start: embedded store and example rules give 200, 200, 200, 429', async () => {
  const svc = await startService(quickstartEnv());
  try {
    const body = { domain: 'quickstart', descriptors: [{ entries: [{ key: 'api_key', value: 'alice' }] }] };
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push((await postJson(svc.httpUrl, body)).status);
    assert.deepEqual(codes, [200, 200, 200, 429]);
    const internal = await postJson(svc.httpUrl, { domain: 'quickstart', descriptors: [{ entries: [{ key: 'api_key', value: 'internal' }] }] });
    assert.equal(internal.status, 200, 'whitelisted value has no limit');
    assert.equal((await fetch(`${svc.httpUrl}/healthcheck`)).status, 200);
    assert.match(svc.output(), /loaded rate limit rule/);
    assert.match(svc.output(), /HTTP server listening/);
  } finally {
    await svc.stop();
  }
});

test('invalid settings stop start-up with one message listing every bad variable', () => {
  const r = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], {
    env: { ...process.env, PORT: 'x', NEAR_LIMIT_RATIO: 'high', KVSTORE_TYPE: 'galaxy' },
    encoding: 'utf8',
  });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /invalid settings \(3\)/);
  assert.match(r.stderr, /PORT="x"/);
  assert.match(r.stderr, /NEAR_LIMIT_RATIO="high"/);
  assert.match(r.stderr, /KVSTORE_TYPE="galaxy"/);
});

test('SIGTERM: health turns unhealthy and the process exits 0', async () => {
  const svc = await startService({ ...quickstartEnv() });
  const exited = once(svc.proc.proc, 'exit');
  svc.proc.proc.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  assert.equal(code, 0);
  assert.match(svc.output(), /shutting down/);
});
