// Reads a rule directory into named sources (upstream's FILE provider, minus goruntime's random order):
// every regular file below `dir`, symlinked files followed, symlinked directories not descended.
// Entries whose name starts with `..` are always skipped: that is Kubernetes ConfigMap bookkeeping
// (`..data` -> `..<timestamp>/`), which would otherwise load every file twice (upstream's
// duplicate-domain trap upstream falls into), whatever RUNTIME_IGNOREDOTFILES says.
import { readdirSync, readFileSync, statSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../errors.js';
import type { RuleSource } from './rule-set.js';

export interface ReadRuleFilesOptions {
  /** RUNTIME_IGNOREDOTFILES: skip files and directories whose name starts with `.`. */
  readonly ignoreDotfiles: boolean;
}

/** Sources named by their path relative to `dir` (with `/`), sorted by name so loads are deterministic. */
export function readRuleFiles(dir: string, opts: ReadRuleFilesOptions): RuleSource[] {
  try {
    if (!statSync(dir).isDirectory()) throw new ConfigError(`${dir}: rule directory is not a directory`);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${dir}: cannot read rule directory: ${err instanceof Error ? err.message : String(err)}`);
  }
  const out: RuleSource[] = [];
  walk(dir, '', opts, out);
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `..data`, `..2024_01_01_00_00_00.123`, `..data_tmp`: written by the kubelet, never rule files. */
export function isConfigMapBookkeeping(name: string): boolean {
  return name.startsWith('..');
}

function walk(abs: string, rel: string, opts: ReadRuleFilesOptions, out: RuleSource[]): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(abs, { withFileTypes: true });
  } catch (err) {
    throw new ConfigError(`${abs}: cannot read rule directory: ${err instanceof Error ? err.message : String(err)}`);
  }
  for (const e of entries) {
    if (isConfigMapBookkeeping(e.name) || (opts.ignoreDotfiles && e.name.startsWith('.'))) continue;
    const childAbs = join(abs, e.name);
    const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) {
      walk(childAbs, childRel, opts, out);
    } else if (e.isFile()) {
      out.push({ name: childRel, content: readFileSync(childAbs, 'utf8') });
    } else if (e.isSymbolicLink()) {
      // A link to a file counts as that file; a link to a directory (a Kubernetes `..data`) or a
      // dangling link is skipped.
      let target;
      try {
        target = statSync(childAbs);
      } catch {
        continue;
      }
      if (target.isFile()) out.push({ name: childRel, content: readFileSync(childAbs, 'utf8') });
    }
  }
}
