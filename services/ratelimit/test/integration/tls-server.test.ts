// gRPC transport security through the app and its settings: TLS with GRPC_SERVER_TLS_CERT/_KEY,
// mutual TLS with GRPC_CLIENT_TLS_CACERT and GRPC_CLIENT_TLS_SAN (wrong SAN, wrong key usage,
// no certificate all refused), and certificate rotation on disk: new handshakes see the new
// certificate within a bound, an established connection keeps working, a broken pair is ignored.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { createRateLimitClient, type RateLimitClientTls } from '@rls/rls-proto';
import { makeTestPki, tempDir, waitFor, type TestPki } from '@rls/testkit';
import { buildRateLimitApp, type RateLimitApp } from '../../src/app.js';
import { silentLogger } from '../../src/logger.js';
import { loadSettings } from '../../src/settings.js';

const dir = tempDir('rls-tls-server-');
let pki: TestPki;
before(() => {
  pki = makeTestPki(dir.path);
});
after(() => dir.cleanup());

const rules = 'domain: tls\ndescriptors:\n  - key: k\n    value: v\n    rate_limit:\n      unit: minute\n      requests_per_unit: 100\n';
const req = { domain: 'tls', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 1 };

async function startApp(env: Record<string, string>): Promise<{ app: RateLimitApp; port: number }> {
  const root = join(dir.path, `rules-${Math.random().toString(36).slice(2)}`);
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(join(root, 'config', 'tls.yaml'), rules);
  const { settings } = loadSettings({
    BACKEND_TYPE: 'memory',
    USE_STATS_PUSH: 'false',
    RUNTIME_ROOT: root,
    RUNTIME_WATCH_ROOT: 'false',
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: '0',
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: '0',
    GRPC_SERVER_USE_TLS: 'true',
    ...env,
  });
  const app = buildRateLimitApp(settings, { logger: silentLogger() });
  app.loadRules();
  const { grpc } = await app.start();
  return { app, port: grpc.port };
}

async function call(port: number, t: RateLimitClientTls): Promise<number> {
  const client = createRateLimitClient({ address: `127.0.0.1:${port}`, tls: { servername: 'localhost', ...t }, timeoutMs: 3000 });
  try {
    return (await client.shouldRateLimit(req)).overallCode;
  } finally {
    client.close();
  }
}

/** SHA-256 fingerprint of the certificate a fresh handshake is served. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['h2'] }, () => {
      resolve(s.getPeerCertificate().fingerprint256);
      s.destroy();
    });
    s.on('error', reject);
  });
}

function fingerprintOf(pem: Buffer): string {
  return new X509Certificate(pem).fingerprint256;
}

describe(`gRPC server TLS from settings`, () => {
  test('TLS: a client trusting the CA succeeds; one trusting another CA fails', async () => {
    const { app, port } = await startApp({ GRPC_SERVER_TLS_CERT: pki.server.certPath, GRPC_SERVER_TLS_KEY: pki.server.keyPath });
    try {
      assert.equal(await call(port, { ca: pki.ca.cert }), 1);
      const other = makeTestPki(dir.path, 'untrusted-');
      await assert.rejects(call(port, { ca: other.ca.cert }), (e: { code?: number }) => e.code === 14);
    } finally {
      await app.stop();
    }
  });

  test('mutual TLS with a required SAN: right certificate passes; none, wrong SAN and wrong key usage are refused', async () => {
    const { app, port } = await startApp({
      
      GRPC_SERVER_TLS_CERT: pki.server.certPath,
      GRPC_SERVER_TLS_KEY: pki.server.keyPath,
      GRPC_CLIENT_TLS_CACERT: pki.ca.certPath,
      GRPC_CLIENT_TLS_SAN: 'client.test',
    });
    try {
      assert.equal(await call(port, { ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key }), 1);
      const refused = (e: { code?: number }): boolean => e.code === 14;
      await assert.rejects(call(port, { ca: pki.ca.cert }), refused);
      await assert.rejects(call(port, { ca: pki.ca.cert, cert: pki.wrongSanClient.cert, key: pki.wrongSanClient.key }), refused);
      await assert.rejects(call(port, { ca: pki.ca.cert, cert: pki.serverUsageClient.cert, key: pki.serverUsageClient.key }), refused);
      const stranger = makeTestPki(dir.path, 'stranger-');
      await assert.rejects(call(port, { ca: pki.ca.cert, cert: stranger.client.cert, key: stranger.client.key }), refused);
    } finally {
      await app.stop();
    }
  });

  test('mutual TLS without a SAN accepts any certificate from the CA', async () => {
    const { app, port } = await startApp({ GRPC_SERVER_TLS_CERT: pki.server.certPath, GRPC_SERVER_TLS_KEY: pki.server.keyPath, GRPC_CLIENT_TLS_CACERT: pki.ca.certPath });
    try {
      assert.equal(await call(port, { ca: pki.ca.cert, cert: pki.wrongSanClient.cert, key: pki.wrongSanClient.key }), 1);
      await assert.rejects(call(port, { ca: pki.ca.cert }), (e: { code?: number }) => e.code === 14);
    } finally {
      await app.stop();
    }
  });

  test('rotation on disk: new handshakes get the new certificate, an open connection keeps working, a broken pair is ignored', async () => {
    const live = join(dir.path, 'live');
    mkdirSync(live, { recursive: true });
    const certPath = join(live, 'tls.crt');
    const keyPath = join(live, 'tls.key');
    copyFileSync(pki.server.certPath, certPath);
    copyFileSync(pki.server.keyPath, keyPath);
    const { app, port } = await startApp({ GRPC_SERVER_TLS_CERT: certPath, GRPC_SERVER_TLS_KEY: keyPath });
    const old = createRateLimitClient({ address: `127.0.0.1:${port}`, tls: { ca: pki.ca.cert, servername: 'localhost' }, timeoutMs: 3000 });
    try {
      assert.equal((await old.shouldRateLimit(req)).overallCode, 1);
      assert.equal(await servedFingerprint(port), fingerprintOf(pki.server.cert));

      // Rotate to a pair from another CA: written beside, then renamed over the old files.
      const next = makeTestPki(dir.path, 'next-');
      copyFileSync(next.server.keyPath, join(live, '.tls.key.tmp'));
      copyFileSync(next.server.certPath, join(live, '.tls.crt.tmp'));
      renameSync(join(live, '.tls.key.tmp'), keyPath);
      renameSync(join(live, '.tls.crt.tmp'), certPath);
      const started = Date.now();
      await waitFor(async () => (await servedFingerprint(port)) === fingerprintOf(next.server.cert), { what: 'the new certificate to be served', timeoutMs: 2000 });
      const tookMs = Date.now() - started;
      assert.ok(tookMs < 2000, `rotation took ${tookMs} ms`);
      assert.equal(await call(port, { ca: next.ca.cert }), 1);
      await assert.rejects(call(port, { ca: pki.ca.cert }), (e: { code?: number }) => e.code === 14);
      // The connection made before the rotation (trusting only the old CA) still works.
      assert.equal((await old.shouldRateLimit(req)).overallCode, 1);
      assert.equal(app.certReloader?.reloads, 1);

      // A broken certificate keeps the current pair.
      writeFileSync(certPath, '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n');
      assert.equal(app.certReloader?.reloadNow(), false);
      assert.equal(await servedFingerprint(port), fingerprintOf(next.server.cert));
      // A key that does not match the certificate is refused too.
      copyFileSync(next.server.certPath, certPath);
      copyFileSync(pki.client.keyPath, keyPath);
      assert.equal(app.certReloader?.reloadNow(), false);
      assert.equal(await call(port, { ca: next.ca.cert }), 1);
    } finally {
      old.close();
      await app.stop();
    }
  });

  test('start-up refuses TLS without its files and mTLS settings without TLS', () => {
    assert.throws(() => loadSettings({ GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: join(dir.path, 'missing.crt') }), (err: Error) =>
      err.message.includes(`GRPC_SERVER_TLS_CERT="${join(dir.path, 'missing.crt')}": file not found`) && err.message.includes('GRPC_SERVER_TLS_KEY is required with GRPC_SERVER_USE_TLS=true'),
    );
    assert.throws(() => loadSettings({ GRPC_CLIENT_TLS_CACERT: pki.ca.certPath }), /GRPC_CLIENT_TLS_CACERT needs GRPC_SERVER_USE_TLS=true/);
    assert.throws(
      () => loadSettings({ GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: pki.server.certPath, GRPC_SERVER_TLS_KEY: pki.server.keyPath, GRPC_CLIENT_TLS_SAN: 'x' }),
      /GRPC_CLIENT_TLS_SAN needs GRPC_CLIENT_TLS_CACERT/,
    );
  });
});
