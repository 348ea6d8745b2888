// The FILE rule provider (docs/ratelimit.md, "Rule files" and "Live reload"): reads the rule directory into one immutable
// RuleSet and pushes it to the service, then watches for changes and reloads.
//
// Two watch modes, as upstream:
// - watch root (RUNTIME_WATCH_ROOT=true): the parent directory of RUNTIME_ROOT is watched and a
//   reload happens when RUNTIME_ROOT comes to resolve to a different directory (the atomic symlink
//   swap of ConfigMap-style deployments, whether done with `ln -sfn` or by renaming a new link or
//   directory over the old one). Edits inside the tree do not reload in this mode (upstream's too).
//   The resolved directory's identity (real path, device, inode) is compared, so unrelated
//   activity in the parent directory costs a stat, never a reload.
// - directory (RUNTIME_WATCH_ROOT=false): the application directory itself is watched; any entry
//   written, created, chmod-ed, renamed or removed reloads everything.
// fs.watch is inotify on Linux: no polling. A burst of events (an editor's save, a kubelet update)
// produces one reload after a quiet period; a steady stream of events still reloads at least once
// per `maxWaitMs`.
//
// Source names in rules and errors are paths relative to the application directory
// (`basic.yaml`, `team/a.yaml`) in both modes — what `ratelimit-config-check` prints too — rather
// than upstream's watch-root keys (`config.basic.yaml`).
import { statSync, realpathSync, watch, type FSWatcher } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadRuleSet, readRuleFiles, type Counter, type Gauge, type RuleSet, type RuleSource, type StatsStore } from '@rls/engine';
import type { Logger } from '../logger.js';

/** Where a provider delivers what it loaded: RateLimitService satisfies it. */
export interface RuleSink {
  setRuleSet(rules: RuleSet): void;
  recordConfigError(err: unknown): void;
}

export interface FileProviderOptions {
  readonly runtimeRoot: string;
  readonly runtimeSubdirectory: string;
  readonly runtimeAppDirectory: string;
  readonly ignoreDotfiles: boolean;
  /** RUNTIME_WATCH_ROOT. */
  readonly watchRoot: boolean;
  /** Quiet period after the last file event before reloading (RUNTIME_WATCH_DEBOUNCE). */
  readonly debounceMs: number;
  readonly mergeDomainConfig: boolean;
}

/** The RUNTIME_* settings the provider is built from. */
export interface FileProviderSettingsView {
  readonly runtimeRoot: string;
  readonly runtimeSubdirectory: string;
  readonly runtimeAppDirectory: string;
  readonly runtimeIgnoreDotfiles: boolean;
  readonly runtimeWatchRoot: boolean;
  readonly runtimeWatchDebounceMs: number;
  readonly mergeDomainConfig: boolean;
}

export function fileProviderOptions(s: FileProviderSettingsView): FileProviderOptions {
  return {
    runtimeRoot: s.runtimeRoot,
    runtimeSubdirectory: s.runtimeSubdirectory,
    runtimeAppDirectory: s.runtimeAppDirectory,
    ignoreDotfiles: s.runtimeIgnoreDotfiles,
    watchRoot: s.runtimeWatchRoot,
    debounceMs: s.runtimeWatchDebounceMs,
    mergeDomainConfig: s.mergeDomainConfig,
  };
}

/** The directory whose files are the rules: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY. */
export function ruleDirectoryOf(s: Pick<FileProviderSettingsView, 'runtimeRoot' | 'runtimeSubdirectory' | 'runtimeAppDirectory'>): string {
  return join(resolve(s.runtimeRoot), s.runtimeSubdirectory, s.runtimeAppDirectory);
}

/** Injected timers, so the debounce can be driven by tests or a fake clock. */
export interface ProviderTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: ProviderTimers = {
  setTimeout: (fn, ms) => {
    const h = setTimeout(fn, ms);
    // A pending reload must not keep a stopping process alive.
    h.unref();
    return h;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface FileProviderDeps {
  readonly sink: RuleSink;
  readonly stats: StatsStore;
  readonly logger: Logger;
  readonly timers?: ProviderTimers;
}

/** `sources` are the files read, as loaded: what worker mode ships to the workers (rule-snapshot.ts). */
export type LoadOutcome = { ok: true; rules: RuleSet; sources: readonly RuleSource[] } | { ok: false; error: Error; file: string | undefined };

export class FileRuleProvider {
  /** The directory whose files are rule files. */
  readonly directory: string;
  private readonly root: string;
  private readonly opts: FileProviderOptions;
  private readonly deps: FileProviderDeps;
  private readonly timers: ProviderTimers;
  private readonly maxWaitMs: number;
  private watcher: FSWatcher | undefined;
  private quietTimer: unknown;
  private maxTimer: unknown;
  private rootIdentity: string | undefined;
  private loads = 0;
  private readonly listeners: ((outcome: LoadOutcome) => void)[] = [];
  private readonly loadAttempts: Counter;
  private readonly loadFailures: Counter;
  private readonly numValues: Gauge;

  constructor(opts: FileProviderOptions, deps: FileProviderDeps) {
    this.opts = opts;
    this.deps = deps;
    this.timers = deps.timers ?? realTimers;
    this.root = resolve(opts.runtimeRoot);
    this.directory = ruleDirectoryOf(opts);
    this.maxWaitMs = Math.max(1000, opts.debounceMs * 5);
    // goruntime's loader stats (upstream emits them too), kept for dashboards that chart them.
    this.loadAttempts = deps.stats.counter('runtime.load_attempts');
    this.loadFailures = deps.stats.counter('runtime.load_failures');
    this.numValues = deps.stats.gauge('runtime.num_values');
  }

  /** Reads every rule file and swaps the result in; on error the previous rules keep serving. */
  load(): LoadOutcome {
    const { logger, sink, stats } = this.deps;
    const first = this.loads === 0;
    this.loads += 1;
    if (this.opts.watchRoot) this.rootIdentity = this.identityOfRoot();
    this.loadAttempts.inc();
    let sources: RuleSource[] = [];
    let outcome: LoadOutcome;
    try {
      try {
        sources = readRuleFiles(this.directory, { ignoreDotfiles: this.opts.ignoreDotfiles });
      } catch (err) {
        this.loadFailures.inc();
        throw err;
      }
      this.numValues.set(sources.length);
      const rules = loadRuleSet(sources, { mergeDomainConfig: this.opts.mergeDomainConfig, stats });
      sink.setRuleSet(rules);
      this.logRules(rules, first);
      logger.info({ directory: this.directory, files: sources.length, domains: rules.domainCount }, first ? 'rate limit configuration loaded' : 'rate limit configuration reloaded');
      outcome = { ok: true, rules, sources };
    } catch (err) {
      sink.recordConfigError(err);
      const error = err instanceof Error ? err : new Error(String(err));
      const file = sources.find((s) => error.message.startsWith(`${s.name}:`))?.name;
      logger.error({ directory: this.directory, ...(file !== undefined ? { file } : {}), err: error.message }, 'error loading rate limit configuration; previous rules kept');
      outcome = { ok: false, error, file };
    }
    for (const l of this.listeners) l(outcome);
    return outcome;
  }

  /** Called after every load attempt (tests, the debug server). */
  onLoad(listener: (outcome: LoadOutcome) => void): void {
    this.listeners.push(listener);
  }

  /** Starts watching; a missing watched directory is logged and live reload stays off. */
  start(): void {
    if (this.watcher !== undefined) return;
    const target = this.opts.watchRoot ? dirname(this.root) : this.directory;
    try {
      this.watcher = watch(target, { persistent: false }, () => this.schedule());
    } catch (err) {
      this.deps.logger.error({ directory: target, err: err instanceof Error ? err.message : String(err) }, 'cannot watch the rule directory; live reload is off');
      return;
    }
    this.watcher.on('error', (err: Error) => {
      this.deps.logger.error({ directory: target, err: err.message }, 'rule directory watch failed; live reload is off');
      this.stop();
    });
    // Says what reloads, too: in root mode editing a rule file does nothing, which surprises anyone
    // who has not read upstream's docs.
    this.deps.logger.info(
      this.opts.watchRoot
        ? { directory: target, mode: 'root', reloadsWhen: `${this.root} is re-pointed to another directory; edits inside it do not reload (RUNTIME_WATCH_ROOT=false watches the rule files)` }
        : { directory: target, mode: 'directory', reloadsWhen: 'a file in this directory is written, created, renamed or removed' },
      'watching rule files',
    );
    // The root may have been swapped between the first load and now.
    if (this.opts.watchRoot) this.schedule();
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
    this.clearTimers();
  }

  private schedule(): void {
    if (this.watcher === undefined) return;
    if (this.quietTimer !== undefined) this.timers.clearTimeout(this.quietTimer);
    this.quietTimer = this.timers.setTimeout(() => this.fire(), this.opts.debounceMs);
    this.maxTimer ??= this.timers.setTimeout(() => this.fire(), this.maxWaitMs);
  }

  private fire(): void {
    this.clearTimers();
    if (this.watcher === undefined) return;
    if (this.opts.watchRoot && this.identityOfRoot() === this.rootIdentity) return;
    this.load();
  }

  private clearTimers(): void {
    if (this.quietTimer !== undefined) this.timers.clearTimeout(this.quietTimer);
    if (this.maxTimer !== undefined) this.timers.clearTimeout(this.maxTimer);
    this.quietTimer = undefined;
    this.maxTimer = undefined;
  }

  /** What RUNTIME_ROOT resolves to right now; a replaced directory has a new inode. */
  private identityOfRoot(): string {
    try {
      const real = realpathSync(this.root);
      const st = statSync(real);
      return `${real}\0${st.dev}\0${st.ino}`;
    } catch {
      return '';
    }
  }

  private logRules(rules: RuleSet, first: boolean): void {
    const { logger } = this.deps;
    // Start-up shows every rule (seed: "Logged at startup"); reloads only at debug level.
    const level = first ? 'info' : 'debug';
    if (!logger.isLevelEnabled(level)) return;
    for (const d of rules.summary()) {
      for (const r of d.descriptors) {
        if (r.limit !== undefined) logger[level]({ domain: d.domain, descriptor: r.key, limit: r.limit, name: r.name || undefined }, 'loaded rate limit rule');
      }
    }
  }
}
