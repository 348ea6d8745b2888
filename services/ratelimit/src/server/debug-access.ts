// Who the debug server answers (docs/ratelimit.md, "Debug server"): checked once per request in the
// server's dispatch, before any route, so every route — including ones added later — is covered.
//
// Two rules, both must pass:
//  - the peer: with DEBUG_ACCESS=loopback (the default) the connection must come from 127.0.0.0/8
//    or ::1 (a tunnel that ends on the host or pod: ssh -L, kubectl port-forward); `any` admits
//    every peer that reaches DEBUG_HOST:DEBUG_PORT, as upstream does;
//  - the Host header: it must name a loopback host (localhost, *.localhost), be an IP address, or
//    be listed in DEBUG_ALLOWED_HOSTS. A web page that re-points its own domain name at the
//    service (DNS rebinding) sends its own name as Host and is refused; a page cannot make a
//    browser send an IP address as Host without being served from that address itself.
//    DEBUG_ALLOWED_HOSTS=* turns the Host rule off (upstream's behaviour).
import { isIP } from 'node:net';

export type DebugAccessMode = 'loopback' | 'any';

export interface DebugAccessPolicy {
  readonly mode: DebugAccessMode;
  /** Host names (lowercase, no port) accepted besides loopback names and IP addresses; `*.suffix` entries match subdomains. */
  readonly allowedHosts: readonly string[];
}

/** Upstream's debug port: every peer, every Host. */
export const OPEN_DEBUG_ACCESS: DebugAccessPolicy = Object.freeze({ mode: 'any', allowedHosts: Object.freeze(['*']) });
export const DEFAULT_DEBUG_ACCESS: DebugAccessPolicy = Object.freeze({ mode: 'loopback', allowedHosts: Object.freeze([]) });

export function isLoopbackAddress(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  const a = addr.startsWith('::ffff:') ? addr.slice(7) : addr;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

/** The host name of a Host header: lowercase, without the port, brackets and a trailing dot; undefined when malformed. */
export function hostName(host: string | undefined): string | undefined {
  if (host === undefined || host.length === 0 || host.length > 255) return undefined;
  const h = host.toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end < 0) return undefined;
    const rest = h.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return h.slice(1, end);
  }
  const m = /^([^:]+)(?::\d{1,5})?$/.exec(h);
  if (m === null) return undefined;
  const name = m[1]!;
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** `localhost`, `*.localhost`, 127.x.y.z or [::1], with or without a port. */
export function isLoopbackHost(host: string | undefined): boolean {
  const name = hostName(host);
  if (name === undefined) return false;
  return name === 'localhost' || name.endsWith('.localhost') || name === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

function hostAllowed(host: string | undefined, allowed: readonly string[]): boolean {
  if (allowed.includes('*')) return true;
  const name = hostName(host);
  if (name === undefined) return false;
  if (isLoopbackHost(host) || isIP(name) !== 0) return true;
  for (const a of allowed) {
    if (a.startsWith('*.') ? name.endsWith(a.slice(1)) : name === a) return true;
  }
  return false;
}

/** Why a request is refused (the 403 body), or undefined when the policy admits it. */
export function debugAccessRefusal(policy: DebugAccessPolicy, remoteAddress: string | undefined, host: string | undefined): string | undefined {
  if (policy.mode === 'loopback' && !isLoopbackAddress(remoteAddress)) {
    return (
      'the debug server answers only clients on a loopback address (DEBUG_ACCESS=loopback): reach it through 127.0.0.1 ' +
      '(ssh -L, kubectl port-forward), or set DEBUG_ACCESS=any where the debug port is on a private network\n'
    );
  }
  if (!hostAllowed(host, policy.allowedHosts)) {
    const shown = host === undefined ? 'no Host header' : `Host ${JSON.stringify(host.slice(0, 100))}`;
    return (
      `the debug server does not answer ${shown}: it answers localhost, an IP address, or a name listed in ` +
      'DEBUG_ALLOWED_HOSTS (a guard against DNS rebinding)\n'
    );
  }
  return undefined;
}

/** DEBUG_ALLOWED_HOSTS: comma-separated host names without ports, `*.suffix` for subdomains, or `*` for any Host. */
export function parseAllowedHosts(raw: string): string[] {
  const out: string[] = [];
  for (const item of raw.split(',')) {
    const h = item.trim().toLowerCase().replace(/\.$/, '');
    if (h === '') continue;
    if (h === '*') {
      out.push(h);
      continue;
    }
    const name = h.startsWith('*.') ? h.slice(2) : h;
    if (!/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(name)) {
      throw new Error(`expected host names without ports separated by commas (e.g. ratelimit.internal,*.svc.cluster.local) or *, got '${item.trim()}'`);
    }
    out.push(h);
  }
  return out;
}
