// Parsers for the value syntaxes settings use: Go's (strconv.ParseBool, ParseInt, ParseFloat,
// time.ParseDuration, the `k1:v1,k2:v2` maps of envconfig) for the rate limit service, which must
// accept what the upstream Go service accepts, and plain ones (integers and numbers in a range,
// lists, enums, http(s) URLs, second-based durations) for new settings. Each returns a value or
// throws an Error whose message says what was expected; the reader collects those messages for
// every bad variable at once.

import type { ParseContext } from './schema.js';

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

export function parseBool(raw: string): boolean {
  if (TRUE.has(raw)) return true;
  if (FALSE.has(raw)) return false;
  throw new Error('expected a boolean (true/false, 1/0, t/f)');
}

export function parseInteger(raw: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^[+-]?\d+$/.test(raw.trim())) throw new Error('expected an integer');
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new Error(`expected an integer between ${min} and ${max}`);
  return n;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * An integer in Go's `strconv.ParseInt(s, 0, 64)` syntax, the one upstream's envconfig uses: sign,
 * `0x`/`0o`/`0b` prefixes, a leading `0` for octal, `_` between digits. Returns a BigInt (int64
 * range) so values beyond 2^53 can still be compared and clamped exactly.
 */
export function parseGoInt(raw: string): bigint {
  const s = raw.trim();
  const m = /^([+-]?)(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)$/.exec(s);
  const body = m?.[2];
  // Go's rule: an underscore only between digits (a base prefix counts as one), never doubled or last.
  if (m === null || body === undefined || body.includes('__') || body.endsWith('_')) throw new Error('expected an integer');
  const digits = body.replace(/_/g, '');
  let v: bigint;
  if (/^0[xXoObB]/.test(digits)) {
    if (digits.length === 2) throw new Error('expected an integer');
    v = BigInt(digits.toLowerCase());
  } else if (digits.length > 1) {
    v = digits.startsWith('0') ? BigInt(`0o${digits.slice(1)}`) : BigInt(digits);
  } else {
    v = BigInt(digits);
  }
  if (m[1] === '-') v = -v;
  if (v < INT64_MIN || v > INT64_MAX) throw new Error('value out of range for a 64-bit integer');
  return v;
}

/** A TCP/UDP port in Go integer syntax (0–65535; upstream's listeners and dialers fail outside it). */
export function parseGoPort(raw: string): number {
  const v = parseGoInt(raw);
  if (v < 0n || v > 65535n) throw new Error('expected a port between 0 and 65535');
  return Number(v);
}

/**
 * A Go-syntax integer that upstream accepts whatever its value; outside [min, max] (what our
 * design supports) it is clamped to the nearest bound and reported through `ctx`.
 */
export function clampedInt(raw: string, ctx: ParseContext, min: number, max: number, why = `outside the supported range ${min}..${max}`): number {
  const v = parseGoInt(raw);
  if (v < BigInt(min)) {
    ctx.clamp(min, why);
    return min;
  }
  if (v > BigInt(max)) {
    ctx.clamp(max, why);
    return max;
  }
  return Number(v);
}

/**
 * A float in Go's `strconv.ParseFloat` syntax (decimal with exponent, `inf`/`infinity`/`nan` in
 * any case, hexadecimal `0x1p-2`, `_` between digits).
 */
export function parseGoFloat(raw: string): number {
  const s = raw.trim();
  const lower = s.toLowerCase();
  const sign = lower.startsWith('-') ? -1 : 1;
  const unsigned = lower.replace(/^[+-]/, '');
  if (unsigned === 'inf' || unsigned === 'infinity') return sign * Number.POSITIVE_INFINITY;
  if (unsigned === 'nan') return Number.NaN;
  if (/(^|[^0-9a-f])_|_($|[^0-9a-f])/.test(unsigned)) throw new Error('expected a number');
  const t = unsigned.replace(/_/g, '');
  const hex = /^0x([0-9a-f]*)(?:\.([0-9a-f]*))?p([+-]?\d+)$/.exec(t);
  if (hex !== null) {
    const int = hex[1] ?? '';
    const frac = hex[2] ?? '';
    if (int === '' && frac === '') throw new Error('expected a number');
    const mantissa = Number.parseInt(int + frac || '0', 16) / 16 ** frac.length;
    return sign * mantissa * 2 ** Number(hex[3]);
  }
  if (!/^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) throw new Error('expected a number');
  return sign * Number(t);
}

/** A Go-syntax float clamped to [min, max] (NaN: `nanValue`), reported through `ctx`. */
export function clampedFloat(raw: string, ctx: ParseContext, min: number, max: number, nanValue: number): number {
  const v = parseGoFloat(raw);
  if (Number.isNaN(v)) {
    ctx.clamp(nanValue, 'not a number');
    return nanValue;
  }
  if (v < min || v > max) {
    const used = v < min ? min : max;
    ctx.clamp(used, `outside the supported range ${min}..${max}`);
    return used;
  }
  return v;
}

export function parseFloatIn(raw: string, min: number, max: number): number {
  const s = raw.trim();
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) throw new Error('expected a number');
  const n = Number(s);
  if (n < min || n > max) throw new Error(`expected a number between ${min} and ${max}`);
  return n;
}

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go duration syntax (`300ms`, `1.5h`, `1h30m`, `150us`); a bare `0` is allowed; negative is an error. Returns milliseconds. */
export function parseDurationMs(raw: string): number {
  const ms = parseSignedDurationMs(raw);
  if (ms < 0) throw new Error('duration must not be negative');
  return ms;
}

/** Go's `time.ParseDuration` in full, negative values included. Returns milliseconds. */
export function parseSignedDurationMs(raw: string): number {
  const s = raw.trim();
  if (s === '0' || s === '+0' || s === '-0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s.startsWith('-') ? -1 : 1;
    pos = 1;
  }
  re.lastIndex = pos;
  let matched = false;
  while (re.lastIndex < s.length) {
    const m = re.exec(s);
    if (m === null) throw new Error('expected a duration such as 10s, 500ms, 1h30m or 150us');
    const unit = DURATION_UNITS[m[2] ?? ''];
    if (unit === undefined) throw new Error('unknown duration unit');
    total += Number(m[1]) * unit;
    matched = true;
  }
  if (!matched) throw new Error('expected a duration such as 10s, 500ms, 1h30m or 150us');
  return sign * total;
}

/** A Go duration where upstream accepts a negative value but it means nothing more than 0: clamped to 0. */
export function nonNegativeDurationMs(raw: string, ctx: ParseContext): number {
  const ms = parseSignedDurationMs(raw);
  if (ms < 0) {
    ctx.clamp(0, 'negative duration');
    return 0;
  }
  return ms;
}

/**
 * A Go duration our design needs above zero (a timeout, a retry interval) where upstream also
 * accepts 0 or less (e.g. "no timeout"): those use `fallbackMs` (the setting's default) instead.
 */
export function positiveDurationMs(raw: string, ctx: ParseContext, fallbackMs: number, why = 'must be greater than zero here (no unbounded waits)'): number {
  const ms = parseSignedDurationMs(raw);
  if (ms <= 0) {
    ctx.clamp(formatMs(fallbackMs), why);
    return fallbackMs;
  }
  return ms;
}

/** `1500` → `1.5s`, `250` → `250ms` (for warnings). */
function formatMs(ms: number): string {
  return ms >= 1000 && ms % 1 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** `k1:v1,k2:v2` (split at the first ':' of each item); empty string ⇒ empty map. */
export function parseMap(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw.trim() === '') return out;
  for (const item of raw.split(',')) {
    const i = item.indexOf(':');
    if (i <= 0) throw new Error(`expected key:value pairs separated by commas, got '${item}'`);
    out[item.slice(0, i).trim()] = item.slice(i + 1).trim();
  }
  return out;
}

export function parseList(raw: string): string[] {
  return raw
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
}

export function parseEnum<T extends string>(raw: string, allowed: readonly T[], caseInsensitive = true): T {
  const found = allowed.find((a) => (caseInsensitive ? a.toLowerCase() === raw.trim().toLowerCase() : a === raw.trim()));
  if (found === undefined) throw new Error(`expected one of ${allowed.join(', ')}`);
  return found;
}

/** Exactly `true` or `false` (settings of our own design, where Go's other spellings were never accepted). */
export function parseTrueFalse(raw: string): boolean {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new Error('expected true or false');
}

/** An http(s) URL; trailing slashes are dropped so paths can be appended. */
export function parseHttpUrl(raw: string): string {
  if (!/^https?:\/\/[^\s]+$/.test(raw)) throw new Error('expected an http(s) URL');
  return raw.replace(/\/+$/, '');
}

/** A ws(s) URL; trailing slashes are dropped. */
export function parseWsUrl(raw: string): string {
  if (!/^wss?:\/\/[^\s]+$/.test(raw)) throw new Error('expected a ws(s) URL');
  return raw.replace(/\/+$/, '');
}

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds from `90`, `90s`, `15m`, `1h` or `4d` (a bare number is seconds); undefined when malformed. */
export function secondsFromDuration(raw: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([smhd]?)$/.exec(raw.trim());
  if (m === null) return undefined;
  return Number(m[1]) * (UNIT_SECONDS[m[2] === '' ? 's' : (m[2] ?? 's')] ?? 1);
}

/** A duration in seconds (`90`, `15m`, `4d`) within [min, max] seconds. */
export function parseSecondsIn(raw: string, min: number, max: number): number {
  const n = secondsFromDuration(raw);
  if (n === undefined || n < min || n > max) throw new Error(`expected a duration (seconds, or with s/m/h/d) from ${min} s to ${max} s`);
  return n;
}
