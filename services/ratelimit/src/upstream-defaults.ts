// Bare `ratelimit` (no settings in the environment) runs on upstream's defaults: rules under
// /srv/runtime_data/current/config, Redis through twemproxy's unix socket, statsd on
// localhost:8125. They fit a prepared host or pod and are kept, but on a laptop they used to give a
// stream of errors (missing rule directory, failed watch, statsd reconnects, Redis waits) and no
// hint of what to do. When none of the variables that choose the rule source, the store or the
// stats sink is set and the default rule directory does not exist, main.ts prints the one line
// built here — what is missing and where the quick start is — and exits 1. Setting any of those
// variables, or preparing the directory, runs the service exactly as before.
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import type { Env } from '@rls/settings';
import { ruleDirectoryOf } from './provider/file-provider.js';
import { SETTING_DEFS, type Settings } from './settings.js';

/** The settings whose defaults make a bare start; any one of them set means "configured". */
const CHOOSING_DEFS = [
  SETTING_DEFS.configType,
  SETTING_DEFS.runtimeRoot,
  SETTING_DEFS.runtimeSubdirectory,
  SETTING_DEFS.runtimeAppDirectory,
  SETTING_DEFS.backendType,
  SETTING_DEFS.kvstoreType,
  SETTING_DEFS.kvstoreSocketType,
  SETTING_DEFS.kvstoreUrl,
  SETTING_DEFS.useStatsPush,
  SETTING_DEFS.statsdHost,
  SETTING_DEFS.statsdPort,
] as const;

/** Every variable name (primary and alias) that counts as configuring the service. */
export const CHOOSING_VARIABLES: readonly string[] = CHOOSING_DEFS.flatMap((d) => [d.name, ...(d.aliases ?? [])]);

/** What the check asks of the machine; main.ts passes the real file system and network. */
export interface MachineProbe {
  exists(path: string): boolean;
  /** Whether something accepts a TCP connection there (bounded by the probe's own timeout). */
  listening(host: string, port: number): Promise<boolean>;
}

/** The settings the check reads. */
export type DefaultsView = Pick<
  Settings,
  'configType' | 'runtimeRoot' | 'runtimeSubdirectory' | 'runtimeAppDirectory' | 'backendType' | 'kvstoreSocketType' | 'kvstoreUrl' | 'useStatsPush' | 'statsdHost' | 'statsdPort' | 'statsdProtocol'
>;

/**
 * The one line to print instead of starting, or undefined when the service should start: some
 * choosing variable is set, or the default rule directory exists.
 */
export async function upstreamDefaultsMisfit(settings: DefaultsView, env: Env, probe: MachineProbe): Promise<string | undefined> {
  if (CHOOSING_VARIABLES.some((name) => env[name] !== undefined)) return undefined;
  if (settings.configType !== 'FILE') return undefined;
  const rules = ruleDirectoryOf(settings);
  if (probe.exists(rules)) return undefined;
  const missing = [`no rule directory ${rules}`];
  if (settings.backendType === 'redis' && settings.kvstoreSocketType === 'unix' && !probe.exists(settings.kvstoreUrl)) missing.push(`no Redis socket ${settings.kvstoreUrl}`);
  // UDP has no handshake to probe; only the TCP default can be seen missing.
  if (settings.useStatsPush && settings.statsdProtocol === 'tcp' && !(await probe.listening(settings.statsdHost, settings.statsdPort))) {
    missing.push(`no statsd on ${settings.statsdHost}:${settings.statsdPort}`);
  }
  return (
    `ratelimit: upstream's defaults do not fit this machine (${missing.join(', ')}); ` +
    'to try the service, run `npm start` in the repository (embedded store and example rules, examples/quickstart.env); ' +
    'to deploy it, set RUNTIME_ROOT, BACKEND_TYPE and USE_STATS_PUSH (docs/ratelimit.md, "Running it")'
  );
}

/** The real machine: the file system, and a loopback-fast TCP connect bounded at 300 ms. */
export const systemProbe: MachineProbe = {
  exists: (path) => existsSync(path),
  listening: (host, port) =>
    new Promise((resolvePromise) => {
      const socket = connect({ host, port });
      const done = (ok: boolean): void => {
        socket.destroy();
        resolvePromise(ok);
      };
      socket.setTimeout(300, () => done(false));
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    }),
};
