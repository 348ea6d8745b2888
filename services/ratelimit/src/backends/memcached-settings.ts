// The memcached store settings (BACKEND_TYPE=mcstore), seed MCSTORE_* names first and upstream's
// MEMCACHE_* names as aliases; settings.ts spreads them into SETTING_DEFS. `checkMcstoreSettings`
// holds the checks that need several of them at once; `mcstoreOptions` turns them into the
// store's options (TLS files read here, once, at start-up).
import { readFileSync } from 'node:fs';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { def, nonNegativeDurationMs, parseBool, parseDurationMs, parseGoInt, parseList, type ParseContext } from '@rls/settings';
import { isSrvName } from './srv.js';

const str = (raw: string): string => raw.trim();
const bool = (raw: string): boolean => (raw === '' ? false : parseBool(raw));

/** Connections per node: each pipelines without bound, so more than 64 only costs sockets and memory on every node. */
export const MAX_CONNS_PER_NODE = 64;

/**
 * MEMCACHE_MAX_IDLE_CONNS accepts any integer upstream (gomemcache takes 0 or less as its default,
 * 2; upstream's own integration tests use 100). Clamped with a warning instead of refusing to start.
 */
function connsPerNode(raw: string, ctx: ParseContext): number {
  const v = parseGoInt(raw);
  if (v < 1n) {
    ctx.clamp(2, '0 or less means the default, as upstream');
    return 2;
  }
  if (v > BigInt(MAX_CONNS_PER_NODE)) {
    ctx.clamp(MAX_CONNS_PER_NODE, `more than ${MAX_CONNS_PER_NODE} connections per node are not opened`);
    return MAX_CONNS_PER_NODE;
  }
  return Number(v);
}

export const MCSTORE_SETTING_DEFS = {
  mcstoreHostPort: def({
    name: 'MCSTORE_HOST_PORT',
    aliases: ['MEMCACHE_HOST_PORT'],
    default: '',
    meaning: 'Comma-separated `host:port` list of memcached nodes (exclusive with MCSTORE_SRV). Keys are spread by consistent hashing over the set of addresses (order does not matter); give every replica the same set.',
    parse: (raw) => parseList(raw),
  }),
  mcstoreSrv: def({ name: 'MCSTORE_SRV', aliases: ['MEMCACHE_SRV'], default: '', meaning: 'SRV record `_service._proto.name` listing the memcached nodes (exclusive with MCSTORE_HOST_PORT); targets are used sorted as `host:port`.', parse: str }),
  mcstoreSrvRefreshMs: def({ name: 'MCSTORE_SRV_REFRESH', aliases: ['MEMCACHE_SRV_REFRESH'], default: '0', meaning: 'How often the SRV record is looked up again (duration); 0 (or negative, with a warning) = only at start-up. A failed lookup keeps the nodes in use.', parse: nonNegativeDurationMs }),
  mcstoreSrvDnsServer: def({ name: 'MCSTORE_SRV_DNS_SERVER', default: '', meaning: 'DNS server (`ip` or `ip:port`) asked for MCSTORE_SRV; empty = the system resolvers (/etc/resolv.conf).', parse: str }),
  mcstoreMaxIdleConns: def({ name: 'MCSTORE_MAX_IDLE_CONNS', aliases: ['MEMCACHE_MAX_IDLE_CONNS'], default: '2', meaning: 'Connections kept open per memcached node, 1–64; each pipelines any number of requests, a key always uses the same one. Larger values use 64 and 0 or less the default 2, each with a warning.', parse: connsPerNode }),
  mcstoreTimeoutMs: def({
    name: 'MCSTORE_TIMEOUT',
    default: '500ms',
    meaning: 'Bound on connecting to a node and on each reply (duration); past it the node\'s keys count from 0 for that request (fail-open) and the connection is replaced.',
    parse: (raw) => {
      const ms = parseDurationMs(raw);
      if (ms <= 0) throw new Error('must be greater than zero');
      return ms;
    },
  }),
  mcstoreTls: def({ name: 'MCSTORE_TLS', aliases: ['MEMCACHE_TLS'], default: 'false', meaning: 'Connect to memcached with TLS (memcached started with `-Z`).', parse: bool }),
  mcstoreTlsClientCert: def({ name: 'MCSTORE_TLS_CLIENT_CERT', aliases: ['MEMCACHE_TLS_CLIENT_CERT'], default: '', meaning: 'PEM client certificate presented to memcached (with MCSTORE_TLS_CLIENT_KEY).', parse: str }),
  mcstoreTlsClientKey: def({ name: 'MCSTORE_TLS_CLIENT_KEY', aliases: ['MEMCACHE_TLS_CLIENT_KEY'], default: '', meaning: 'PEM private key of MCSTORE_TLS_CLIENT_CERT.', parse: str }),
  mcstoreTlsCacert: def({ name: 'MCSTORE_TLS_CACERT', aliases: ['MEMCACHE_TLS_CACERT'], default: '', meaning: 'PEM CA bundle that verifies memcached\'s certificate; empty = the system roots.', parse: str }),
  mcstoreTlsSkipHostnameVerification: def({
    name: 'MCSTORE_TLS_SKIP_HOSTNAME_VERIFICATION',
    aliases: ['MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION'],
    default: 'false',
    meaning: 'Accept a memcached certificate issued for another name (the chain is still verified).',
    parse: bool,
  }),
} as const;

export interface McstoreSettings {
  readonly mcstoreHostPort: readonly string[];
  readonly mcstoreSrv: string;
  readonly mcstoreSrvRefreshMs: number;
  readonly mcstoreSrvDnsServer: string;
  readonly mcstoreMaxIdleConns: number;
  readonly mcstoreTimeoutMs: number;
  readonly mcstoreTls: boolean;
  readonly mcstoreTlsClientCert: string;
  readonly mcstoreTlsClientKey: string;
  readonly mcstoreTlsCacert: string;
  readonly mcstoreTlsSkipHostnameVerification: boolean;
}

/** Cross-field checks for BACKEND_TYPE=mcstore; reports each problem through `fail`. */
export function checkMcstoreSettings(s: McstoreSettings, fail: (message: string) => void): void {
  const hasList = s.mcstoreHostPort.length > 0;
  const hasSrv = s.mcstoreSrv !== '';
  if (hasList && hasSrv) fail('Both MCSTORE_HOST_PORT and MCSTORE_SRV are set');
  if (!hasList && !hasSrv) fail('BACKEND_TYPE=mcstore needs MCSTORE_HOST_PORT or MCSTORE_SRV');
  for (const hp of s.mcstoreHostPort) {
    if (!/^(\[[^\]]+\]|[^\s:]+):\d{1,5}$/.test(hp)) fail(`MCSTORE_HOST_PORT: ${JSON.stringify(hp)} is not host:port`);
  }
  if (hasSrv && !isSrvName(s.mcstoreSrv)) fail(`MCSTORE_SRV=${JSON.stringify(s.mcstoreSrv)}: expected _service._proto.name`);
  if ((s.mcstoreTlsClientCert === '') !== (s.mcstoreTlsClientKey === '')) fail('MCSTORE_TLS_CLIENT_CERT and MCSTORE_TLS_CLIENT_KEY must be set together');
  if (!s.mcstoreTls && (s.mcstoreTlsClientCert !== '' || s.mcstoreTlsCacert !== '')) fail('MCSTORE_TLS_* files are set but MCSTORE_TLS is not true');
}

/** TLS options from the settings (files read now); undefined without MCSTORE_TLS. */
export function mcstoreTlsOptions(s: McstoreSettings): TlsOptions | undefined {
  if (!s.mcstoreTls) return undefined;
  return {
    ...(s.mcstoreTlsCacert !== '' ? { ca: readFileSync(s.mcstoreTlsCacert) } : {}),
    ...(s.mcstoreTlsClientCert !== '' ? { cert: readFileSync(s.mcstoreTlsClientCert), key: readFileSync(s.mcstoreTlsClientKey) } : {}),
    ...(s.mcstoreTlsSkipHostnameVerification ? { checkServerIdentity: () => undefined } : {}),
  };
}
