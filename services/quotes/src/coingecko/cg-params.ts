import { queryValue, type RawQuery } from '../api/crypto-query.js';
import { badParam } from './cg-errors.js';

/**
 * Parameter parsing of the CoinGecko-compatible API, with CoinGecko's names and its 400 texts.
 * Every value is bounded: lists by MAX_LIST_ITEMS, text by MAX_TEXT, numbers by their ranges.
 */

/** Longest accepted text parameter (ids lists, search query), in characters. */
export const MAX_TEXT = 4096;
/** Most items read from a comma-separated list (ids, vs_currencies). */
export const MAX_LIST_ITEMS = 500;

/** The trimmed value of a parameter; undefined when absent or blank. */
export function text(q: RawQuery, name: string): string | undefined {
  const v = queryValue(q, name)?.trim();
  if (v === undefined || v === '') return undefined;
  if (v.length > MAX_TEXT) throw badParam(`${name} is too long (at most ${MAX_TEXT} characters)`);
  return v;
}

export function required(q: RawQuery, name: string): string {
  const v = text(q, name);
  if (v === undefined) throw badParam(`missing '${name}' parameter`);
  return v;
}

/** `a, b ,A` -> ['a', 'b'] (lower case, de-duplicated, at most MAX_LIST_ITEMS). */
export function list(q: RawQuery, name: string): string[] | undefined {
  const v = text(q, name);
  if (v === undefined) return undefined;
  const items = [...new Set(v.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== ''))];
  if (items.length > MAX_LIST_ITEMS) throw badParam(`${name} lists too many items (at most ${MAX_LIST_ITEMS})`);
  return items;
}

/** `true` / `false` (CoinGecko's booleans); absent gives `dflt`. */
export function bool(q: RawQuery, name: string, dflt: boolean): boolean {
  const v = text(q, name)?.toLowerCase();
  if (v === undefined) return dflt;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw badParam(`invalid '${name}' parameter: expected true or false`);
}

/** A whole number in [min, max]; absent gives `dflt`. */
export function int(q: RawQuery, name: string, dflt: number, min: number, max: number): number {
  const v = text(q, name);
  if (v === undefined) return dflt;
  if (!/^\d{1,9}$/.test(v)) throw badParam(`invalid '${name}' parameter: expected a whole number`);
  const n = Number(v);
  if (n < min || n > max) throw badParam(`invalid '${name}' parameter: expected ${min} to ${max}`);
  return n;
}

/** `precision`: undefined (our default rounding), 'full', or 0..18 decimal places. */
export type Precision = undefined | 'full' | number;

export function precision(q: RawQuery): Precision {
  const v = text(q, 'precision');
  if (v === undefined) return undefined;
  if (v === 'full') return 'full';
  if (/^\d{1,2}$/.test(v) && Number(v) <= 18) return Number(v);
  throw badParam("invalid 'precision' parameter: expected full or 0 to 18");
}

/**
 * A time for `from` / `to`: UNIX seconds (fractions allowed) or an ISO date (`YYYY-MM-DD`,
 * `YYYY-MM-DDTHH:MM`, UTC). Returns Unix seconds.
 */
export function instant(q: RawQuery, name: string): number {
  const v = required(q, name);
  if (/^\d{1,12}(\.\d{1,9})?$/.test(v)) return Math.floor(Number(v));
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?Z?$/.exec(v);
  if (m !== null) {
    const t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0));
    if (Number.isFinite(t)) return Math.floor(t / 1000);
  }
  throw badParam(`invalid '${name}' parameter: expected UNIX seconds or an ISO date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)`);
}
