// Rewrites the settings table of docs/ratelimit.md from SETTING_DEFS:
// `npx tsx --conditions=source services/ratelimit/src/settings-doc.ts`. settings.test.ts checks
// that the committed document matches.
import { updateSettingsDoc } from '@rls/settings';
import { SETTING_DEFS } from './settings.js';

export const RATELIMIT_DOC = new URL('../../../docs/ratelimit.md', import.meta.url);

if (import.meta.url === `file://${process.argv[1]}`) {
  const changed = updateSettingsDoc(RATELIMIT_DOC, SETTING_DEFS);
  console.log(changed ? 'docs/ratelimit.md settings table updated' : 'docs/ratelimit.md settings table already up to date');
}
