import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort, spawnManaged, tempDir, waitFor } from '@rls/testkit';

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function quotes(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('quotes CLI', () => {
  const dir = tempDir('quotes-cli-');
  const env = { QUOTES_DATA_DIR: dir.path, QUOTES_LOG_LEVEL: 'warn', MARKET_SOURCE: 'simulated' };
  after(() => dir.cleanup());
  let token = '';
  let id = '';

  before(async () => {
    const m = await quotes(['migrate'], env);
    assert.equal(m.code, 0, m.stderr);
    assert.match(m.stdout, /sqlite: applied 001_initial/);
  });

  test('migrate is idempotent', async () => {
    const m = await quotes(['migrate'], env);
    assert.equal(m.code, 0);
    assert.match(m.stdout, /already up to date/);
  });

  test('token create prints the token once; list shows only a prefix', async () => {
    const c = await quotes(['token', 'create', '--plan', 'startup', '--name', 'alice'], env);
    assert.equal(c.code, 0, c.stderr);
    token = /token: (qt_\S+)/.exec(c.stdout)?.[1] ?? '';
    id = /id: +(tok_\S+)/.exec(c.stdout)?.[1] ?? '';
    assert.ok(token.length > 40 && id !== '');
    const l = await quotes(['token', 'list'], env);
    assert.equal(l.code, 0);
    assert.match(l.stdout, new RegExp(`${id}\\s+alice\\s+startup\\s+${token.slice(0, 9)}\\.\\.\\.`));
    assert.ok(!l.stdout.includes(token), 'the full token is never listed');
    const bad = await quotes(['token', 'create', '--plan', 'platinum', '--name', 'x'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /unknown plan "platinum"/);
  });

  test('serve: warns about simulated data, serves the token, counts usage, stops on SIGTERM', async () => {
    const port = await freePort();
    const server = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', CLI, 'serve'], {
      cwd: ROOT,
      env: { ...process.env, ...env, QUOTES_PORT: String(port), QUOTES_HOST: '127.0.0.1', QUOTES_METRICS_PORT: '0' },
    });
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).ok, { what: 'quotes serve', timeoutMs: 30_000 });
      assert.match(server.output(), /MARKET_SOURCE=simulated/);
      const res = await fetch(`http://127.0.0.1:${port}/api/v2/crypto?coin=BTC`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-data-source'), 'simulated');
    } finally {
      await server.stop();
    }
    assert.equal(server.proc.exitCode, 0, server.output());
    const u = await quotes(['usage'], env);
    assert.equal(u.code, 0);
    assert.match(u.stdout, new RegExp(`${id}\\s+alice\\s+startup\\s+\\d{4}-\\d{2}\\s+1\\s+150000\\s+active`));
  });

  test('token revoke; revoking twice fails', async () => {
    const r = await quotes(['token', 'revoke', id], env);
    assert.equal(r.code, 0, r.stderr);
    const again = await quotes(['token', 'revoke', id], env);
    assert.equal(again.code, 1);
    const l = await quotes(['token', 'list'], env);
    assert.match(l.stdout, new RegExp(`${id}.*\\d{4}-\\d{2}-\\d{2}T[^ ]+Z\\s*$`, 'm'));
  });

  test('bad settings are all listed in one error', async () => {
    const r = await quotes(['token', 'list'], { ...env, QUOTES_PORT: 'abc', QUOTES_REFRESH_SECONDS: '0', MARKET_SOURCE: 'binance', DATABASE_URL: 'mysql://u:secret@h/db' });
    assert.equal(r.code, 2);
    for (const name of ['QUOTES_PORT', 'QUOTES_REFRESH_SECONDS', 'MARKET_SOURCE', 'DATABASE_URL']) assert.match(r.stderr, new RegExp(name));
    assert.ok(!r.stderr.includes('secret'), 'passwords in URLs are not echoed');
  });
});
