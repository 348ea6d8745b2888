// A tiny declarative settings schema: each variable is declared once with its name, the upstream
// aliases it also answers to, its default and meaning; `readSettings` parses them all, reports every
// bad variable in one error, and warns when a seed name and an alias are both set.
import { RateLimitError } from '../errors.js';

export interface SettingDef<T> {
  /** Primary (seed) name. */
  name: string;
  /** Upstream names accepted too (seed name wins when both are set). */
  aliases?: readonly string[];
  /** Raw default as it would be written in the environment; undefined = no default. */
  default: string | undefined;
  /** Human text for the docs and error messages; includes the unit where there is one. */
  meaning: string;
  /**
   * Turns the raw text into the value, or throws an Error saying what was expected. A value that
   * upstream accepts but that our design bounds is not an error: the parser calls `ctx.clamp` and
   * returns the value it will use (the reader logs a warning naming the variable).
   */
  parse: (raw: string, ctx: ParseContext) => T;
}

/** Handed to every parser: how it reports an accepted value it had to replace. */
export interface ParseContext {
  /** Records that the given value is used as `used` instead, because `why`. */
  clamp(used: string | number, why: string): void;
}

/** For calling a parser outside a reader (tests, derived settings): clamps are ignored. */
export const IGNORE_CLAMPS: ParseContext = Object.freeze({ clamp: () => undefined });

export type Env = Readonly<Record<string, string | undefined>>;

/** The parsed values of a table of setting definitions, typed from the definitions. */
export type ValuesOf<Defs> = { readonly [K in keyof Defs]: Defs[K] extends SettingDef<infer T> ? T : never };

export interface ReadResult {
  warnings: string[];
}

export function def<T>(d: SettingDef<T>): SettingDef<T> {
  return d;
}

export class SettingsReader {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];
  constructor(private readonly env: Env) {}

  /** Which variable name supplied the value (for messages), or undefined when defaulted. */
  source(d: SettingDef<unknown>): string | undefined {
    if (this.env[d.name] !== undefined) return d.name;
    return d.aliases?.find((a) => this.env[a] !== undefined);
  }

  read<T>(d: SettingDef<T>): T {
    const primary = this.env[d.name];
    let raw = primary;
    let from = d.name;
    for (const alias of d.aliases ?? []) {
      const v = this.env[alias];
      if (v === undefined) continue;
      if (primary !== undefined) {
        if (v !== primary) this.warnings.push(`both ${d.name} and ${alias} are set; using ${d.name}`);
      } else if (raw === undefined) {
        raw = v;
        from = alias;
      }
    }
    if (raw === undefined) raw = d.default;
    if (raw === undefined) {
      // No default: parse of undefined is the declaration's business; hand it an empty string.
      raw = '';
    }
    const given = raw;
    const ctx: ParseContext = {
      clamp: (used, why) => this.warnings.push(`${from}=${JSON.stringify(given)}: ${why}; using ${String(used)}`),
    };
    try {
      return d.parse(raw, ctx);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      this.errors.push(`${from}=${JSON.stringify(raw)}: ${why}`);
      return undefined as T;
    }
  }

  /** Records a cross-field problem found after reading. */
  fail(message: string): void {
    this.errors.push(message);
  }

  finish(): ReadResult {
    if (this.errors.length > 0) {
      throw new RateLimitError(
        'settings_invalid',
        `invalid settings (${this.errors.length}):\n  ${this.errors.join('\n  ')}`,
      );
    }
    return { warnings: this.warnings };
  }
}
