// Settings of the gRPC listener's transport security (GRPC_SERVER_USE_TLS, mutual TLS), in the
// settings schema's form so settings.ts spreads them into SETTING_DEFS, and their start-up checks.
import { fileProblem } from '../provider/xds-settings.js';
import { def, parseBool } from '@rls/settings';

const str = (raw: string): string => raw;
const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));

export const GRPC_TLS_SETTING_DEFS = {
  grpcServerUseTls: def({ name: 'GRPC_SERVER_USE_TLS', default: 'false', meaning: 'Serve gRPC over TLS with GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY.', parse: bool }),
  grpcServerTlsCert: def({
    name: 'GRPC_SERVER_TLS_CERT',
    default: '',
    meaning: 'Server certificate chain file (PEM). Certificate and key files are watched and reloaded on change; a pair that fails to load keeps the previous one.',
    parse: str,
  }),
  grpcServerTlsKey: def({ name: 'GRPC_SERVER_TLS_KEY', default: '', meaning: 'Server private key file (PEM); may live in another directory than the certificate.', parse: str }),
  grpcClientTlsCacert: def({
    name: 'GRPC_CLIENT_TLS_CACERT',
    default: '',
    meaning: 'CA file (PEM): when set, gRPC clients must present a certificate that chains to it (mutual TLS; the system roots are not trusted for clients). Needs GRPC_SERVER_USE_TLS.',
    parse: str,
  }),
  grpcClientTlsSan: def({
    name: 'GRPC_CLIENT_TLS_SAN',
    default: '',
    meaning: 'DNS name the client certificate must carry as a subject alternative name (and the certificate must allow client authentication). Needs GRPC_CLIENT_TLS_CACERT.',
    parse: str,
  }),
} as const;

export interface GrpcTlsSettingsView {
  readonly grpcServerUseTls: boolean;
  readonly grpcServerTlsCert: string;
  readonly grpcServerTlsKey: string;
  readonly grpcClientTlsCacert: string;
  readonly grpcClientTlsSan: string;
}

/** Start-up checks: required files present and readable, mTLS settings only with TLS. */
export function checkGrpcTlsSettings(s: GrpcTlsSettingsView, fail: (message: string) => void): void {
  if (!s.grpcServerUseTls) {
    if (s.grpcClientTlsCacert !== '') fail('GRPC_CLIENT_TLS_CACERT needs GRPC_SERVER_USE_TLS=true');
    return;
  }
  if (s.grpcClientTlsSan !== '' && s.grpcClientTlsCacert === '') fail('GRPC_CLIENT_TLS_SAN needs GRPC_CLIENT_TLS_CACERT');
  for (const [name, path, required] of [
    ['GRPC_SERVER_TLS_CERT', s.grpcServerTlsCert, true],
    ['GRPC_SERVER_TLS_KEY', s.grpcServerTlsKey, true],
    ['GRPC_CLIENT_TLS_CACERT', s.grpcClientTlsCacert, false],
  ] as const) {
    if (path === '') {
      if (required) fail(`${name} is required with GRPC_SERVER_USE_TLS=true`);
      continue;
    }
    const p = fileProblem(path);
    if (p !== undefined) fail(`${name}=${JSON.stringify(path)}: ${p}`);
  }
}
