// SRV discovery of memcached nodes (MCSTORE_SRV): `_service._proto.name` → sorted, de-duplicated
// `host:port` targets, so every replica derives the same node list from the same answer.
import { Resolver } from 'node:dns/promises';

export interface SrvLookup {
  resolveSrv(name: string): Promise<{ name: string; port: number }[]>;
}

/** A resolver that asks `server` (`host:port` or `host`) when given, otherwise the system's resolvers. */
export function createSrvLookup(server: string | undefined, timeoutMs: number): SrvLookup {
  const r = new Resolver({ timeout: Math.max(1, timeoutMs), tries: 2 });
  if (server !== undefined && server !== '') r.setServers([server]);
  return r;
}

/** Validates the `_service._proto.name` shape. */
export function isSrvName(name: string): boolean {
  return /^_[^.\s]+\._(tcp|udp)\.[^\s]+$/i.test(name);
}

export async function resolveSrvTargets(lookup: SrvLookup, name: string): Promise<string[]> {
  const records = await lookup.resolveSrv(name);
  const out = new Set<string>();
  for (const r of records) {
    const host = r.name.replace(/\.$/, '');
    if (host !== '' && r.port > 0) out.add(`${host}:${r.port}`);
  }
  return [...out].sort();
}
