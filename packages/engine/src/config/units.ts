// Unit names as written in rule files (case-insensitive) and as printed by /rlconfig.
import { Unit, type UnitNumber } from '../domain.js';

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
