// The operator page on the debug port (docs/ratelimit.md, "Operator page"): who may see it and the
// bounds of what it keeps. Everything it keeps is bounded by these settings, whatever the traffic.
import { def, parseBool, parseEnum, parseInteger } from '@rls/settings';

export type OperatorPageMode = 'loopback' | 'on' | 'off';

export const OPERATOR_SETTING_DEFS = {
  operatorPage: def({
    name: 'OPERATOR_PAGE',
    default: 'loopback',
    meaning:
      'The operator page and its JSON under /operator on the debug server. `loopback`: answered only to clients connecting from 127.0.0.0/8 or ::1 that name a loopback host (127.x, [::1], localhost), others get 403, whatever DEBUG_HOST binds; `on`: answered to every client the debug server admits (DEBUG_ACCESS, DEBUG_ALLOWED_HOSTS); `off`: not served and nothing is recorded for it.',
    parse: (raw): OperatorPageMode => parseEnum(raw.trim(), ['loopback', 'on', 'off'] as const),
  }),
  operatorTopSize: def({
    name: 'OPERATOR_TOP_SIZE',
    default: '50',
    meaning: 'Over-limit descriptors the top list tracks (space-saving counters per half-minute slot; the page shows the largest). 1–1000.',
    parse: (raw) => parseInteger(raw, 1, 1000),
  }),
  operatorSampleEvery: def({
    name: 'OPERATOR_SAMPLE_EVERY',
    default: '16',
    meaning:
      'The top list looks at about one ShouldRateLimit call in this many (randomly spaced) and counts its over-limit descriptors with this weight, so the other calls pay nothing for it. 1 looks at every call; 1–10000.',
    parse: (raw) => parseInteger(raw, 1, 10_000),
  }),
  countersResetEnabled: def({
    name: 'COUNTERS_RESET_ENABLED',
    default: 'false',
    meaning:
      'Allow `POST /counters/reset` on the debug port (same access rule as the operator page): deletes the counters of one domain + descriptor in the store and forgets them in this process\'s local over-limit cache; each reset is logged with the remote address and counted in ratelimit.operator.counters_reset. Off: refused with 403 (the lookup, `GET /counters`, always works while the operator page is on).',
    parse: (raw) => (raw === '' ? false : parseBool(raw)),
  }),
  operatorChartRules: def({
    name: 'OPERATOR_CHART_RULES',
    default: '20',
    meaning: 'Rule statistics keys whose hit and over-limit rates the page charts (the busiest in the last 15 minutes; 90 ten-second buckets each). 1–200.',
    parse: (raw) => parseInteger(raw, 1, 200),
  }),
} as const;
