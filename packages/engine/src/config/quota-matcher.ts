// Which quota rule a reported bucket id falls under. An entry matches an id with exactly its keys
// whose every value matches the entry's pattern for that key. Among the entries that match, the
// most specific wins: the most exact values, then the most partial patterns (`api-*` or a plugged-in
// matcher such as `cidr:`), and on a tie the entry written first. No entry: the domain's default.
//
// Matching runs once per new bucket (the server keeps the answer with the bucket), not per request;
// still, entries whose values are all exact are found by one map lookup, and the rest are grouped
// by key set and kept in the order they are tried, so the cost does not grow with unrelated rules.
import { bucketKey, type BucketEntryMsg } from '@rls/rls-proto';
import { RuleFileError } from './rule-file.js';
import { compileWildcard } from './wildcard.js';
import type { YNode } from './yaml-document.js';
import { lineNote, type QuotaEntrySpec, type QuotaSpec, type ValuePatternSpec } from './quota-rules.js';

/** Tests one bucket id value. */
export type ValueMatcher = (value: string) => boolean;

/**
 * Compiles the argument of a `{ <name>: <argument> }` value (e.g. `{ cidr: 10.0.0.0/8 }`) into a
 * matcher, once at load. Throws an Error whose message says what is wrong with the argument.
 */
export type ValueMatcherExtension = (argument: YNode) => ValueMatcher;

export interface QuotaMatcherOptions {
  /** Value matchers by name; none are built in (the CIDR matcher is plugged in by the rule loader). */
  readonly extensions?: ReadonlyMap<string, ValueMatcherExtension> | undefined;
}

/** A quota rule as the server applies it to a bucket. */
export interface QuotaRule {
  /** Statistics name: the entry's `name:`, its pattern, or `default`. */
  readonly name: string;
  readonly quota: QuotaSpec;
  /** True for default_quota and for the built-in default. */
  readonly isDefault: boolean;
  /** Index in quota_buckets; -1 for a default. */
  readonly entryIndex: number;
  /** Line of the entry or of default_quota; 0 when not from a file. */
  readonly line: number;
}

interface CompiledEntry {
  readonly rule: QuotaRule;
  /** Sorted keys and their matchers. */
  readonly keys: readonly string[];
  readonly matchers: readonly ValueMatcher[];
  readonly exact: number;
  readonly partial: number;
}

const anyValue: ValueMatcher = () => true;

function keySignature(keys: readonly string[]): string {
  return JSON.stringify(keys);
}

export class QuotaMatcher {
  /** Entries whose values are all exact, by the canonical key of the id they name. */
  private readonly exactIds = new Map<string, QuotaRule>();
  /** The other entries by key set, most specific first. */
  private readonly byKeys = new Map<string, CompiledEntry[]>();

  constructor(
    entries: readonly QuotaEntrySpec[],
    readonly defaultRule: QuotaRule,
    opts: QuotaMatcherOptions = {},
  ) {
    for (const e of entries) {
      const compiled = compile(e, opts);
      if (compiled.exact === compiled.keys.length) {
        this.exactIds.set(bucketKey([...e.bucketId].map(([key, p]) => ({ key, value: (p as { value: string }).value }))), compiled.rule);
        continue;
      }
      const sig = keySignature(compiled.keys);
      let group = this.byKeys.get(sig);
      if (group === undefined) this.byKeys.set(sig, (group = []));
      group.push(compiled);
    }
    for (const group of this.byKeys.values()) {
      group.sort((a, b) => b.exact - a.exact || b.partial - a.partial || a.rule.entryIndex - b.rule.entryIndex);
    }
  }

  /** The rule for a bucket id (keys unique, as decoded); the default when no entry matches. */
  match(id: readonly BucketEntryMsg[]): QuotaRule {
    if (this.exactIds.size > 0) {
      const exact = this.exactIds.get(bucketKey(id));
      if (exact !== undefined) return exact;
    }
    if (this.byKeys.size === 0) return this.defaultRule;
    const sorted = [...id].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const group = this.byKeys.get(keySignature(sorted.map((e) => e.key)));
    if (group === undefined) return this.defaultRule;
    for (const c of group) {
      let ok = true;
      for (let i = 0; i < sorted.length && ok; i++) ok = c.matchers[i]!(sorted[i]!.value);
      if (ok) return c.rule;
    }
    return this.defaultRule;
  }
}

function compile(e: QuotaEntrySpec, opts: QuotaMatcherOptions): CompiledEntry {
  const keys = [...e.bucketId.keys()].sort();
  let exact = 0;
  let partial = 0;
  const matchers = keys.map((k) => {
    const p = e.bucketId.get(k)!;
    if (p.kind === 'exact') exact++;
    else if (p.kind !== 'any') partial++;
    return valueMatcher(p, opts, `quota_buckets[${e.index}].bucket_id.${k}`, e.line);
  });
  return { rule: { name: e.name, quota: e.quota, isDefault: false, entryIndex: e.index, line: e.line }, keys, matchers, exact, partial };
}

function valueMatcher(p: ValuePatternSpec, opts: QuotaMatcherOptions, where: string, line: number): ValueMatcher {
  switch (p.kind) {
    case 'exact': {
      const v = p.value;
      return (x) => x === v;
    }
    case 'any':
      return anyValue;
    case 'wildcard':
      return compileWildcard(p.pattern);
    case 'extension': {
      const ext = opts.extensions?.get(p.name);
      if (ext === undefined) {
        const known = [...(opts.extensions?.keys() ?? [])];
        throw new RuleFileError(`${where}: unknown value matcher '${p.name}' (${known.length > 0 ? `installed: ${known.join(', ')}` : 'none installed'})${lineNote(line)}`);
      }
      try {
        return ext(p.argument);
      } catch (err) {
        throw new RuleFileError(`${where}: ${p.name}: ${err instanceof Error ? err.message : String(err)}${lineNote(p.argument.line)}`);
      }
    }
  }
}
