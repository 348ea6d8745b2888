// `ratelimit-config-check -config_dir DIR [-merge_domain_configs]`: loads every rule file of a
// directory exactly as the service would and reports the first error (exit 1) or a summary (exit 0).
// Unlike upstream's tool it never crashes on YAML syntax errors: they are reported like any other.
// It also validates our algorithm extension (`algorithm`, `burst`), and refuses a rule whose
// algorithm the store of -backend_type (default: $BACKEND_TYPE, else redis, as the service) cannot run.
// It reads the service's settings the way the service does: from the environment, and from the
// file of `-env_file` (the quick start's examples/quickstart.env) under it, so the same file gives
// the same rule directory, store and merge/dotfile options (issue 27: it said `backend: redis` for
// the memory quick start). -config_dir, when given, wins over RUNTIME_ROOT and friends.
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { describeAlgorithms, isRateLimitError, loadRuleSet, readRuleFiles, unsupportedAlgorithmError, type AlgorithmSupport } from '@rls/engine';
import { BACKEND_ALGORITHMS } from '../compose-counter-store.js';
import { IGNORE_CLAMPS } from '@rls/settings';
import { ruleDirectoryOf } from '../provider/file-provider.js';
import { SETTING_DEFS } from '../settings.js';

export interface CheckIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const USAGE = `Usage of ratelimit-config-check:
  -config_dir string
        path to directory containing rate limit configs
        (default: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY when RUNTIME_ROOT is set)
  -merge_domain_configs
        whether to merge configurations, referencing the same domain (default: $MERGE_DOMAIN_CONFIG)
  -ignore_dotfiles
        skip files and directories whose name starts with a dot (default: $RUNTIME_IGNOREDOTFILES)
  -backend_type string
        counter store the rules will run on: redis, mcstore (memcache) or memory
        (default: $BACKEND_TYPE, else redis); rules whose algorithm it cannot run are refused
  -env_file string
        read the settings above from this file too (KEY=VALUE lines, as node --env-file);
        variables already set in the environment win, as with node --env-file
        e.g. -env_file examples/quickstart.env checks the quick start as npm start runs it`;

/** Flags as given; undefined = take the value from the settings (environment and -env_file). */
interface Flags {
  configDir: string | undefined;
  merge: boolean | undefined;
  ignoreDotfiles: boolean | undefined;
  backendType: string | undefined;
  envFile: string | undefined;
}

const VALUE_FLAGS = new Set(['config_dir', 'backend_type', 'env_file']);

function parseFlags(argv: readonly string[]): Flags | string {
  const flags: Flags = { configDir: undefined, merge: undefined, ignoreDotfiles: undefined, backendType: undefined, envFile: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const m = /^--?([a-z_-]+)(?:=(.*))?$/.exec(arg);
    if (m === null) return `unexpected argument ${arg}`;
    // `--env-file` as node spells it, `-env_file` as Go flags do: the same flag.
    const name = (m[1] ?? '').replaceAll('-', '_');
    let value = m[2];
    if (name === 'h' || name === 'help') return '';
    if (name === 'merge_domain_configs' || name === 'ignore_dotfiles') {
      const v = value === undefined || value === 'true' || value === '1';
      if (value !== undefined && !['true', 'false', '1', '0'].includes(value)) return `invalid boolean value "${value}" for -${name}`;
      if (name === 'merge_domain_configs') flags.merge = v;
      else flags.ignoreDotfiles = v;
      continue;
    }
    if (!VALUE_FLAGS.has(name)) return `flag provided but not defined: -${name}`;
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) return `flag needs an argument: -${name}`;
    }
    if (name === 'backend_type') flags.backendType = value;
    else if (name === 'env_file') flags.envFile = value;
    else flags.configDir = value;
  }
  return flags;
}

/** The environment the service would see: the file's variables under the real environment. */
function settingsEnv(flags: Flags, env: Readonly<Record<string, string | undefined>>): Readonly<Record<string, string | undefined>> | string {
  if (flags.envFile === undefined) return env;
  let text: string;
  try {
    text = readFileSync(flags.envFile, 'utf8');
  } catch (err) {
    return `cannot read -env_file ${flags.envFile}: ${err instanceof Error ? err.message : String(err)}`;
  }
  return { ...parseEnv(text), ...env };
}

/** A boolean setting from the environment, parsed as the service parses it. */
function boolSetting(def: typeof SETTING_DEFS.mergeDomainConfig, env: Readonly<Record<string, string | undefined>>): boolean | string {
  const raw = env[def.name] ?? def.default ?? '';
  try {
    return def.parse(raw, IGNORE_CLAMPS);
  } catch (err) {
    return `invalid ${def.name}="${raw}": ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** -config_dir, else the service's rule directory when the settings name one. */
function configDirOf(flags: Flags, env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (flags.configDir !== undefined && flags.configDir !== '') return flags.configDir;
  const root = env[SETTING_DEFS.runtimeRoot.name];
  if (root === undefined) return undefined;
  return ruleDirectoryOf({
    runtimeRoot: root,
    runtimeSubdirectory: env[SETTING_DEFS.runtimeSubdirectory.name] ?? SETTING_DEFS.runtimeSubdirectory.default ?? '',
    runtimeAppDirectory: env[SETTING_DEFS.runtimeAppDirectory.name] ?? SETTING_DEFS.runtimeAppDirectory.default ?? 'config',
  });
}

export function main(
  argv: readonly string[],
  io: CheckIo = { out: (l) => console.log(l), err: (l) => console.error(l) },
  env: Readonly<Record<string, string | undefined>> = process.env,
): number {
  const flags = parseFlags(argv);
  if (typeof flags === 'string') {
    if (flags !== '') io.err(flags);
    io.err(USAGE);
    return 2;
  }
  const settingsOrError = settingsEnv(flags, env);
  if (typeof settingsOrError === 'string') {
    io.err(settingsOrError);
    return 2;
  }
  const settings = settingsOrError;
  const configDir = configDirOf(flags, settings);
  if (configDir === undefined) {
    io.err('missing -config_dir (or RUNTIME_ROOT in the environment or in -env_file)');
    io.err(USAGE);
    return 2;
  }
  const merge = flags.merge ?? boolSetting(SETTING_DEFS.mergeDomainConfig, settings);
  if (typeof merge === 'string') {
    io.err(merge);
    return 2;
  }
  const ignoreDotfiles = flags.ignoreDotfiles ?? boolSetting(SETTING_DEFS.runtimeIgnoreDotfiles, settings);
  if (typeof ignoreDotfiles === 'string') {
    io.err(ignoreDotfiles);
    return 2;
  }
  const rawBackend = flags.backendType ?? settings[SETTING_DEFS.backendType.name] ?? '';
  let backend: AlgorithmSupport;
  try {
    backend = BACKEND_ALGORITHMS[SETTING_DEFS.backendType.parse(rawBackend, IGNORE_CLAMPS)];
  } catch (err) {
    io.err(`invalid backend type "${rawBackend}" (${flags.backendType !== undefined ? '-backend_type' : SETTING_DEFS.backendType.name}): ${err instanceof Error ? err.message : String(err)}`);
    io.err(USAGE);
    return 2;
  }
  io.out('checking rate limit configs...');
  if (flags.envFile !== undefined) io.out(`settings: the environment, then ${flags.envFile}`);
  io.out(`loading config directory: ${configDir}`);
  try {
    const sources = readRuleFiles(configDir, { ignoreDotfiles });
    for (const s of sources) io.out(`opening config file: ${s.name}`);
    const rules = loadRuleSet(sources, { mergeDomainConfig: merge });
    const refused = unsupportedAlgorithmError(rules, backend);
    if (refused !== undefined) throw refused;
    io.out('all rate limit configs ok');
    io.out(`backend: ${backend.kind} (runs ${describeAlgorithms(backend)})`);
    if (rawBackend === '') io.out(`(no BACKEND_TYPE, -backend_type or -env_file: checked for the service's default store; the quick start runs on memory: -env_file examples/quickstart.env)`);
    const summary = rules.summary();
    const limited = summary.reduce((n, d) => n + d.descriptors.filter((r) => r.limit !== undefined).length, 0);
    io.out(`${sources.length} file(s), ${summary.length} domain(s), ${limited} rule(s) with a limit`);
    for (const d of summary) {
      for (const r of d.descriptors) {
        if (r.limit === undefined) continue;
        const algorithm = r.algorithm === 'fixed_window' ? '' : ` algorithm=${r.algorithm}${r.algorithm === 'token_bucket' ? ` burst=${r.burst}` : ''}`;
        io.out(`  ${r.key}: ${r.limit}${r.name ? ` name=${r.name}` : ''}${r.shadowMode ? ' shadow_mode' : ''}${algorithm}`);
      }
    }
    // RLQS quota rules (quota_buckets / default_quota), validated by the same load.
    const quotaDomains = rules.quotaRules.domains();
    if (quotaDomains.length > 0) {
      const quotaRules = quotaDomains.map((d) => ({ domain: d, rules: rules.quotaRules.summary(d) }));
      const entries = quotaRules.reduce((n, d) => n + d.rules.filter((r) => !r.isDefault).length, 0);
      io.out(`RLQS quota rules: ${entries} quota_buckets entr${entries === 1 ? 'y' : 'ies'} in ${quotaDomains.length} domain(s)`);
      for (const d of quotaRules) for (const r of d.rules) io.out(`  ${d.domain} quota ${r.isDefault ? 'default' : r.name}: ${r.quota}`);
    }
    return 0;
  } catch (err) {
    io.err(`error loading rate limit configs: ${isRateLimitError(err) || err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}
