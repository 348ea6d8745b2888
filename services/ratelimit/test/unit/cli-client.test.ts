// ratelimit-client's main() against a real gRPC server on loopback.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '@rls/testkit';
import { main, parseFlags } from '../../src/cli/ratelimit-client.js';
import { createGrpcServer, type GrpcServer } from '../../src/server/grpc-server.js';
import { scriptedService, TestHealth } from '../support/server-test-support.js';

function capture(): { io: { stdout: (t: string) => void; stderr: (t: string) => void }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { io: { stdout: (t) => (out += t), stderr: (t) => (err += t) }, out: () => out, err: () => err };
}

describe('ratelimit-client', () => {
  const svc = scriptedService();
  let server: GrpcServer;
  let address: string;

  before(async () => {
    server = createGrpcServer({ shouldRateLimit: svc.fn, health: new TestHealth() });
    await server.listen('127.0.0.1', 0);
    address = `127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await server.close(1000);
  });

  test('sends the descriptors (one per flag, entries in order, hits_addend 1) and prints the response', async () => {
    const c = capture();
    const code = await main(['-dial_string', address, '--domain=edge', '-descriptors', 'a=b,c=d=e', '--descriptors', 'x=', '-descriptors=k=v'], { io: c.io });
    assert.equal(code, 0);
    assert.deepEqual(svc.seen.at(-1), {
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'a', value: 'b' }, { key: 'c', value: 'd=e' }], limit: undefined, hitsAddend: undefined },
        { entries: [{ key: 'x', value: '' }], limit: undefined, hitsAddend: undefined },
        { entries: [{ key: 'k', value: 'v' }], limit: undefined, hitsAddend: undefined },
      ],
      hitsAddend: 1,
    });
    assert.ok(c.out().startsWith('response: {'), c.out());
    const json = JSON.parse(c.out().slice('response: '.length)) as { overallCode: string; statuses: Array<{ currentLimit: { unit: string } }> };
    assert.equal(json.overallCode, 'OK');
    assert.equal(json.statuses.length, 3);
    assert.equal(json.statuses[1]!.currentLimit.unit, 'WEEK');
  });

  test('a pair without "=" ⇒ invalid descriptor list, exit 2', async () => {
    const c = capture();
    assert.equal(await main(['-dial_string', address, '-domain', 'd', '-descriptors', 'a=b,oops'], { io: c.io }), 2);
    assert.match(c.err(), /invalid descriptor list/);
    assert.equal(c.out(), '');
  });

  test('unknown flags and missing values are usage errors', async () => {
    for (const argv of [['-nope', 'x'], ['-domain']]) {
      const c = capture();
      assert.equal(await main(argv, { io: c.io }), 2);
      assert.match(c.err(), /Usage of ratelimit-client/);
    }
  });

  test('a service error ⇒ "request error: ..." exit 1', async () => {
    const c = capture();
    assert.equal(await main(['-dial_string', address, '-domain', 'noconfig', '-descriptors', 'a=b'], { io: c.io }), 1);
    assert.equal(c.out(), 'request error: 14 UNAVAILABLE: no rate limit configuration loaded\n');
  });

  test('nothing listening ⇒ "request error" exit 1 (connection is lazy, as upstream)', async () => {
    const port = await freePort();
    const c = capture();
    assert.equal(await main(['-dial_string', `127.0.0.1:${port}`, '-domain', 'd', '-descriptors', 'a=b'], { io: c.io, timeoutMs: 2000 }), 1);
    assert.match(c.out(), /^request error: 14 UNAVAILABLE/);
  });

  test('an unparsable address ⇒ "error connecting: ..." exit 1', async () => {
    const c = capture();
    assert.equal(await main(['-dial_string', '', '-domain', 'd', '-descriptors', 'a=b'], { io: c.io }), 1);
    assert.match(c.out(), /^error connecting: /);
  });

  test('defaults: dial_string localhost:8081, empty domain, no descriptors', () => {
    assert.deepEqual(parseFlags([]), { dialString: 'localhost:8081', domain: '', descriptors: [], useTls: false, serverCaFile: '', certFile: '', keyFile: '', serverName: '' });
  });
});
