// The time-unit vocabulary every floor above uses (rules, limiter, quotas, service): unit names as
// written in rule files (case-insensitive) and as printed by /rlconfig, and each unit's window length.
// It stands on the ground floor beside domain.ts, so config/ and limiter/ need not import each other.
import { Unit, type UnitNumber } from './domain.js';

const BY_NAME = new Map<string, UnitNumber>(Object.entries(Unit).map(([k, v]) => [k, v]));
const NAMES = new Map<number, string>(Object.entries(Unit).map(([k, v]) => [v, k]));

/** The unit for a name as written in YAML, or undefined when it is not an enum name. UNKNOWN parses to 0. */
export function parseUnitName(written: string): UnitNumber | undefined {
  return BY_NAME.get(written.toUpperCase());
}

/** Upper-case enum name of a unit number, or the number itself when outside the enum. */
export function unitName(unit: number): string {
  return NAMES.get(unit) ?? String(unit);
}

/**
 * Window length in seconds, indexed by the wire unit number (see `Unit` in domain.ts: WEEK is 7);
 * 0 for UNKNOWN. Windows are aligned to the Unix epoch as upstream's UnitToDivider has them.
 */
const DIVIDERS: readonly number[] = [0, 1, 60, 3600, 86400, 2592000, 31536000, 604800];

export function unitDivider(unit: number): number {
  return Number.isInteger(unit) ? (DIVIDERS[unit] ?? 0) : 0;
}

export function isValidUnit(unit: number): boolean {
  return unitDivider(unit) > 0;
}
