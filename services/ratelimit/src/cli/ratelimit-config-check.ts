// `ratelimit-config-check -config_dir DIR [-merge_domain_configs]`: loads every rule file of a
// directory exactly as the service would and reports the first error (exit 1) or a summary (exit 0).
// Unlike upstream's tool it never crashes on YAML syntax errors: they are reported like any other.
// It also validates our algorithm extension (`algorithm`, `burst`), and refuses a rule whose
// algorithm the store of -backend_type (default: $BACKEND_TYPE, else redis, as the service) cannot run.
import { describeAlgorithms, isRateLimitError, loadRuleSet, readRuleFiles, unsupportedAlgorithmError, type AlgorithmSupport } from '@rls/engine';
import { BACKEND_ALGORITHMS } from '../compose-counter-store.js';
import { IGNORE_CLAMPS } from '@rls/settings';
import { SETTING_DEFS } from '../settings.js';

export interface CheckIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const USAGE = `Usage of ratelimit-config-check:
  -config_dir string
        path to directory containing rate limit configs
  -merge_domain_configs
        whether to merge configurations, referencing the same domain
  -ignore_dotfiles
        skip files and directories whose name starts with a dot
  -backend_type string
        counter store the rules will run on: redis, mcstore (memcache) or memory
        (default: $BACKEND_TYPE, else redis); rules whose algorithm it cannot run are refused`;


interface Flags {
  configDir: string;
  merge: boolean;
  ignoreDotfiles: boolean;
  /** Raw -backend_type, or undefined to take BACKEND_TYPE from the environment. */
  backendType: string | undefined;
}

function parseFlags(argv: readonly string[]): Flags | string {
  const flags: Flags = { configDir: '', merge: false, ignoreDotfiles: false, backendType: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const m = /^--?([a-z_]+)(?:=(.*))?$/.exec(arg);
    if (m === null) return `unexpected argument ${arg}`;
    const name = m[1] ?? '';
    let value = m[2];
    if (name === 'h' || name === 'help') return '';
    if (name === 'merge_domain_configs' || name === 'ignore_dotfiles') {
      const v = value === undefined || value === 'true' || value === '1';
      if (value !== undefined && !['true', 'false', '1', '0'].includes(value)) return `invalid boolean value "${value}" for -${name}`;
      if (name === 'merge_domain_configs') flags.merge = v;
      else flags.ignoreDotfiles = v;
      continue;
    }
    if (name !== 'config_dir' && name !== 'backend_type') return `flag provided but not defined: -${name}`;
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) return `flag needs an argument: -${name}`;
    }
    if (name === 'backend_type') flags.backendType = value;
    else flags.configDir = value;
  }
  if (flags.configDir === '') return 'missing -config_dir';
  return flags;
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
  const rawBackend = flags.backendType ?? env[SETTING_DEFS.backendType.name] ?? '';
  let backend: AlgorithmSupport;
  try {
    backend = BACKEND_ALGORITHMS[SETTING_DEFS.backendType.parse(rawBackend, IGNORE_CLAMPS)];
  } catch (err) {
    io.err(`invalid backend type "${rawBackend}" (${flags.backendType !== undefined ? '-backend_type' : SETTING_DEFS.backendType.name}): ${err instanceof Error ? err.message : String(err)}`);
    io.err(USAGE);
    return 2;
  }
  io.out('checking rate limit configs...');
  io.out(`loading config directory: ${flags.configDir}`);
  try {
    const sources = readRuleFiles(flags.configDir, { ignoreDotfiles: flags.ignoreDotfiles });
    for (const s of sources) io.out(`opening config file: ${s.name}`);
    const rules = loadRuleSet(sources, { mergeDomainConfig: flags.merge });
    const refused = unsupportedAlgorithmError(rules, backend);
    if (refused !== undefined) throw refused;
    io.out('all rate limit configs ok');
    io.out(`backend: ${backend.kind} (runs ${describeAlgorithms(backend)})`);
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
    return 0;
  } catch (err) {
    io.err(`error loading rate limit configs: ${isRateLimitError(err) || err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}
