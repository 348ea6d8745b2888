// Settings of the CoinGecko-compatible API (/api/v3), spread into SETTING_DEFS by settings.ts.
import { def, parseInteger } from '@rls/settings';

export const COINGECKO_SETTING_DEFS = {
  coingeckoCacheBytes: def({
    name: 'QUOTES_COINGECKO_CACHE_BYTES',
    default: '33554432',
    unit: 'bytes',
    meaning:
      'Memory for built /api/v3 response bodies, kept per market snapshot and parameters (oldest dropped first; at most 512 bodies; 0 keeps none, every request builds its body; at most 4 GiB).',
    parse: (raw: string): number => parseInteger(raw, 0, 4 * 1024 ** 3),
  }),
} as const;
