// Settings of the xDS configuration source (CONFIG_TYPE=GRPC_XDS_SOTW), in the settings schema's
// form so settings.ts spreads them into SETTING_DEFS, plus their start-up cross-checks and the
// translation into the provider's options.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { def, clampedFloat, clampedInt, parseBool, parseMap, positiveDurationMs } from '@rls/settings';
import type { BackoffPolicy } from './xds-backoff.js';
import type { XdsTlsOptions } from './xds-client.js';
import type { XdsRuleProviderOptions } from './xds-rule-provider.js';

const str = (raw: string): string => raw;
const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));

/** `k1=v1,k2=v2`; items without `=` are ignored, as upstream does. */
export function parseNodeMetadata(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of raw.split(',')) {
    const i = item.indexOf('=');
    if (i < 0) continue;
    out[item.slice(0, i).trim()] = item.slice(i + 1).trim();
  }
  return out;
}


export const XDS_SETTING_DEFS = {
  forceStartWithoutInitialConfig: def({
    name: 'FORCE_START_WITHOUT_INITIAL_CONFIG',
    default: 'false',
    meaning:
      'With CONFIG_TYPE=GRPC_XDS_SOTW: false waits for the first configuration from the management server before the gRPC and HTTP listeners open; true opens them at once and answers `no rate limit configuration loaded` until rules arrive.',
    parse: bool,
  }),
  xdsNodeId: def({ name: 'CONFIG_GRPC_XDS_NODE_ID', default: 'default', meaning: 'Node id sent to the xDS management server.', parse: str }),
  xdsNodeMetadata: def({ name: 'CONFIG_GRPC_XDS_NODE_METADATA', default: '', meaning: 'Node metadata, `k1=v1,k2=v2` (items without `=` are ignored); values are sent as strings.', parse: parseNodeMetadata }),
  xdsServerUrl: def({ name: 'CONFIG_GRPC_XDS_SERVER_URL', default: 'localhost:18000', meaning: 'Address (gRPC target) of the xDS management server.', parse: str }),
  xdsConnectRetryIntervalMs: def({
    name: 'CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL',
    default: '3s',
    meaning: 'Bound on one connection attempt to the management server (duration): an attempt not connected by then counts as failed and the reconnect backoff applies.',
    parse: (raw, ctx) => positiveDurationMs(raw, ctx, 3000),
  }),
  xdsClientHeaders: def({ name: 'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS', default: '', meaning: 'gRPC metadata sent on the xDS stream, `k1:v1,k2:v2` (e.g. authorization).', parse: parseMap }),
  xdsServerUseTls: def({ name: 'CONFIG_GRPC_XDS_SERVER_USE_TLS', default: 'false', meaning: 'Connect to the management server with TLS.', parse: bool }),
  xdsClientTlsCert: def({ name: 'CONFIG_GRPC_XDS_CLIENT_TLS_CERT', default: '', meaning: 'Client certificate chain file (PEM) for TLS to the management server (with _KEY).', parse: str }),
  xdsClientTlsKey: def({ name: 'CONFIG_GRPC_XDS_CLIENT_TLS_KEY', default: '', meaning: 'Client private key file (PEM) for TLS to the management server.', parse: str }),
  xdsServerTlsCacert: def({ name: 'CONFIG_GRPC_XDS_SERVER_TLS_CACERT', default: '', meaning: 'CA file (PEM) the management server certificate must chain to; the system roots when empty.', parse: str }),
  xdsServerTlsSan: def({ name: 'CONFIG_GRPC_XDS_SERVER_TLS_SAN', default: '', meaning: 'Name to verify in the management server certificate instead of the host of CONFIG_GRPC_XDS_SERVER_URL.', parse: str }),
  xdsBackoffInitialMs: def({ name: 'XDS_CLIENT_BACKOFF_INITIAL_INTERVAL', default: '10s', meaning: 'First wait before reconnecting to the management server (duration; 0 or less: 10s with a warning, no busy reconnect loop).', parse: (raw, ctx) => positiveDurationMs(raw, ctx, 10_000) }),
  xdsBackoffMaxMs: def({ name: 'XDS_CLIENT_BACKOFF_MAX_INTERVAL', default: '60s', meaning: 'Longest wait between reconnect attempts (duration; 0 or less: 60s with a warning).', parse: (raw, ctx) => positiveDurationMs(raw, ctx, 60_000) }),
  xdsBackoffRandomFactor: def({
    name: 'XDS_CLIENT_BACKOFF_RANDOM_FACTOR',
    default: '0.5',
    meaning: 'Growth of the reconnect wait: the wait is multiplied by this factor per failed attempt when it is greater than 1, otherwise by 2 (upstream treats 0.5 as the base and never grows).',
    // Upstream takes any float; a negative or NaN factor means no growth, as does one below 1.
    parse: (raw, ctx) => clampedFloat(raw, ctx, 0, 1_000, 0.5),
  }),
  xdsBackoffJitter: def({ name: 'XDS_CLIENT_BACKOFF_JITTER', default: 'true', meaning: 'Randomise each reconnect wait uniformly between the initial interval and its computed value.', parse: bool }),
  xdsMaxMsgSizeBytes: def({ name: 'XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', default: '0', meaning: 'Largest xDS response accepted, in bytes; 0 (or a negative value, with a warning) keeps the gRPC default (4 MiB).', parse: (raw, ctx) => clampedInt(raw, ctx, 0, 2_147_483_647) }),
} as const;

export interface XdsSettingsView {
  readonly configType: string;
  readonly xdsServerUseTls: boolean;
  readonly xdsClientTlsCert: string;
  readonly xdsClientTlsKey: string;
  readonly xdsServerTlsCacert: string;
  readonly xdsServerTlsSan: string;
  readonly xdsBackoffInitialMs: number;
  readonly xdsBackoffMaxMs: number;
  readonly xdsBackoffRandomFactor: number;
  readonly xdsBackoffJitter: boolean;
}

/** A readable regular file, or the reason it is not. */
export function fileProblem(path: string): string | undefined {
  if (!existsSync(path)) return 'file not found';
  try {
    if (!statSync(path).isFile()) return 'not a regular file';
    readFileSync(path);
  } catch (err) {
    return `cannot read: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}

/** Cross-field checks of the xDS settings, reported through `fail` (only in xDS mode). */
export function checkXdsSettings(s: XdsSettingsView, fail: (message: string) => void): void {
  if (s.configType !== 'GRPC_XDS_SOTW' || !s.xdsServerUseTls) return;
  if ((s.xdsClientTlsCert === '') !== (s.xdsClientTlsKey === '')) {
    fail('CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY must be set together');
  }
  for (const [name, path] of [
    ['CONFIG_GRPC_XDS_CLIENT_TLS_CERT', s.xdsClientTlsCert],
    ['CONFIG_GRPC_XDS_CLIENT_TLS_KEY', s.xdsClientTlsKey],
    ['CONFIG_GRPC_XDS_SERVER_TLS_CACERT', s.xdsServerTlsCacert],
  ] as const) {
    if (path === '') continue;
    const p = fileProblem(path);
    if (p !== undefined) fail(`${name}=${JSON.stringify(path)}: ${p}`);
  }
}

/** The settings the management-server connection is built from. */
export interface XdsConnectionSettingsView extends XdsSettingsView {
  readonly xdsServerUrl: string;
  readonly xdsNodeId: string;
  readonly xdsNodeMetadata: Readonly<Record<string, string>>;
  readonly xdsClientHeaders: Readonly<Record<string, string>>;
  readonly xdsMaxMsgSizeBytes: number;
  readonly xdsConnectRetryIntervalMs: number;
  readonly mergeDomainConfig: boolean;
}

type XdsConnectionOptions = Pick<
  XdsRuleProviderOptions,
  'serverUrl' | 'nodeId' | 'nodeMetadata' | 'headers' | 'tls' | 'maxReceiveBytes' | 'connectTimeoutMs' | 'backoff' | 'mergeDomainConfig'
>;

/** The xDS provider's connection options from the settings (TLS files read now). */
export function xdsConnectionOptions(s: XdsConnectionSettingsView): XdsConnectionOptions {
  return {
    serverUrl: s.xdsServerUrl,
    nodeId: s.xdsNodeId,
    nodeMetadata: s.xdsNodeMetadata,
    headers: s.xdsClientHeaders,
    tls: xdsTlsOptions(s),
    maxReceiveBytes: s.xdsMaxMsgSizeBytes,
    connectTimeoutMs: s.xdsConnectRetryIntervalMs,
    backoff: xdsBackoffPolicy(s),
    mergeDomainConfig: s.mergeDomainConfig,
  };
}

export function xdsBackoffPolicy(s: XdsSettingsView): BackoffPolicy {
  return { initialMs: s.xdsBackoffInitialMs, maxMs: s.xdsBackoffMaxMs, factor: s.xdsBackoffRandomFactor, jitter: s.xdsBackoffJitter };
}

/** TLS options for the management server connection, files read now; undefined for cleartext. */
export function xdsTlsOptions(s: XdsSettingsView): XdsTlsOptions | undefined {
  if (!s.xdsServerUseTls) return undefined;
  const read = (p: string): Buffer | undefined => (p === '' ? undefined : readFileSync(p));
  return { ca: read(s.xdsServerTlsCacert), cert: read(s.xdsClientTlsCert), key: read(s.xdsClientTlsKey), serverName: s.xdsServerTlsSan === '' ? undefined : s.xdsServerTlsSan };
}
