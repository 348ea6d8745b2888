// The service process on memcached (BACKEND_TYPE=memcache, upstream's spelling, and MEMCACHE_*
// aliases): decisions counted across two nodes, health that turns healthy (upstream's stays
// unhealthy with memcached), nodes found through SRV, and the start-up errors.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { clearOfWindowEdge, startDnsServer, startMemcached, type DnsServer, type MemcachedServer } from '@rls/testkit';
import { postJson, startService, writeRules } from '../support/service-process.js';

const RULES = `
domain: mc
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: m
    rate_limit: { unit: month, requests_per_unit: 100 }
`;
const mainTs = new URL('../../src/main.ts', import.meta.url).pathname;

describe('ratelimit process with memcached', () => {
  let a: MemcachedServer;
  let b: MemcachedServer;
  let dns: DnsServer;
  const rules = writeRules({ 'mc.yaml': RULES });
  before(async () => {
    [a, b, dns] = await Promise.all([startMemcached(), startMemcached(), startDnsServer()]);
    dns.setSrv('_memcache._tcp.svc.test', [
      { port: a.port, target: 'localhost' },
      { port: b.port, target: 'localhost' },
    ]);
  });
  after(async () => {
    await Promise.all([a.stop(), b.stop(), dns.stop()]);
    rules.cleanup();
  });

  const decide = async (url: string, key: string, value: string): Promise<string> => {
    const r = await postJson(url, { domain: 'mc', descriptors: [{ entries: [{ key, value }] }] });
    assert.equal(r.status, r.json.overallCode === 'OVER_LIMIT' ? 429 : 200);
    return String(r.json.overallCode);
  };

  for (const mode of ['host list (upstream names)', 'SRV'] as const) {
    test(`counts and limits, healthy, month counters persist: ${mode}`, async () => {
      const env: Record<string, string> =
        mode === 'SRV'
          ? { BACKEND_TYPE: 'mcstore', MCSTORE_SRV: '_memcache._tcp.svc.test', MCSTORE_SRV_DNS_SERVER: dns.address }
          : { BACKEND_TYPE: 'memcache', MEMCACHE_HOST_PORT: `${a.url},${b.url}` };
      const svc = await startService({ ...rules.env, ...env, EXPIRATION_JITTER_MAX_SECONDS: '300' });
      try {
        assert.equal((await fetch(`${svc.httpUrl}/healthcheck`)).status, 200);
        const v = `${mode.length}_${Date.now()}`;
        const codes: string[] = [];
        await clearOfWindowEdge(60, 5000); // the 5 requests count in one minute window
        for (let i = 0; i < 5; i++) codes.push(await decide(svc.httpUrl, 'k', v));
        assert.deepEqual(codes, ['OK', 'OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT']);
        await decide(svc.httpUrl, 'm', v);
        const stored = await Promise.all([a, b].map((s) => s.command('stats items\r\n', /END\r\n$/)));
        assert.ok(stored.some((t) => /items:\d+:number [1-9]/.test(t)), 'counters live in memcached');
      } finally {
        await svc.stop();
      }
      assert.equal(svc.proc.proc.exitCode, 0);
    });
  }

  test('start-up errors: both sources set, SRV that does not resolve', () => {
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], {
        env: { ...process.env, ...rules.env, WORKERS: '1', PORT: '0', GRPC_PORT: '0', DEBUG_PORT: '0', ...env },
        encoding: 'utf8',
        timeout: 20_000,
      });
    const both = run({ BACKEND_TYPE: 'mcstore', MCSTORE_HOST_PORT: a.url, MEMCACHE_SRV: '_memcache._tcp.svc.test' });
    assert.equal(both.status, 1);
    assert.match(both.stderr, /Both MCSTORE_HOST_PORT and MCSTORE_SRV are set/);
    const unresolvable = run({ BACKEND_TYPE: 'mcstore', MCSTORE_SRV: '_nothing._tcp.svc.test', MCSTORE_SRV_DNS_SERVER: dns.address });
    assert.equal(unresolvable.status, 1);
    assert.match(unresolvable.stdout + unresolvable.stderr, /Unable to fetch servers from SRV _nothing\._tcp\.svc\.test/);
  });
});
