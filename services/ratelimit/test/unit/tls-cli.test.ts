// ratelimit-client's TLS flags against a mutual-TLS gRPC server: CA, client certificate and key,
// the server-name override; missing pieces fail as request or connect errors.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeTestPki, tempDir, type TestPki } from '@rls/testkit';
import { main, parseFlags } from '../../src/cli/ratelimit-client.js';
import { createGrpcServer, type GrpcServer } from '../../src/server/grpc-server.js';
import { clientCertificateProblem } from '../../src/server/tls-client-verify.js';
import { scriptedService, TestHealth } from '../support/server-test-support.js';

function capture(): { io: { stdout: (t: string) => void; stderr: (t: string) => void }; out: () => string } {
  let out = '';
  return { io: { stdout: (t) => (out += t), stderr: (t) => (out += t) }, out: () => out };
}

describe('ratelimit-client over TLS', () => {
  const dir = tempDir('rls-tls-cli-');
  let pki: TestPki;
  let server: GrpcServer;
  let address: string;
  before(async () => {
    pki = makeTestPki(dir.path);
    server = createGrpcServer({
      shouldRateLimit: scriptedService().fn,
      health: new TestHealth(),
      tls: { key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requestClientCert: true, verifyClient: (c) => clientCertificateProblem(c, 'client.test') },
    });
    await server.listen('127.0.0.1', 0);
    address = `127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await server.close(100);
    dir.cleanup();
  });

  test('flags parse in Go style; -grpc-use-tls takes no value', () => {
    const f = parseFlags(['-grpc-use-tls', '-grpc-server-ca-file', 'ca.pem', '--grpc-cert-file=c.pem', '-grpc-key-file', 'k.pem', '-grpc-server-name', 'svc.local', '-domain', 'd']);
    assert.deepEqual(f, { dialString: 'localhost:8081', domain: 'd', descriptors: [], useTls: true, serverCaFile: 'ca.pem', certFile: 'c.pem', keyFile: 'k.pem', serverName: 'svc.local' });
    assert.equal((parseFlags(['-grpc-use-tls=false']) as { useTls: boolean }).useTls, false);
    assert.throws(() => parseFlags(['-grpc-use-tls=maybe']), /parse error on -grpc-use-tls/);
  });

  test('mutual TLS with CA, certificate and key succeeds', async () => {
    const c = capture();
    const code = await main(
      ['-dial_string', address, '-domain', 'ok', '-descriptors', 'a=b', '-grpc-use-tls', '-grpc-server-ca-file', pki.ca.certPath, '-grpc-cert-file', pki.client.certPath, '-grpc-key-file', pki.client.keyPath, '-grpc-server-name', 'localhost'],
      { io: c.io },
    );
    assert.equal(code, 0, c.out());
    assert.match(c.out(), /^response: /);
    assert.match(c.out(), /"overallCode": "OK"/);
  });

  test('without the client certificate the call fails; without TLS too; a missing file is a connect error', async () => {
    const noCert = capture();
    assert.equal(await main(['-dial_string', address, '-domain', 'ok', '-descriptors', 'a=b', '-grpc-use-tls', '-grpc-server-ca-file', pki.ca.certPath], { io: noCert.io, timeoutMs: 3000 }), 1);
    assert.match(noCert.out(), /^request error: /);
    const plain = capture();
    assert.equal(await main(['-dial_string', address, '-domain', 'ok', '-descriptors', 'a=b'], { io: plain.io, timeoutMs: 3000 }), 1);
    assert.match(plain.out(), /^request error: /);
    const missing = capture();
    assert.equal(await main(['-dial_string', address, '-grpc-use-tls', '-grpc-server-ca-file', '/nonexistent/ca.pem'], { io: missing.io }), 1);
    assert.match(missing.out(), /^error connecting: .*ENOENT/);
  });
});
