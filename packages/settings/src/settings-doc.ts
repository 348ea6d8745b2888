// The settings table of a service's docs, generated from its definitions so the docs cannot drift
// from the code. Each service has a small script that rewrites the block between the markers in
// its document, and a test that checks the committed document matches (`renderDoc(doc, defs)`).
import { readFileSync, writeFileSync } from 'node:fs';
import type { AnySettingDef } from './schema.js';

const BEGIN = '<!-- settings:begin -->';
const END = '<!-- settings:end -->';

const cell = (text: string): string => text.replace(/\|/g, '\\|');

/**
 * A markdown table of the definitions, in declaration order. The alias and unit columns appear
 * only when some definition has aliases or a unit.
 */
export function settingsTable(defs: Readonly<Record<string, AnySettingDef>>): string {
  const all = Object.values(defs);
  const withAliases = all.some((d) => 'aliases' in d && (d.aliases?.length ?? 0) > 0);
  const withUnits = all.some((d) => d.unit !== undefined);
  const header = ['Setting', ...(withAliases ? ['Upstream alias'] : []), 'Default', ...(withUnits ? ['Unit'] : []), 'Meaning'];
  const rows = all.map((d) => {
    const aliases = 'aliases' in d ? (d.aliases ?? []).map((a) => `\`${a}\``).join(', ') : '';
    const dflt = d.default === undefined ? '(unset)' : d.default === '' ? '(empty)' : `\`${cell(d.default)}\``;
    const cells = [`\`${d.name}\``, ...(withAliases ? [aliases || '—'] : []), dflt, ...(withUnits ? [d.unit ?? '—'] : []), cell(d.meaning)];
    return `| ${cells.join(' | ')} |`;
  });
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows].join('\n');
}

/** `doc` with the block between the settings markers replaced by the table of `defs`. */
export function renderDoc(doc: string, defs: Readonly<Record<string, AnySettingDef>>): string {
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error('settings markers not found');
  return doc.slice(0, a + BEGIN.length) + '\n' + settingsTable(defs) + '\n' + doc.slice(b);
}

/** Rewrites the settings block of the document at `path`; true when it changed. */
export function updateSettingsDoc(path: URL | string, defs: Readonly<Record<string, AnySettingDef>>): boolean {
  const before = readFileSync(path, 'utf8');
  const after = renderDoc(before, defs);
  if (after !== before) writeFileSync(path, after);
  return after !== before;
}
