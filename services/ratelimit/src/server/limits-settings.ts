// The bounds on requests and HTTP/1.1 connections (docs/ratelimit.md, "Request and connection bounds"), declared in the settings
// schema's form so settings.ts spreads them into SETTING_DEFS (`...LIMIT_SETTING_DEFS`), and
// their translation into the options of the decoders and servers. docs/ratelimit.md
// ("Request and connection bounds") gives the measurements behind the defaults.
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '@rls/rls-proto';
import { def, type ValuesOf, parseDurationMs, parseInteger } from '@rls/settings';
import type { HttpTimeouts } from './connection-guard.js';

const durationMs = (raw: string): number => parseDurationMs(raw);
const positiveInt = (raw: string): number => parseInteger(raw, 1);
const nonNegInt = (raw: string): number => parseInteger(raw, 0);

export const LIMIT_SETTING_DEFS = {
  maxRequestDescriptors: def({
    name: 'MAX_REQUEST_DESCRIPTORS',
    default: String(DEFAULT_REQUEST_LIMITS.maxDescriptors),
    meaning:
      'Most descriptors in one ShouldRateLimit request (gRPC and /json); more is refused with INVALID_ARGUMENT / 400 while decoding. Envoy sends one per rate limit action of a route (a handful); at 256 the largest accepted request takes a few milliseconds.',
    parse: positiveInt,
  }),
  maxDescriptorEntries: def({
    name: 'MAX_DESCRIPTOR_ENTRIES',
    default: String(DEFAULT_REQUEST_LIMITS.maxEntriesPerDescriptor),
    meaning: 'Most entries in one request descriptor; more is refused like too many descriptors. Rules nest a few levels deep; 32 leaves room for any configuration seen in practice.',
    parse: positiveInt,
  }),
  maxDescriptorEntryBytes: def({
    name: 'MAX_DESCRIPTOR_ENTRY_BYTES',
    default: String(DEFAULT_REQUEST_LIMITS.maxEntryBytes),
    meaning: 'Most bytes (UTF-8) of one descriptor entry, key plus value; longer is refused like too many descriptors. Values end up in counter keys and statistic names; 4096 fits long header values and paths.',
    parse: positiveInt,
  }),
  httpMaxBodyBytes: def({
    name: 'HTTP_MAX_BODY_BYTES',
    default: '262144',
    meaning:
      'Largest /json request body (bytes); larger gets 413 without reading the rest. 256 KiB holds the largest request the descriptor limits accept with short values, and parses in about a millisecond.',
    parse: positiveInt,
  }),
  httpHeadersTimeoutMs: def({
    name: 'HTTP_HEADERS_TIMEOUT',
    default: '10s',
    meaning: 'Time a client of the HTTP/1.1 server (and of the debug server) has to send complete request headers (duration; 0 = none); then the connection is closed. Bounds slow-header (slowloris) clients.',
    parse: durationMs,
  }),
  httpRequestTimeoutMs: def({
    name: 'HTTP_REQUEST_TIMEOUT',
    default: '30s',
    meaning: 'Time a client has to send a complete request, body included (duration; 0 = none); then it gets 408 and the connection is closed.',
    parse: durationMs,
  }),
  httpKeepAliveTimeoutMs: def({
    name: 'HTTP_KEEPALIVE_TIMEOUT',
    default: '5s',
    meaning: 'An idle keep-alive connection of the HTTP/1.1 or debug server is closed after this long (duration).',
    parse: durationMs,
  }),
  httpMaxConnections: def({
    name: 'HTTP_MAX_CONNECTIONS',
    default: '1024',
    meaning:
      'Most open connections of the HTTP/1.1 server (0 = no limit). At the limit the connection idle (or sending its request) the longest is closed to make room, so /healthcheck is still answered under a slow-client flood; a newcomer is refused (with a log line) only when every connection has a request in progress. Keep it well below the file descriptor limit (ulimit -n), which the gRPC connections share.',
    parse: nonNegInt,
  }),
  debugMaxConnections: def({
    name: 'DEBUG_MAX_CONNECTIONS',
    default: '64',
    meaning: 'Most open connections of the debug server (0 = no limit), handled like HTTP_MAX_CONNECTIONS.',
    parse: nonNegInt,
  }),
} as const;

export type LimitSettings = ValuesOf<typeof LIMIT_SETTING_DEFS>;

/** The request limits both decoders enforce, naming the variables in their error messages. */
export function requestLimitsFrom(s: LimitSettings): RequestLimits {
  return Object.freeze({
    maxDescriptors: s.maxRequestDescriptors,
    maxEntriesPerDescriptor: s.maxDescriptorEntries,
    maxEntryBytes: s.maxDescriptorEntryBytes,
    sources: Object.freeze({
      maxDescriptors: LIMIT_SETTING_DEFS.maxRequestDescriptors.name,
      maxEntriesPerDescriptor: LIMIT_SETTING_DEFS.maxDescriptorEntries.name,
      maxEntryBytes: LIMIT_SETTING_DEFS.maxDescriptorEntryBytes.name,
    }),
  });
}

export function httpTimeoutsFrom(s: LimitSettings): HttpTimeouts {
  return { headersTimeoutMs: s.httpHeadersTimeoutMs, requestTimeoutMs: s.httpRequestTimeoutMs, keepAliveTimeoutMs: s.httpKeepAliveTimeoutMs };
}
