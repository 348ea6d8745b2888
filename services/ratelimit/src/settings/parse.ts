// Parsers for the value syntaxes upstream's settings use (Go's strconv.ParseBool, Go duration
// strings, `k1:v1,k2:v2` maps). Each returns a value or throws an Error whose message says what
// was expected; the schema collects those messages for every bad variable at once.

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

/** Go duration syntax (`300ms`, `1.5h`, `1h30m`, `150us`); a bare `0` is allowed. Returns milliseconds. */
export function parseDurationMs(raw: string): number {
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
  if (sign < 0) throw new Error('duration must not be negative');
  return total;
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
