// TLS to the xDS management server: server verified against CONFIG_GRPC_XDS_SERVER_TLS_CACERT, the
// client certificate presented to a server that requires one, CONFIG_GRPC_XDS_SERVER_TLS_SAN when
// the certificate does not name the address dialled, and failures when any piece is missing.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { issueCert, makeTestPki, startXdsServer, tempDir, waitFor, type TestPki, type XdsManagementServer } from '@rls/testkit';
import { loadSettings } from '../../src/settings.js';
import { buildXdsApp, limitResource, PROTO_DIR } from '../support/xds-support.js';

describe('xDS over TLS', () => {
  const dir = tempDir('rls-xds-tls-');
  let pki: TestPki;
  let server: XdsManagementServer;
  before(async () => {
    pki = makeTestPki(dir.path);
    // Names only xds.internal: dialling 127.0.0.1 needs the SAN override.
    const serverCert = issueCert(dir.path, pki.ca, 'xds-server', { dns: ['xds.internal'], usages: ['serverAuth'] });
    server = await startXdsServer({ protoDir: PROTO_DIR, tls: { key: serverCert.key, cert: serverCert.cert, ca: pki.ca.cert, requireClientCert: true } });
    server.push('t1', [limitResource('tls-config', 'tls', 'k', 'v', 4)]);
  });
  after(async () => {
    await server.stop();
    dir.cleanup();
  });

  const tlsEnv = (nodeId: string): Record<string, string> => ({
    CONFIG_GRPC_XDS_SERVER_URL: server.address,
    CONFIG_GRPC_XDS_NODE_ID: nodeId,
    CONFIG_GRPC_XDS_SERVER_USE_TLS: 'true',
    CONFIG_GRPC_XDS_SERVER_TLS_CACERT: pki.ca.certPath,
    CONFIG_GRPC_XDS_CLIENT_TLS_CERT: pki.client.certPath,
    CONFIG_GRPC_XDS_CLIENT_TLS_KEY: pki.client.keyPath,
    CONFIG_GRPC_XDS_SERVER_TLS_SAN: 'xds.internal',
  });

  test('mutual TLS with the SAN override receives and ACKs the rules', async () => {
    const { app } = buildXdsApp(tlsEnv('tls-ok'));
    try {
      app.xds!.start();
      await server.waitForRequest((r) => r.nodeId === 'tls-ok' && r.versionInfo === 't1');
      await app.xds!.firstConfigEvent;
      assert.equal(app.service.currentRuleSet()?.dump(), 'tls.k_v: unit=MINUTE requests_per_unit=4, shadow_mode: false, quota_mode: false\n');
    } finally {
      await app.stop();
    }
  });

  for (const [what, change] of [
    ['without the SAN override the server name does not verify', { CONFIG_GRPC_XDS_SERVER_TLS_SAN: '' }],
    ['without a client certificate the server refuses the connection', { CONFIG_GRPC_XDS_CLIENT_TLS_CERT: '', CONFIG_GRPC_XDS_CLIENT_TLS_KEY: '' }],
    ['with another CA the server is not trusted', { CONFIG_GRPC_XDS_SERVER_TLS_CACERT: 'OTHER' }],
  ] as const) {
    test(what, async () => {
      const nodeId = `tls-fail-${what.length}`;
      const env: Record<string, string> = { ...tlsEnv(nodeId), ...change };
      if (env.CONFIG_GRPC_XDS_SERVER_TLS_CACERT === 'OTHER') env.CONFIG_GRPC_XDS_SERVER_TLS_CACERT = makeTestPki(dir.path, 'other-').ca.certPath;
      const { app, scheduler } = buildXdsApp(env);
      try {
        app.xds!.start();
        await waitFor(() => scheduler.waiting === 1, { what: 'the failed attempt to schedule a retry' });
        assert.equal(app.xds!.client.state, 'waiting');
        assert.ok(!server.requests.some((r) => r.nodeId === nodeId));
        assert.equal(app.service.currentRuleSet(), undefined);
      } finally {
        await app.stop();
      }
    });
  }

  test('start-up refuses missing TLS files and a certificate without its key', () => {
    assert.throws(
      () => loadSettings({ CONFIG_TYPE: 'GRPC_XDS_SOTW', CONFIG_GRPC_XDS_SERVER_USE_TLS: 'true', CONFIG_GRPC_XDS_SERVER_TLS_CACERT: '/nonexistent/ca.pem', CONFIG_GRPC_XDS_CLIENT_TLS_CERT: pki.client.certPath }),
      (err: Error) =>
        err.message.includes('CONFIG_GRPC_XDS_SERVER_TLS_CACERT="/nonexistent/ca.pem": file not found') &&
        err.message.includes('CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY must be set together'),
    );
  });
});
