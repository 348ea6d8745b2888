// The bare-start check (src/upstream-defaults.ts) on a fake machine: one line naming what is
// missing when nothing was configured and upstream's rule directory is absent; nothing (the
// service starts as upstream's would) as soon as any choosing variable is set or the directory
// exists. The real process is driven in test/e2e/quickstart-process.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSettings } from '../../src/settings.js';
import { CHOOSING_VARIABLES, upstreamDefaultsMisfit, type MachineProbe } from '../../src/upstream-defaults.js';

const RULES = '/srv/runtime_data/current/config';
const SOCKET = '/var/run/nutcracker/ratelimit.sock';

function machine(has: { paths?: string[]; statsd?: boolean }): MachineProbe & { probed: string[] } {
  const probed: string[] = [];
  return {
    probed,
    exists: (p) => (has.paths ?? []).includes(p),
    listening: (host, port) => {
      probed.push(`${host}:${port}`);
      return Promise.resolve(has.statsd === true);
    },
  };
}

const misfit = (env: Record<string, string>, m: MachineProbe): Promise<string | undefined> => upstreamDefaultsMisfit(loadSettings(env).settings, env, m);

test('bare start on a laptop: one line naming the rule directory, the Redis socket and statsd, pointing at npm start', async () => {
  const line = await misfit({}, machine({}));
  assert.ok(line !== undefined);
  assert.ok(!line.includes('\n'), 'one line');
  assert.match(line, /^ratelimit: upstream's defaults do not fit this machine \(no rule directory \/srv\/runtime_data\/current\/config, no Redis socket \/var\/run\/nutcracker\/ratelimit\.sock, no statsd on localhost:8125\)/);
  assert.match(line, /run `npm start` in the repository/);
  assert.match(line, /set RUNTIME_ROOT, BACKEND_TYPE and USE_STATS_PUSH/);
});

test('only what is really missing is named', async () => {
  const line = await misfit({}, machine({ paths: [SOCKET], statsd: true }));
  assert.match(line ?? '', /\(no rule directory \/srv\/runtime_data\/current\/config\); /);
});

test('upstream layout present: the service starts with the defaults, nothing is probed', async () => {
  const m = machine({ paths: [RULES] });
  assert.equal(await misfit({}, m), undefined);
  assert.deepEqual(m.probed, []);
});

test('any choosing variable set (aliases too): the service starts as configured', async () => {
  assert.ok(CHOOSING_VARIABLES.includes('REDIS_URL') && CHOOSING_VARIABLES.includes('USE_STATSD'), 'upstream names count');
  for (const env of [{ BACKEND_TYPE: 'memory' }, { RUNTIME_ROOT: '/elsewhere' }, { REDIS_URL: 'localhost:6379', REDIS_SOCKET_TYPE: 'tcp' }, { USE_STATSD: 'false' }, { CONFIG_TYPE: 'GRPC_XDS_SOTW', CONFIG_GRPC_XDS_SERVER_URL: 'localhost:18000' }]) {
    assert.equal(await misfit(env, machine({})), undefined, JSON.stringify(env));
  }
});

test('statsd over UDP has no handshake: it is not probed', async () => {
  const m = machine({});
  const env = {};
  const settings = { ...loadSettings(env).settings, statsdProtocol: 'udp' as const };
  const line = await upstreamDefaultsMisfit(settings, env, m);
  assert.deepEqual(m.probed, []);
  assert.doesNotMatch(line ?? '', /statsd/);
});
