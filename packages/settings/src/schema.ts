// A small declarative settings schema shared by both services: each variable is declared once with
// its name, the aliases it also answers to, its default, unit and meaning; a reader parses a whole
// table, collects every bad variable into one error, and warns when a primary name and an alias
// are both set or when an accepted value had to be clamped. The values' types are inferred from
// the declarations (`ValuesOf`), so a service never writes its settings type by hand.

export interface SettingDef<T> {
  /** Primary name. */
  name: string;
  /** Other names accepted too (the primary name wins when both are set, with a warning). */
  aliases?: readonly string[];
  /** Raw default as it would be written in the environment; undefined = no default. */
  default: string | undefined;
  /** Unit of the value (`ms`, `seconds`, `bytes`, ...), shown in the docs table when a table declares any. */
  unit?: string;
  /** Human text for the docs and error messages. */
  meaning: string;
  /**
   * Turns the raw text into the value, or throws an Error saying what was expected. A value the
   * service accepts but bounds is not an error: the parser calls `ctx.clamp` and returns the
   * value it will use (the reader records a warning naming the variable). Without a value and a
   * default the parser is handed an empty string.
   */
  parse: (raw: string, ctx: ParseContext) => T;
  /** How the raw text is shown in error messages (hides passwords in URLs); verbatim when absent. */
  redact?: (raw: string) => string;
}

/**
 * A family of variables named after a key (`MARKET_EXCHANGE_URL_<ID>`): every variable whose name
 * matches `pattern` is parsed, and the value is a map from the key (the pattern's first capture
 * group, through `key`) to the parsed value.
 */
export interface SettingFamilyDef<T> {
  /** Name as documented, with the variable part in angle brackets. */
  name: string;
  /** Matches a whole variable name; capture group 1 is the key. */
  pattern: RegExp;
  /** Turns the captured text into the map key; verbatim when absent. */
  key?: (captured: string) => string;
  /** Families have no default: an absent variable is an absent key. */
  default: undefined;
  unit?: string;
  meaning: string;
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

/** Any entry of a settings table. */
export type AnySettingDef = SettingDef<unknown> | SettingFamilyDef<unknown>;

/** The parsed values of a table of setting definitions, typed from the definitions. */
export type ValuesOf<Defs> = {
  readonly [K in keyof Defs]: Defs[K] extends SettingFamilyDef<infer T> ? Readonly<Record<string, T>> : Defs[K] extends SettingDef<infer T> ? T : never;
};

export interface ReadResult {
  warnings: string[];
}

export function def<T>(d: SettingDef<T>): SettingDef<T> {
  return d;
}

export function family<T>(d: Omit<SettingFamilyDef<T>, 'default'>): SettingFamilyDef<T> {
  return { ...d, default: undefined };
}

function isFamily(d: AnySettingDef): d is SettingFamilyDef<unknown> {
  return 'pattern' in d;
}

/** Wraps a parser so that an empty value (unset and no default) means undefined. */
export function optional<T>(parse: (raw: string, ctx: ParseContext) => T): (raw: string, ctx: ParseContext) => T | undefined {
  return (raw, ctx) => (raw === '' ? undefined : parse(raw, ctx));
}

/** The one message listing every bad variable. */
export function formatSettingsProblems(problems: readonly string[]): string {
  return `invalid settings (${problems.length}):\n  ${problems.join('\n  ')}`;
}

/** Thrown by `SettingsReader.finish` (unless the service supplies its own error) with every problem found. */
export class SettingsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(formatSettingsProblems(problems));
    this.name = 'SettingsError';
  }
}

export interface ReaderOptions {
  /** An empty variable counts as unset (its default applies); otherwise the empty text is parsed. */
  blankIsUnset?: boolean;
  /** The error `finish` throws; a SettingsError when absent. A service maps it to its own error catalogue here. */
  invalid?: (problems: readonly string[]) => Error;
}

export class SettingsReader {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];
  constructor(
    private readonly env: Env,
    private readonly options: ReaderOptions = {},
  ) {}

  private get(name: string): string | undefined {
    const v = this.env[name];
    return this.options.blankIsUnset === true && v === '' ? undefined : v;
  }

  /** Which variable name supplied the value (for messages), or undefined when defaulted. */
  source(d: SettingDef<unknown>): string | undefined {
    if (this.get(d.name) !== undefined) return d.name;
    return d.aliases?.find((a) => this.get(a) !== undefined);
  }

  read<T>(d: SettingDef<T>): T {
    const primary = this.get(d.name);
    let raw = primary;
    let from = d.name;
    for (const alias of d.aliases ?? []) {
      const v = this.get(alias);
      if (v === undefined) continue;
      if (primary !== undefined) {
        if (v !== primary) this.warnings.push(`both ${d.name} and ${alias} are set; using ${d.name}`);
      } else if (raw === undefined) {
        raw = v;
        from = alias;
      }
    }
    return this.parseOne(d, from, raw ?? d.default ?? '');
  }

  /** Every variable of a family, keyed as the family says. */
  readFamily<T>(f: SettingFamilyDef<T>): Readonly<Record<string, T>> {
    const out: Record<string, T> = {};
    for (const name of Object.keys(this.env).sort()) {
      const m = f.pattern.exec(name);
      const raw = this.get(name);
      if (m === null || raw === undefined) continue;
      const captured = m[1] ?? '';
      const value = this.parseOne(f, name, raw);
      if (value !== undefined) out[f.key === undefined ? captured : f.key(captured)] = value;
    }
    return out;
  }

  /** Reads a whole table; the result is typed from the table. */
  readAll<Defs extends Readonly<Record<string, AnySettingDef>>>(defs: Defs): ValuesOf<Defs> {
    const out: Record<string, unknown> = {};
    for (const [key, d] of Object.entries(defs)) out[key] = isFamily(d) ? this.readFamily(d) : this.read(d);
    // The loop above fills exactly the keys of Defs with the values their parsers return.
    return out as ValuesOf<Defs>;
  }

  private parseOne<T>(d: SettingDef<T> | SettingFamilyDef<T>, from: string, raw: string): T {
    const shown = 'redact' in d && d.redact !== undefined ? d.redact(raw) : raw;
    const ctx: ParseContext = {
      clamp: (used, why) => this.warnings.push(`${from}=${JSON.stringify(shown)}: ${why}; using ${String(used)}`),
    };
    try {
      return d.parse(raw, ctx);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      this.errors.push(`${from}=${JSON.stringify(shown)}: ${why}`);
      // The value is never used: finish() throws because of the error just recorded.
      return undefined as T;
    }
  }

  /** Records a cross-field problem found after reading. */
  fail(message: string): void {
    this.errors.push(message);
  }

  finish(): ReadResult {
    if (this.errors.length > 0) throw this.options.invalid?.(this.errors) ?? new SettingsError(this.errors);
    return { warnings: this.warnings };
  }
}
