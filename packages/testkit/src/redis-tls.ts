// TLS material and TLS-enabled redis-server for tests: a throw-away CA, a server certificate (SANs
// chosen by the test, so hostname verification can be made to fail on purpose) and a client
// certificate, all made with the openssl command line. The server keeps its plain port for the
// test's own admin commands and adds a TLS port for the code under test.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { tempDir } from './process.js';
import { startRedis, type RedisServer } from './redis.js';
import { assertMayStartServers } from './tier-guard.js';

export interface TlsFiles {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function keyAndCsr(dir: string, name: string, cn: string): void {
  openssl(dir, ['req', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
}

/**
 * Makes a CA, a server certificate for `serverNames` (DNS names or IPs; default localhost and
 * 127.0.0.1) and a client certificate, valid for a day.
 */
export function makeTlsFiles(serverNames: readonly string[] = ['localhost', '127.0.0.1']): TlsFiles {
  const dir = tempDir('rls-tls-').path;
  openssl(dir, ['req', '-x509', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=rls-test-ca']);
  const san = serverNames.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  writeFileSync(join(dir, 'server.ext'), `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`);
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  keyAndCsr(dir, 'server', serverNames[0] ?? 'localhost');
  openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'server.ext']);
  keyAndCsr(dir, 'client', 'rls-test-client');
  openssl(dir, ['x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '1', '-extfile', 'client.ext']);
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.crt'),
    clientKey: join(dir, 'client.key'),
  };
}

export interface TlsRedisServer extends RedisServer {
  tlsPort: number;
  /** `127.0.0.1:<tlsPort>`. */
  tlsUrl: string;
  tls: TlsFiles;
}

export interface TlsRedisOptions {
  /** `yes` requires a client certificate signed by the CA; default `no`. */
  authClients?: 'yes' | 'no' | 'optional';
  requirepass?: string;
  /** SANs of the server certificate. */
  serverNames?: readonly string[];
  args?: string[];
}

/** A redis-server with a TLS port (and its plain port for admin commands). */
export async function startRedisTls(opts: TlsRedisOptions = {}): Promise<TlsRedisServer> {
  assertMayStartServers('startRedisTls');
  const tls = makeTlsFiles(opts.serverNames);
  const tlsPort = await freePort();
  const server = await startRedis({
    ...(opts.requirepass !== undefined ? { requirepass: opts.requirepass } : {}),
    args: [
      '--tls-port', String(tlsPort),
      '--tls-cert-file', tls.serverCert,
      '--tls-key-file', tls.serverKey,
      '--tls-ca-cert-file', tls.caCert,
      '--tls-auth-clients', opts.authClients ?? 'no',
      ...(opts.args ?? []),
    ],
  });
  return Object.assign(server, { tlsPort, tlsUrl: `127.0.0.1:${tlsPort}`, tls });
}
