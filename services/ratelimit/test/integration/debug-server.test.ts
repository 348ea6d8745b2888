// The debug server of a running app (docs/ratelimit.md, "Debug server"): index, /rlconfig, /stats with the real
// counters, the Node profiling endpoints (a CPU profile and a heap snapshot in the formats
// Chrome DevTools loads), HEAD without work, and who is answered (DEBUG_ACCESS, DEBUG_ALLOWED_HOSTS)
// over real sockets, from loopback and from this machine's own non-loopback address.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { networkInterfaces } from 'node:os';
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
    // The profiler is busy until the first one finishes: 503 with the reason and when to retry.
    let busy: { status: number; text: string; headers: Headers } | undefined;
    for (let i = 0; i < 50 && busy?.status !== 503; i++) busy = await get('/debug/pprof/profile?seconds=1');
    assert.equal(busy?.status, 503);
    assert.match(busy?.text ?? '', /a CPU profile is already being taken; one at a time/);
    assert.equal(busy?.headers.get('retry-after'), '10');
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

  test('HEAD answers the status and headers without doing the work', async () => {
    // A 30-second profile would take 30 s; HEAD answers at once and leaves the profiler free.
    const started = performance.now();
    const profile = await fetch(`${base}/debug/pprof/profile?seconds=30`, { method: 'HEAD' });
    assert.equal(profile.status, 200);
    assert.match(profile.headers.get('content-disposition') ?? '', /\.cpuprofile"$/);
    assert.equal((await fetch(`${base}/debug/pprof/profile?seconds=0`, { method: 'HEAD' })).status, 400);
    const heap = await fetch(`${base}/debug/pprof/heap`, { method: 'HEAD' });
    assert.equal(heap.status, 200);
    assert.match(heap.headers.get('content-disposition') ?? '', /\.heapsnapshot"$/);
    const stats = await fetch(`${base}/stats`, { method: 'HEAD' });
    assert.equal(stats.status, 200);
    assert.equal(await stats.text(), '');
    assert.ok(performance.now() - started < 5_000, `HEAD took ${Math.round(performance.now() - started)} ms`);
    const r = await get('/debug/pprof/profile?seconds=1');
    assert.equal(r.status, 200, 'the profiler was left free');
  });

  test('answers are not cacheable or sniffable', async () => {
    for (const p of ['/', '/rlconfig', '/stats', '/nope']) {
      const r = await get(p);
      assert.equal(r.headers.get('cache-control'), 'no-store', p);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', p);
    }
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

/** A non-loopback address of this machine: connecting to it makes a peer that is not on loopback. */
function outsideAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  // Every CI and developer machine has one; without it the peer rule cannot be shown over a socket.
  assert.fail('no non-loopback IPv4 interface to reach the debug server from (the peer rule needs one)');
}

function request(host: string, port: number, method: string, path: string, hostHeader: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, method, path, headers: { host: hostHeader } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('who the debug server answers (DEBUG_ACCESS, DEBUG_ALLOWED_HOSTS)', () => {
  const dir = tempDir('rls-debug-access-');
  mkdirSync(join(dir.path, 'rl', 'config'), { recursive: true });
  writeFileSync(join(dir.path, 'rl', 'config', 'a.yaml'), RULES);
  after(() => dir.cleanup());

  async function start(env: Record<string, string>): Promise<{ port: number; stop: () => Promise<void> }> {
    const { settings } = loadSettings({
      BACKEND_TYPE: 'memory',
      RUNTIME_ROOT: dir.path,
      RUNTIME_SUBDIRECTORY: 'rl',
      HOST: '127.0.0.1',
      PORT: '0',
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '0',
      // Every interface, so a peer off loopback can connect at all.
      DEBUG_HOST: '0.0.0.0',
      DEBUG_PORT: '0',
      ...env,
    });
    const app = buildRateLimitApp(settings, { logger: silentLogger() });
    app.loadRules();
    const addr = await app.start();
    return { port: addr.debug.port, stop: () => app.stop() };
  }

  test('default: a peer off loopback gets 403 naming DEBUG_ACCESS, on every path', async () => {
    const outside = outsideAddress();
    const s = await start({});
    try {
      for (const path of ['/', '/rlconfig', '/stats', '/debug/pprof/heap', '/operator/', '/nope']) {
        const r = await request(outside, s.port, 'GET', path, `${outside}:${s.port}`);
        assert.equal(r.status, 403, path);
        assert.match(r.body, /DEBUG_ACCESS=loopback/);
      }
      assert.equal((await request('127.0.0.1', s.port, 'GET', '/rlconfig', `127.0.0.1:${s.port}`)).status, 200);
    } finally {
      await s.stop();
    }
  });

  test('DEBUG_ACCESS=any: any peer naming an IP address or a listed host; other names still refused', async () => {
    const outside = outsideAddress();
    const s = await start({ DEBUG_ACCESS: 'any', DEBUG_ALLOWED_HOSTS: 'ratelimit.internal' });
    try {
      assert.equal((await request(outside, s.port, 'GET', '/stats', `${outside}:${s.port}`)).status, 200);
      assert.equal((await request(outside, s.port, 'GET', '/stats', 'ratelimit.internal:6070')).status, 200);
      const rebound = await request(outside, s.port, 'GET', '/stats', 'evil.example:6070');
      assert.equal(rebound.status, 403);
      assert.match(rebound.body, /DEBUG_ALLOWED_HOSTS/);
    } finally {
      await s.stop();
    }
  });

  test('DEBUG_ACCESS=any with DEBUG_ALLOWED_HOSTS=*: upstream\'s open debug port', async () => {
    const outside = outsideAddress();
    const s = await start({ DEBUG_ACCESS: 'any', DEBUG_ALLOWED_HOSTS: '*' });
    try {
      assert.equal((await request(outside, s.port, 'GET', '/rlconfig', 'anything.example')).status, 200);
    } finally {
      await s.stop();
    }
  });

  test('bad values are refused at start with the variable named', () => {
    assert.throws(() => loadSettings({ DEBUG_ACCESS: 'public' }), /DEBUG_ACCESS/);
    assert.throws(() => loadSettings({ DEBUG_ALLOWED_HOSTS: 'ratelimit.internal:6070' }), /DEBUG_ALLOWED_HOSTS/);
  });
});
