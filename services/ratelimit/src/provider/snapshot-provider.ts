// The rule provider of a worker in worker mode: the primary owns the file watcher or the xDS
// client and sends each good load as a snapshot (rule-snapshot.ts); this compiles it against the
// worker's own registry and swaps it into the service. The primary validated the same input, so a
// failure here is not expected; should one happen, the worker keeps its previous rules and says so.
import type { Logger } from '../logger.js';
import type { StatsStore } from '@rls/engine';
import type { RuleSink } from './file-provider.js';
import { ruleSetFromSnapshot, type RuleSnapshot } from './rule-snapshot.js';

export interface SnapshotProviderDeps {
  readonly sink: RuleSink;
  readonly stats: StatsStore;
  readonly mergeDomainConfig: boolean;
  readonly logger: Logger;
}

export class SnapshotRuleProvider {
  private appliedVersion: string | undefined;

  constructor(private readonly deps: SnapshotProviderDeps) {}

  /** Version of the snapshot in force (undefined before the first). */
  get version(): string | undefined {
    return this.appliedVersion;
  }

  /** Compiles and swaps in `snapshot`; undefined (no good load yet on the primary) changes nothing. */
  apply(snapshot: RuleSnapshot | undefined): void {
    if (snapshot === undefined) return;
    const { sink, stats, mergeDomainConfig, logger } = this.deps;
    try {
      const rules = ruleSetFromSnapshot(snapshot, { mergeDomainConfig, stats });
      sink.setRuleSet(rules);
      this.appliedVersion = snapshot.version;
      logger.debug({ source: snapshot.kind, version: snapshot.version, domains: rules.domainCount }, 'rate limit configuration applied from the primary');
    } catch (err) {
      sink.recordConfigError(err);
      logger.error({ source: snapshot.kind, version: snapshot.version, err: err instanceof Error ? err.message : String(err) }, 'cannot apply the rule snapshot from the primary; previous rules kept');
    }
  }
}
