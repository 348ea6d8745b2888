// TLS options for Redis connections from the KVSTORE_TLS_* files. The CA is trusted in addition
// to the system roots (as upstream appends it); skipping hostname verification still verifies the
// chain, for managed Redis that presents a certificate for another name. Files are read as Buffers:
// the client key must not become a string (a heap snapshot shows strings, not Buffer contents).
import { readFileSync } from 'node:fs';
import { rootCertificates, type ConnectionOptions } from 'node:tls';

export interface RedisTlsFiles {
  clientCert?: string | undefined;
  clientKey?: string | undefined;
  caCert?: string | undefined;
  skipHostnameVerification?: boolean | undefined;
}

export function redisTlsOptions(files: RedisTlsFiles, read: (path: string) => Buffer = (p) => readFileSync(p)): ConnectionOptions {
  const o: ConnectionOptions = {};
  if (files.caCert !== undefined && files.caCert !== '') o.ca = [...rootCertificates, read(files.caCert)];
  if (files.clientCert !== undefined && files.clientCert !== '') o.cert = read(files.clientCert);
  if (files.clientKey !== undefined && files.clientKey !== '') o.key = read(files.clientKey);
  if (files.skipHostnameVerification === true) o.checkServerIdentity = () => undefined;
  return o;
}
