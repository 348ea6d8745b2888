// The debug server of a running app (docs/ratelimit.md, "Debug server"): index, /rlconfig, /stats with the real
// counters, and the Node profiling endpoints (a CPU profile and a heap snapshot in the formats
// Chrome DevTools loads).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clearOfWindowEdge, tempDir } from '@rls/testkit';
import { buildRateLimitApp, type RateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';
import { grpcJsStubs, unaryCall } from '../support/server-test-support.js';

const RULES = `domain: dbg
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: s
    value: v
    shadow_mode: true
    rate_limit: { unit: hour, requests_per_unit: 10 }
`;

describe('debug server', () => {
  let app: RateLimitApp;
  let base: string;
  let grpcAddress: string;
  const dir = tempDir('rls-debug-');

  before(async () => {
    mkdirSync(join(dir.path, 'rl', 'config'), { recursive: true });
    writeFileSync(join(dir.path, 'rl', 'config', 'a.yaml'), RULES);
    const { settings } = loadSettings({
      BACKEND_TYPE: 'memory',
      RUNTIME_ROOT: dir.path,
      RUNTIME_SUBDIRECTORY: 'rl',
      HOST: '127.0.0.1',
      PORT: '0',
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '0',
      DEBUG_HOST: '127.0.0.1',
      DEBUG_PORT: '0',
    });
    app = buildRateLimitApp(settings, { logger: silentLogger() });
    app.loadRules();
    const addr = await app.start();
    base = `http://127.0.0.1:${addr.debug.port}`;
    grpcAddress = `127.0.0.1:${addr.grpc.port}`;
  });

  after(async () => {
    await app.stop();
    dir.cleanup();
  });

  const get = async (path: string): Promise<{ status: number; text: string; headers: Headers }> => {
    const r = await fetch(base + path);
    return { status: r.status, text: await r.text(), headers: r.headers };
  };

  test('/ lists every endpoint with its help, sorted; unknown paths get the index with 404', async () => {
    const index = await get('/');
    assert.equal(index.status, 200);
    const paths = index.text.trimEnd().split('\n').map((l) => l.slice(0, l.indexOf(': ')));
    // /operator/ and /counters are listed while OPERATOR_PAGE is not off (operator-api.test.ts, counters-api.test.ts cover them).
    assert.deepEqual(paths, ['/counters', '/debug/pprof/', '/debug/pprof/heap', '/debug/pprof/profile', '/operator/', '/rlconfig', '/stats']);
    assert.match(index.text, /^\/rlconfig: print out the currently loaded configuration for debugging$/m);
    const unknown = await get('/nope');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.text, index.text);
    const pprof = await get('/debug/pprof/');
    assert.deepEqual(pprof.text.trimEnd().split('\n').map((l) => l.slice(0, l.indexOf(': '))), ['/debug/pprof/heap', '/debug/pprof/profile']);
  });

  test('/rlconfig prints the loaded rules in the upstream format', async () => {
    const r = await get('/rlconfig');
    assert.equal(
      r.text,
      'dbg.k: unit=MINUTE requests_per_unit=2, shadow_mode: false, quota_mode: false\n' + 'dbg.s_v: unit=HOUR requests_per_unit=10, shadow_mode: true, quota_mode: false\n',
    );
  });

  test('/stats shows the current value of every statistic, sorted', async () => {
    const stubs = grpcJsStubs(grpcAddress);
    try {
      await clearOfWindowEdge(60, 5000); // the 3 calls count in one minute window
      for (let i = 0; i < 3; i++) await unaryCall(stubs.rls, 'ShouldRateLimit', { domain: 'dbg', descriptors: [{ entries: [{ key: 'k', value: 'x' }] }] });
      await unaryCall(stubs.rls, 'ShouldRateLimit', { domain: 'other', descriptors: [{ entries: [{ key: 'k', value: 'x' }] }] });
    } finally {
      stubs.close();
    }
    const r = await get('/stats');
    const lines = r.text.trimEnd().split('\n');
    assert.deepEqual(lines, [...lines].sort());
    const values = new Map(lines.map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]));
    assert.equal(values.get('ratelimit.service.rate_limit.dbg.k.total_hits'), '3');
    assert.equal(values.get('ratelimit.service.rate_limit.dbg.k.within_limit'), '2');
    assert.equal(values.get('ratelimit.service.rate_limit.dbg.k.over_limit'), '1');
    assert.equal(values.get('ratelimit.service.rate_limit.dbg.k.near_limit'), '1');
    assert.equal(values.get('ratelimit.service.rate_limit.other.domain_not_found'), '1');
    assert.equal(values.get('ratelimit.service.config_load_success'), '1');
    assert.equal(values.get('ratelimit_server.ShouldRateLimit.total_requests'), '4');
    assert.match(values.get('ratelimit_server.ShouldRateLimit.response_time') ?? '', /^count=4 sum_ms=\d+$/);
    assert.equal(values.get('runtime.num_values'), '1');
  });

  test('/debug/pprof/profile?seconds=1 returns a .cpuprofile; one at a time; seconds bounded', async () => {
    const pending = fetch(`${base}/debug/pprof/profile?seconds=1`);
    // The profiler is busy until the first one finishes.
    let busy: number | undefined;
    for (let i = 0; i < 50 && busy !== 409; i++) busy = (await get('/debug/pprof/profile?seconds=1')).status;
    assert.equal(busy, 409);
    const r = await pending;
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-disposition') ?? '', /^attachment; filename="ratelimit-.*\.cpuprofile"$/);
    const profile = (await r.json()) as { nodes: { callFrame: { functionName: string } }[]; startTime: number; endTime: number; samples: number[] };
    assert.ok(profile.nodes.length > 0);
    assert.ok(profile.nodes.some((n) => n.callFrame.functionName === '(root)'));
    assert.ok(profile.endTime - profile.startTime >= 900_000, 'about one second, in microseconds');
    assert.ok(Array.isArray(profile.samples));
    assert.equal((await get('/debug/pprof/profile?seconds=0')).status, 400);
    assert.equal((await get('/debug/pprof/profile?seconds=121')).status, 400);
    assert.equal((await get('/debug/pprof/profile?seconds=abc')).status, 400);
  });

  test('/debug/pprof/heap returns a .heapsnapshot', async () => {
    const r = await fetch(`${base}/debug/pprof/heap`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-disposition') ?? '', /^attachment; filename="ratelimit-.*\.heapsnapshot"$/);
    const snap = (await r.json()) as { snapshot: { meta: { node_fields: string[] }; node_count: number }; strings: string[] };
    assert.ok(snap.snapshot.meta.node_fields.includes('name'));
    assert.ok(snap.snapshot.node_count > 0);
    assert.ok(snap.strings.length > 0);
  });
});
