// The rule source of worker mode, owned once by the primary: the file watcher (CONFIG_TYPE=FILE)
// or the one xDS client (GRPC_XDS_SOTW) runs here, every load is validated here, counted once
// (config_load_success / config_load_error, runtime.*) in the aggregate registry and logged once,
// and each good load becomes the next snapshot the workers compile (rule-snapshot.ts). A failed
// load publishes nothing: the workers keep the last good rules, as a single process does. The
// management server therefore sees one client, and every worker serves the same version.
import type { Logger } from '../logger.js';
import { fileProviderOptions, FileRuleProvider, type RuleSink } from '../provider/file-provider.js';
import type { RuleSnapshot } from '../provider/rule-snapshot.js';
import { createXdsRuleProvider, type XdsRuleProvider } from '../provider/xds-rule-provider.js';
import { xdsConnectionOptions } from '../provider/xds-settings.js';
import type { Settings } from '../settings.js';
import { unsupportedAlgorithmError, type StatsStore } from '@rls/engine';
import { BACKEND_ALGORITHMS } from '../compose-counter-store.js';
import { WORKERS_SERVING, WORKERS_START_FAILURES, WORKERS_UNEXPECTED_EXITS } from './worker-supervisor.js';

/** Stats the primary counts itself (StatsAggregator ignores the workers' copies): rule loading and worker supervision. */
export const CONFIG_LOAD_SUCCESS = 'ratelimit.service.config_load_success';
export const CONFIG_LOAD_ERROR = 'ratelimit.service.config_load_error';
export const PRIMARY_OWNED_STATS: ReadonlySet<string> = new Set([
  CONFIG_LOAD_SUCCESS,
  CONFIG_LOAD_ERROR,
  'runtime.load_attempts',
  'runtime.load_failures',
  'runtime.num_values',
  WORKERS_SERVING,
  WORKERS_START_FAILURES,
  WORKERS_UNEXPECTED_EXITS,
]);

export interface PrimaryRuleSource {
  /** The latest good snapshot (undefined before the first) and its sequence number. */
  current(): { seq: number; snapshot: RuleSnapshot | undefined };
  /** Called after every good load with the new snapshot. */
  onChange(fn: (seq: number, snapshot: RuleSnapshot) => void): void;
  /** Called after every rejected load (the workers keep their rules; the operator page shows it). */
  onFailure(fn: (failure: LoadFailure) => void): void;
  /**
   * Resolves when workers may start: at once for files (the first load is done) and with
   * FORCE_START_WITHOUT_INITIAL_CONFIG; otherwise at the first xDS configuration event.
   */
  readonly startable: Promise<void>;
  /** The xDS client, when CONFIG_TYPE=GRPC_XDS_SOTW. */
  readonly xds: XdsRuleProvider | undefined;
  stop(): void;
}

export interface LoadFailure {
  readonly source: 'file' | 'xds';
  readonly error: string;
  readonly file?: string | undefined;
}

export interface PrimaryRuleDeps {
  /** The aggregate registry (what the sinks and every worker's /stats show). */
  stats: StatsStore;
  logger: Logger;
}

export function startPrimaryRuleSource(settings: Settings, deps: PrimaryRuleDeps): PrimaryRuleSource {
  const { stats, logger } = deps;
  const loadSuccess = stats.counter(CONFIG_LOAD_SUCCESS);
  const loadError = stats.counter(CONFIG_LOAD_ERROR);
  const failureListeners: ((failure: LoadFailure) => void)[] = [];
  const failed = (failure: LoadFailure): void => {
    for (const l of failureListeners) l(failure);
  };
  const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  // The primary serves no requests: the compiled rule set only proves the load valid, including
  // that the workers' store runs every rule's algorithm (each worker would refuse it otherwise).
  const support = BACKEND_ALGORITHMS[settings.backendType];
  const sink: RuleSink = {
    setRuleSet: (rules) => {
      const refused = unsupportedAlgorithmError(rules, support);
      if (refused !== undefined) throw refused;
      loadSuccess.inc();
    },
    recordConfigError: (err) => {
      loadError.inc();
      if (settings.configType === 'GRPC_XDS_SOTW') failed({ source: 'xds', error: messageOf(err) });
    },
  };
  let seq = 0;
  let snapshot: RuleSnapshot | undefined;
  const listeners: ((seq: number, snapshot: RuleSnapshot) => void)[] = [];
  const publish = (next: RuleSnapshot): void => {
    seq += 1;
    snapshot = next;
    for (const l of listeners) l(seq, next);
  };
  const base = {
    current: () => ({ seq, snapshot }),
    onChange: (fn: (seq: number, snapshot: RuleSnapshot) => void) => void listeners.push(fn),
    onFailure: (fn: (failure: LoadFailure) => void) => void failureListeners.push(fn),
  };

  if (settings.configType === 'GRPC_XDS_SOTW') {
    const xds = createXdsRuleProvider({
      ...xdsConnectionOptions(settings),
      sink,
      stats,
      logger: logger.child({ component: 'xds' }),
    });
    xds.onSnapshot(publish);
    xds.start();
    if (!settings.forceStartWithoutInitialConfig) logger.info({ server: settings.xdsServerUrl }, 'waiting for the first configuration from the xDS management server');
    return { ...base, xds, startable: settings.forceStartWithoutInitialConfig ? Promise.resolve() : xds.firstConfigEvent, stop: () => xds.stop() };
  }

  const files = new FileRuleProvider(
    fileProviderOptions(settings),
    { sink, stats, logger: logger.child({ component: 'rules' }) },
  );
  let loads = 0;
  files.onLoad((outcome) => {
    loads += 1;
    if (outcome.ok) publish({ kind: 'file', version: String(loads), sources: outcome.sources });
    else failed({ source: 'file', error: outcome.error.message, file: outcome.file });
  });
  files.load();
  files.start();
  return { ...base, xds: undefined, startable: Promise.resolve(), stop: () => files.stop() };
}
