// Test certificates made with the `openssl` command: a CA, and leaf certificates it signs with the
// DNS/IP subject alternative names and extended key usages a test needs. EC P-256 keys keep it fast.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertFiles {
  readonly certPath: string;
  readonly keyPath: string;
  readonly cert: Buffer;
  readonly key: Buffer;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A self-signed CA certificate and its key, as `<dir>/<name>.crt` and `<dir>/<name>.key`. */
export function makeCa(dir: string, name = 'test-ca'): CertFiles {
  const keyPath = join(dir, `${name}.key`);
  const certPath = join(dir, `${name}.crt`);
  openssl([
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyPath, '-out', certPath, '-days', '3', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { certPath, keyPath, cert: readFileSync(certPath), key: readFileSync(keyPath) };
}

export interface LeafOptions {
  /** DNS subject alternative names. */
  dns?: readonly string[];
  /** IP subject alternative names. */
  ips?: readonly string[];
  /** Extended key usages (default: serverAuth and clientAuth). */
  usages?: readonly ('serverAuth' | 'clientAuth')[];
  /** Common name (default: the file name). */
  commonName?: string;
}

/** A leaf certificate signed by `ca`, as `<dir>/<name>.crt` and `<dir>/<name>.key`. */
export function issueCert(dir: string, ca: CertFiles, name: string, opts: LeafOptions = {}): CertFiles {
  const keyPath = join(dir, `${name}.key`);
  const certPath = join(dir, `${name}.crt`);
  const csrPath = join(dir, `${name}.csr`);
  const extPath = join(dir, `${name}.ext`);
  const sans = [...(opts.dns ?? []).map((d) => `DNS:${d}`), ...(opts.ips ?? []).map((i) => `IP:${i}`)];
  const ext = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', `extendedKeyUsage=${(opts.usages ?? ['serverAuth', 'clientAuth']).join(',')}`];
  if (sans.length > 0) ext.push(`subjectAltName=${sans.join(',')}`);
  writeFileSync(extPath, ext.join('\n') + '\n');
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyPath, '-out', csrPath, '-subj', `/CN=${opts.commonName ?? name}`]);
  openssl([
    'x509', '-req', '-in', csrPath, '-CA', ca.certPath, '-CAkey', ca.keyPath, '-set_serial', `0x${randomBytes(8).toString('hex')}`,
    '-days', '2', '-out', certPath, '-extfile', extPath,
  ]);
  return { certPath, keyPath, cert: readFileSync(certPath), key: readFileSync(keyPath) };
}

export interface TestPki {
  readonly ca: CertFiles;
  /** `localhost` / 127.0.0.1 server certificate (serverAuth). */
  readonly server: CertFiles;
  /** Client certificate with DNS SAN `client.test` (clientAuth). */
  readonly client: CertFiles;
  /** Client certificate with DNS SAN `intruder.test` (clientAuth). */
  readonly wrongSanClient: CertFiles;
  /** Certificate with DNS SAN `client.test` but only the serverAuth usage. */
  readonly serverUsageClient: CertFiles;
}

/** The usual set for TLS and mutual TLS tests, written into `dir`. */
export function makeTestPki(dir: string, prefix = ''): TestPki {
  const ca = makeCa(dir, `${prefix}ca`);
  return {
    ca,
    server: issueCert(dir, ca, `${prefix}server`, { dns: ['localhost'], ips: ['127.0.0.1'], usages: ['serverAuth'] }),
    client: issueCert(dir, ca, `${prefix}client`, { dns: ['client.test'], usages: ['clientAuth'] }),
    wrongSanClient: issueCert(dir, ca, `${prefix}wrong-san-client`, { dns: ['intruder.test'], usages: ['clientAuth'] }),
    serverUsageClient: issueCert(dir, ca, `${prefix}server-usage-client`, { dns: ['client.test'], usages: ['serverAuth'] }),
  };
}
