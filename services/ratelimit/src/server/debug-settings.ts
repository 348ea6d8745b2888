// Who the debug server answers (docs/ratelimit.md, "Debug server"), declared in the settings
// schema's form so settings.ts spreads them into SETTING_DEFS. The rule itself is debug-access.ts.
import { def, parseEnum } from '@rls/settings';
import { parseAllowedHosts, type DebugAccessMode, type DebugAccessPolicy } from './debug-access.js';

export const DEBUG_SETTING_DEFS = {
  debugAccess: def({
    name: 'DEBUG_ACCESS',
    default: 'loopback',
    meaning:
      'Which peers the debug server (every path: /, /rlconfig, /stats, /debug/pprof/, /operator/) answers. `loopback`: only connections from 127.0.0.0/8 or ::1, whatever DEBUG_HOST binds; others get 403 with the reason. `any`: every peer that reaches the port, as upstream (keep the port on a private network; profiles and heap snapshots expose process memory). The Host rule of DEBUG_ALLOWED_HOSTS applies in both.',
    parse: (raw): DebugAccessMode => parseEnum(raw.trim(), ['loopback', 'any'] as const),
  }),
  debugAllowedHosts: def({
    name: 'DEBUG_ALLOWED_HOSTS',
    default: '',
    meaning:
      'Host names (comma-separated, no port; `*.example.com` for its subdomains) the debug server answers besides localhost and IP addresses; a request naming another Host gets 403, so a web page that re-points its domain at the service (DNS rebinding) cannot read it. `*` answers any Host, as upstream.',
    parse: parseAllowedHosts,
  }),
} as const;

export function debugAccessPolicyOf(s: { readonly debugAccess: DebugAccessMode; readonly debugAllowedHosts: readonly string[] }): DebugAccessPolicy {
  return Object.freeze({ mode: s.debugAccess, allowedHosts: Object.freeze([...s.debugAllowedHosts]) });
}
