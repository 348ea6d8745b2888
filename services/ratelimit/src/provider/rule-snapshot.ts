// A rule set in a form that crosses the cluster IPC channel (JSON): what a rule source read, not
// the compiled tree. In worker mode the primary owns the rule source (file watcher or xDS client),
// validates each load once and sends the snapshot of every good load to each worker; a worker
// compiles its own tree from it (a RuleSet holds compiled matchers and stat handles bound to the
// worker's registry, so the tree itself cannot be shipped). The input is the same bytes the primary
// validated, so a worker builds the same rules.
import { decodeRateLimitConfig } from '@rls/rls-proto';
import { loadRuleSet, loadXdsRuleSet, type RuleSet, type RuleSource, type StatsStore } from '@rls/engine';

export type RuleSnapshot =
  /** The rule files of one load, named relative to the rule directory, in load order. */
  | { readonly kind: 'file'; readonly version: string; readonly sources: readonly RuleSource[] }
  /** The RateLimitConfig resources of one xDS update (protobuf bytes, base64), with its version_info. */
  | { readonly kind: 'xds'; readonly version: string; readonly resources: readonly string[] };

export interface SnapshotBuildOptions {
  readonly mergeDomainConfig: boolean;
  /** Where the rule counters are registered (the worker's own registry). */
  readonly stats: StatsStore;
}

/** Compiles a snapshot; throws ConfigError (or a decode error) as the original load would have. */
export function ruleSetFromSnapshot(snapshot: RuleSnapshot, opts: SnapshotBuildOptions): RuleSet {
  if (snapshot.kind === 'file') return loadRuleSet(snapshot.sources, opts);
  return loadXdsRuleSet(
    snapshot.resources.map((b64) => decodeRateLimitConfig(Buffer.from(b64, 'base64'))),
    opts,
  );
}

/** Shape check of a snapshot received over IPC (the channel carries untyped JSON). */
export function isRuleSnapshot(v: unknown): v is RuleSnapshot {
  if (typeof v !== 'object' || v === null) return false;
  const s = v as { kind?: unknown; version?: unknown; sources?: unknown; resources?: unknown };
  if (typeof s.version !== 'string') return false;
  if (s.kind === 'file') {
    return Array.isArray(s.sources) && s.sources.every((x: unknown) => typeof x === 'object' && x !== null && typeof (x as RuleSource).name === 'string' && typeof (x as RuleSource).content === 'string');
  }
  if (s.kind === 'xds') return Array.isArray(s.resources) && s.resources.every((x: unknown) => typeof x === 'string');
  return false;
}
