// Rewrites the settings table of docs/quotes.md from SETTING_DEFS:
// `npx tsx --conditions=source services/quotes/src/settings-doc.ts`. A test checks that the
// committed document matches.
import { updateSettingsDoc } from '@rls/settings';
import { SETTING_DEFS } from './settings.js';

export const QUOTES_DOC = new URL('../../../docs/quotes.md', import.meta.url);

if (import.meta.url === `file://${process.argv[1]}`) {
  const changed = updateSettingsDoc(QUOTES_DOC, SETTING_DEFS);
  console.log(changed ? 'docs/quotes.md settings table updated' : 'docs/quotes.md settings table already up to date');
}
