// Prints the settings table of a service's docs from its schema, so the docs cannot drift from
// the code: `npx tsx services/ratelimit/src/settings/settings-doc.ts` rewrites the block between the markers in
// docs/ratelimit.md. A test checks that the committed docs match.
import { readFileSync, writeFileSync } from 'node:fs';
import { SETTING_DEFS } from '../settings.js';

export function settingsTable(): string {
  const rows = Object.values(SETTING_DEFS).map((d) => {
    const aliases = (d.aliases ?? []).map((a) => `\`${a}\``).join(', ') || '—';
    const dflt = d.default === undefined || d.default === '' ? '(empty)' : `\`${d.default}\``;
    return `| \`${d.name}\` | ${aliases} | ${dflt} | ${d.meaning.replace(/\|/g, '\\|')} |`;
  });
  return ['| Setting | Upstream alias | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

const BEGIN = '<!-- settings:begin -->';
const END = '<!-- settings:end -->';

export function renderDoc(doc: string): string {
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error('settings markers not found');
  return doc.slice(0, a + BEGIN.length) + '\n' + settingsTable() + '\n' + doc.slice(b);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const path = new URL('../../../../docs/ratelimit.md', import.meta.url);
  writeFileSync(path, renderDoc(readFileSync(path, 'utf8')));
  console.log('docs/ratelimit.md settings table updated');
}
