// DogStatsD mogrifiers: rewrite a stat name into a shorter name plus tags, e.g.
// `ratelimit.service.rate_limit.mongo_cps.database_users.within_limit` →
// `ratelimit.service.rate_limit.within_limit` with `domain:mongo_cps,descriptor:database_users`.
// Defined by environment variables whose names are only known once the list is read, so they are
// read here rather than in the static settings schema; every bad variable is reported at once.
import type { TagPair } from './stat-tags.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface Mogrifier {
  /** The name used in the list variable (for messages). */
  readonly id: string;
  readonly pattern: RegExp;
  /** New stat name; `$0…$n` refer to the pattern's groups. */
  readonly nameTemplate: string;
  /** Extra tags; values may use `$0…$n`. */
  readonly tags: readonly TagPair[];
}

/** List variables, seed spelling first (it wins when several are set). */
const LIST_VARS = ['TAGGED_STATS_MOGRIFIERS', 'USE_TAGGED_STATS_MOGRIFIERS', 'USE_DOG_STATSD_MOGRIFIERS'] as const;
/** Per-mogrifier prefixes: seed singular, seed plural, upstream code, upstream README. */
const ITEM_PREFIXES = ['TAGGED_STATS_MOGRIFIER_', 'TAGGED_STATS_MOGRIFIERS_', 'DOG_STATSD_MOGRIFIER_', 'DOG_STATSD_MOGRIFIERS_'] as const;

export interface ReadMogrifiersResult {
  mogrifiers: Mogrifier[];
  /** One line per bad variable; non-empty ⇒ start-up must fail. */
  errors: string[];
  warnings: string[];
}

function readItem(env: Env, id: string, field: 'PATTERN' | 'NAME' | 'TAGS'): { name: string; value: string } | undefined {
  for (const prefix of ITEM_PREFIXES) {
    const name = `${prefix}${id}_${field}`;
    const value = env[name];
    if (value !== undefined) return { name, value };
  }
  return undefined;
}

/** Go's RE2 spells named groups `(?P<name>…)`; JavaScript wants `(?<name>…)`. */
function compilePattern(src: string): RegExp {
  return new RegExp(src.replace(/\(\?P</g, '(?<'));
}

export function readMogrifiers(env: Env): ReadMogrifiersResult {
  const errors: string[] = [];
  const warnings: string[] = [];
  let listVar: string | undefined;
  let listRaw: string | undefined;
  for (const v of LIST_VARS) {
    const raw = env[v];
    if (raw === undefined) continue;
    if (listRaw === undefined) {
      listVar = v;
      listRaw = raw;
    } else if (raw !== listRaw) {
      warnings.push(`both ${listVar ?? ''} and ${v} are set; using ${listVar ?? ''}`);
    }
  }
  const ids = (listRaw ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  const mogrifiers: Mogrifier[] = [];
  for (const id of ids) {
    const pattern = readItem(env, id, 'PATTERN');
    const name = readItem(env, id, 'NAME');
    const tagsVar = readItem(env, id, 'TAGS');
    let ok = true;
    let regex: RegExp | undefined;
    if (pattern === undefined || pattern.value === '') {
      errors.push(`mogrifier ${id}: TAGGED_STATS_MOGRIFIER_${id}_PATTERN is missing`);
      ok = false;
    } else {
      try {
        regex = compilePattern(pattern.value);
      } catch (err) {
        errors.push(`${pattern.name}=${JSON.stringify(pattern.value)}: invalid regular expression (${err instanceof Error ? err.message : String(err)})`);
        ok = false;
      }
    }
    if (name === undefined || name.value === '') {
      errors.push(`mogrifier ${id}: TAGGED_STATS_MOGRIFIER_${id}_NAME is missing`);
      ok = false;
    }
    const tags: TagPair[] = [];
    if (tagsVar !== undefined && tagsVar.value.trim() !== '') {
      for (const item of tagsVar.value.split(',')) {
        const i = item.indexOf(':');
        const k = i < 0 ? item.trim() : item.slice(0, i).trim();
        const v = i < 0 ? '' : item.slice(i + 1).trim();
        if (k === '' || v === '') {
          errors.push(`${tagsVar.name}=${JSON.stringify(tagsVar.value)}: tag '${item}' needs a non-empty key and value (key:value)`);
          ok = false;
          continue;
        }
        tags.push([k, v]);
      }
    }
    if (ok && regex !== undefined && name !== undefined) mogrifiers.push({ id, pattern: regex, nameTemplate: name.value, tags });
  }
  return { mogrifiers, errors, warnings };
}

/** `$n` → group n (unmatched optional group ⇒ empty); an index past the groups stays literal. */
export function expandGroups(template: string, groups: RegExpExecArray): string {
  return template.replace(/\$(\d+)/g, (whole, digits: string) => {
    const n = Number(digits);
    if (n >= groups.length) return whole;
    return groups[n] ?? '';
  });
}

export interface MogrifiedName {
  name: string;
  tags: TagPair[];
}

/** Applies the first mogrifier whose pattern matches; undefined when none does. */
export function mogrify(name: string, mogrifiers: readonly Mogrifier[]): MogrifiedName | undefined {
  for (const m of mogrifiers) {
    const groups = m.pattern.exec(name);
    if (groups === null) continue;
    return {
      name: expandGroups(m.nameTemplate, groups),
      tags: m.tags.map(([k, v]) => [k, expandGroups(v, groups)] as const),
    };
  }
  return undefined;
}
