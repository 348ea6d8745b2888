// The rate limit quick start tried as a newcomer would (issue 27, point 9), on the real process
// started the way `npm start` starts it (`node --env-file=examples/quickstart.env`), from a copy of
// the example rules so the test can edit them:
// - the log names the directory it watches, and editing the rule file (in place, or the way editors
//   save: a new file renamed over the old) reloads the running process;
// - `ratelimit-config-check` follows the same file (memory store, the example directory);
// - bare `ratelimit` (upstream's defaults, no settings) on a machine without upstream's layout
//   prints one line pointing at the quick start and exits 1, while any setting given makes it
//   start as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clearOfWindowEdge, freePort, GiveUp, spawnManaged, tempDir, waitFor } from '@rls/testkit';
import { postJson } from '../support/service-process.js';

const repo = new URL('../../../../', import.meta.url).pathname;
const mainTs = new URL('../../src/main.ts', import.meta.url).pathname;
const checkTs = new URL('../../src/cli/ratelimit-config-check.ts', import.meta.url).pathname;
const envFile = join(repo, 'examples/quickstart.env');
const runService = `import(${JSON.stringify(mainTs)}).then((m) => m.run())`;
const runCheck = `import(${JSON.stringify(checkTs)}).then((m) => { process.exitCode = m.main(process.argv.slice(1)); })`;
/** tsx by its file URL: the processes below run in directories where `--import tsx` would not resolve. */
const tsx = import.meta.resolve('tsx');

/** The environment without anything that would configure the service: PATH and HOME only. */
function bareEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME };
}

const decide = (httpUrl: string, key: string): Promise<number> =>
  postJson(httpUrl, { domain: 'quickstart', descriptors: [{ entries: [{ key: 'api_key', value: key }] }] }).then((r) => r.status);

async function statuses(httpUrl: string, key: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await decide(httpUrl, key));
  return out;
}

const reloads = (output: string): number => output.split('rate limit configuration reloaded').length - 1;

test('quick start: the log names the watched directory, and editing the rule file reloads the process', async () => {
  const t = tempDir('rls-quickstart-');
  const rulesDir = join(t.path, 'examples', 'ratelimit', 'config');
  mkdirSync(rulesDir, { recursive: true });
  const rulesFile = join(rulesDir, 'quickstart.yaml');
  copyFileSync(join(repo, 'examples/ratelimit/config/quickstart.yaml'), rulesFile);
  const [http, grpc, debug] = [await freePort(), await freePort(), await freePort()];
  // Ports from the environment win over the file's (8080/8081/6070 may be taken on a shared machine).
  const proc = spawnManaged(process.execPath, [`--env-file=${envFile}`, '--conditions=source', '--import', tsx, '-e', runService], {
    cwd: t.path,
    env: { ...bareEnv(), PORT: String(http), GRPC_PORT: String(grpc), DEBUG_PORT: String(debug) },
  });
  const httpUrl = `http://127.0.0.1:${http}`;
  try {
    await waitFor(
      () => {
        if (proc.proc.exitCode !== null) throw new GiveUp(`exited early:\n${proc.output()}`);
        return proc.output().includes('HTTP server listening');
      },
      { what: 'the quick start listening', timeoutMs: 30_000 },
    );
    const watching = proc.output().split('\n').find((l) => l.includes('watching rule files'));
    assert.ok(watching, proc.output());
    assert.ok(watching.includes(`directory=${rulesDir}`), watching);
    assert.match(watching, /mode=directory/);

    await clearOfWindowEdge(60, 5_000);
    assert.deepEqual(await statuses(httpUrl, 'bob', 4), [200, 200, 200, 429], 'the example rule: 3 a minute per key');

    // An edit in place: 3 -> 5 a minute.
    const original = readFileSync(rulesFile, 'utf8');
    assert.match(original, /requests_per_unit: 3\n/);
    writeFileSync(rulesFile, original.replace('requests_per_unit: 3\n', 'requests_per_unit: 5\n'));
    await waitFor(() => reloads(proc.output()) >= 1, { what: 'a reload after the edit', timeoutMs: 10_000 });
    await clearOfWindowEdge(60, 5_000);
    assert.deepEqual(await statuses(httpUrl, 'carol', 6), [200, 200, 200, 200, 200, 429], 'the edited limit is in force');

    // An editor's save: a new file renamed over the old one -> 7 a minute, visible on /rlconfig.
    const before = reloads(proc.output());
    writeFileSync(join(rulesDir, '.quickstart.yaml.swp'), original.replace('requests_per_unit: 3\n', 'requests_per_unit: 7\n'));
    renameSync(join(rulesDir, '.quickstart.yaml.swp'), rulesFile);
    await waitFor(
      async () => reloads(proc.output()) > before && (await (await fetch(`http://127.0.0.1:${debug}/rlconfig`)).text()).includes('requests_per_unit=7'),
      { what: '/rlconfig showing the renamed-in rule', timeoutMs: 10_000 },
    );
    assert.doesNotMatch(proc.output(), /error loading rate limit configuration/);
  } finally {
    await proc.stop();
    t.cleanup();
  }
});

test('ratelimit-config-check follows the quick start file: memory store, the example directory', () => {
  const byFlag = spawnSync(process.execPath, ['--conditions=source', '--import', tsx, '-e', runCheck, '--', '-env_file', 'examples/quickstart.env'], { cwd: repo, env: bareEnv(), encoding: 'utf8' });
  assert.equal(byFlag.status, 0, byFlag.stderr);
  assert.match(byFlag.stdout, /^backend: memory /m);
  assert.ok(byFlag.stdout.includes(`loading config directory: ${join(repo, 'examples/ratelimit/config')}\n`), byFlag.stdout);
  // The same through node's own --env-file, as `npm start` loads it: no flag needed.
  const byNode = spawnSync(process.execPath, ['--env-file=examples/quickstart.env', '--conditions=source', '--import', tsx, '-e', runCheck], { cwd: repo, env: bareEnv(), encoding: 'utf8' });
  assert.equal(byNode.status, 0, byNode.stderr);
  assert.match(byNode.stdout, /^backend: memory /m);
  // package.json's `npm run config-check` is that command.
  const scripts = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  assert.equal(scripts['config-check'], 'node services/ratelimit/bin/ratelimit-config-check.js -env_file examples/quickstart.env');
});

test("bare ratelimit on a machine without upstream's layout: one line pointing at the quick start, exit 1", () => {
  assert.ok(!existsSync('/srv/runtime_data/current/config'), "this test needs a machine without upstream's rule directory");
  const t = tempDir('rls-bare-');
  try {
    const started = Date.now();
    const r = spawnSync(process.execPath, ['--conditions=source', '--import', tsx, '-e', runService], { cwd: t.path, env: bareEnv(), encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 1, `${r.stdout}${r.stderr}`);
    const lines = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /^ratelimit: upstream's defaults do not fit this machine \(no rule directory \/srv\/runtime_data\/current\/config/);
    assert.match(lines[0]!, /run `npm start` in the repository/);
    assert.ok(Date.now() - started < 30_000);
  } finally {
    t.cleanup();
  }
});

test('one setting given (BACKEND_TYPE=memory): no pointer line, the service starts as it always did', async () => {
  const t = tempDir('rls-bare-');
  const [http, grpc, debug] = [await freePort(), await freePort(), await freePort()];
  const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', tsx, '-e', runService], {
    cwd: t.path,
    env: { ...bareEnv(), BACKEND_TYPE: 'memory', HOST: '127.0.0.1', PORT: String(http), GRPC_HOST: '127.0.0.1', GRPC_PORT: String(grpc), DEBUG_HOST: '127.0.0.1', DEBUG_PORT: String(debug), LOG_LEVEL: 'info' },
  });
  try {
    await waitFor(
      () => {
        if (proc.proc.exitCode !== null) throw new GiveUp(`exited early:\n${proc.output()}`);
        return proc.output().includes('HTTP server listening');
      },
      { what: 'the service listening', timeoutMs: 30_000 },
    );
    assert.doesNotMatch(proc.output(), /upstream's defaults do not fit/);
    // Upstream's behaviour for a missing rule directory is kept: logged, and the service runs.
    assert.match(proc.output(), /cannot read rule directory/);
  } finally {
    await proc.stop();
    t.cleanup();
  }
});
