// Bounds on what a gRPC client can make the process hold (docs/ratelimit.md, "gRPC connection bounds"): connections, time
// without progress, bytes buffered per connection and per process, frame floods. Declared in the
// settings schema's form so settings.ts spreads them into SETTING_DEFS; the lean HTTP/2 transport
// (h2/) enforces them.
import { def, parseDurationMs, parseInteger } from '@rls/settings';
import type { GrpcLimits } from './grpc-server-types.js';

const KIB = 1024;
const MIB = 1024 * 1024;
/** The largest gRPC request message (grpc-go's default receive limit) plus its 5-byte prefix. */
const MAX_MESSAGE_FRAME = 4 * MIB + 5;

const positiveDurationMs = (raw: string): number => {
  const ms = parseDurationMs(raw);
  if (ms <= 0) throw new Error('expected a positive duration such as 10s');
  return ms;
};

export const GRPC_LIMIT_SETTING_DEFS = {
  grpcMaxConnections: def({
    name: 'GRPC_MAX_CONNECTIONS',
    default: '4096',
    meaning:
      'Open gRPC connections per process. At the limit a new connection first evicts the longest-idle one (no client preface yet, or no open stream); only when every connection is busy is it refused, with a warning in the log. 4096 leaves room in the usual 65536-descriptor limit for the HTTP, debug and store sockets, and is far above what Envoy needs (a handful of long-lived pooled connections per Envoy worker).',
    parse: (raw) => parseInteger(raw, 1, 1_000_000),
  }),
  grpcPrefaceTimeoutMs: def({
    name: 'GRPC_PREFACE_TIMEOUT',
    default: '10s',
    meaning: 'A new gRPC connection must complete its TLS handshake and send the HTTP/2 client preface and SETTINGS within this long (duration), or it is closed.',
    parse: positiveDurationMs,
  }),
  grpcIdleTimeoutMs: def({
    name: 'GRPC_IDLE_TIMEOUT',
    default: '10m',
    meaning:
      'A gRPC connection with no open stream for this long is sent GOAWAY (NO_ERROR) and closed (duration; 0 = never). Envoy reconnects transparently; its own health checks keep a used connection from ever being idle this long.',
    parse: (raw) => parseDurationMs(raw),
  }),
  grpcRequestReadTimeoutMs: def({
    name: 'GRPC_REQUEST_READ_TIMEOUT',
    default: '10s',
    meaning:
      'A request must arrive whole within this long of its first HEADERS frame (duration): a header block still waiting for CONTINUATION closes the connection, a stream whose message never completes is reset (CANCEL).',
    parse: positiveDurationMs,
  }),
  grpcMaxHeaderListBytes: def({
    name: 'GRPC_MAX_HEADER_LIST_SIZE',
    default: '16384',
    meaning:
      'SETTINGS_MAX_HEADER_LIST_SIZE advertised and enforced (bytes, RFC 7541 sizing: name + value + 32 per field). A larger request header list is refused (stream reset ENHANCE_YOUR_CALM); the header block itself may be at most this plus one frame, or the connection is closed.',
    parse: (raw) => parseInteger(raw, 1024, 1 * MIB),
  }),
  grpcStreamWindowBytes: def({
    name: 'GRPC_STREAM_WINDOW',
    default: '65535',
    meaning:
      'HTTP/2 SETTINGS_INITIAL_WINDOW_SIZE (bytes): what a client may send on one stream before the server grants more. Further window is granted only while that stream\'s message is still arriving; it is a fairness bound, the memory bound is GRPC_CONNECTION_BUFFER.',
    parse: (raw) => parseInteger(raw, 1024, 2 ** 31 - 1),
  }),
  grpcConnectionWindowBytes: def({
    name: 'GRPC_CONNECTION_WINDOW',
    default: '1048576',
    meaning:
      'HTTP/2 connection-level receive window the server keeps open (bytes), re-granted as received bytes are consumed by complete messages; never more than GRPC_CONNECTION_BUFFER minus what the connection holds.',
    parse: (raw) => parseInteger(raw, 65535, 2 ** 31 - 1),
  }),
  grpcConnectionBufferBytes: def({
    name: 'GRPC_CONNECTION_BUFFER',
    default: String(8 * MIB),
    meaning:
      'Request bytes one gRPC connection may hold (bytes): incomplete messages, the flow-control window granted, and compressed messages with what they inflate to while they are inflated. A connection at its budget gets no more flow-control window; a client that sends beyond the window it was granted gets FLOW_CONTROL_ERROR; a compressed message that does not fit is refused with RESOURCE_EXHAUSTED. Must hold one message of the maximum size (4 MiB + 5).',
    parse: (raw) => parseInteger(raw, MAX_MESSAGE_FRAME, 2 ** 31 - 1),
  }),
  grpcProcessBufferBytes: def({
    name: 'GRPC_PROCESS_BUFFER',
    default: String(128 * MIB),
    meaning:
      'Request bytes all gRPC connections of a process together may hold beyond HTTP/2\'s fixed initial 64 KiB per connection (bytes): buffered, granted as flow-control window, or held by compressed messages being inflated. When used up, connections only recycle their initial window and compressed messages that inflate to more than 16 KiB are refused with RESOURCE_EXHAUSTED. Worst case per process: this + GRPC_MAX_CONNECTIONS × 64 KiB.',
    parse: (raw) => parseInteger(raw, MAX_MESSAGE_FRAME, 2 ** 40),
  }),
  grpcMaxResetsPerSecond: def({
    name: 'GRPC_MAX_RESETS_PER_SECOND',
    default: '500',
    meaning:
      'Streams a gRPC connection may have reset (by the client, or refused by the server) per second; one more and the connection gets GOAWAY ENHANCE_YOUR_CALM and is closed (rapid reset, CVE-2023-44487). Envoy cancels a rate limit call only when its own downstream request goes away.',
    parse: (raw) => parseInteger(raw, 1),
  }),
  grpcMaxControlFramesPerSecond: def({
    name: 'GRPC_MAX_CONTROL_FRAMES_PER_SECOND',
    default: '1000',
    meaning:
      'Frames that carry no request per gRPC connection per second: PING, SETTINGS, WINDOW_UPDATE, PRIORITY, empty DATA without END_STREAM, empty HEADERS/CONTINUATION fragments, unknown types; each request earns one back (PINGs in step with traffic, such as grpc-go\'s BDP pings, are not a flood). One more and the connection gets GOAWAY ENHANCE_YOUR_CALM and is closed.',
    parse: (raw) => parseInteger(raw, 1),
  }),
  grpcInflateBytesPerSecond: def({
    name: 'GRPC_INFLATE_BYTES_PER_SECOND',
    default: String(4 * MIB),
    meaning:
      'Bytes per second the process inflates for compressed gRPC messages that inflate to more than 16 KiB (each counted as at least 64 KiB); smaller ones are inflated at once and not counted. These run one at a time, connections in turn; the rest wait, holding only their compressed bytes. 4 KB of gzip can inflate to 4 MB: unpaced, a few connections of such messages took a well-behaved client\'s p99 latency up tenfold (CPU, and collections of the garbage). 4 MiB/s passes one message of the maximum size per second (16 MiB/s let a flood of them take a well-behaved client\'s p99 to 3.4× on 2 cores; 4 MiB/s: 1.5×); Envoy does not compress rate limit requests, and the small compressed requests other clients send are not paced.',
    parse: (raw) => parseInteger(raw, MIB, 2 ** 40),
  }),
  grpcMaxWatchesPerConnection: def({
    name: 'GRPC_MAX_WATCHES_PER_CONNECTION',
    default: '8',
    meaning:
      'Open grpc.health.v1 Health/Watch streams per gRPC connection; one more is refused with RESOURCE_EXHAUSTED. A Watch stays open for good and every health change writes to each one, so this × GRPC_MAX_CONNECTIONS bounds their memory (about 300 bytes each) and the work of a change. A gRPC client watches once per connection and service name; Envoy uses Check.',
    parse: (raw) => parseInteger(raw, 1, 1_000_000),
  }),
  grpcKeepaliveTimeMs: def({
    name: 'GRPC_KEEPALIVE_TIME',
    default: '1m',
    meaning:
      'A gRPC connection with an open stream that has received nothing for this long is sent an HTTP/2 PING (duration; 0 = never). Long-lived streams (RLQS, health Watch) otherwise outlive a peer that vanished without closing its TCP connection, holding a stream slot (RLQS_MAX_STREAMS) and its grants; idle connections without streams are GRPC_IDLE_TIMEOUT\'s. Envoy answers PINGs at once.',
    parse: (raw) => parseDurationMs(raw),
  }),
  grpcKeepaliveTimeoutMs: def({
    name: 'GRPC_KEEPALIVE_TIMEOUT',
    default: '20s',
    meaning: 'How long after a keepalive PING the connection is closed when nothing at all has come back from the peer (duration), releasing its streams.',
    parse: positiveDurationMs,
  }),
} as const;

export type { GrpcLimits } from './grpc-server-types.js';

/** The defaults of GRPC_LIMIT_SETTING_DEFS (for servers built without settings, e.g. in tests). */
export const DEFAULT_GRPC_LIMITS: GrpcLimits = {
  maxConnections: 4096,
  prefaceTimeoutMs: 10_000,
  idleTimeoutMs: 600_000,
  requestReadTimeoutMs: 10_000,
  maxHeaderListBytes: 16 * KIB,
  streamWindowBytes: 65_535,
  connectionWindowBytes: 1 * MIB,
  connectionBufferBytes: 8 * MIB,
  processBufferBytes: 128 * MIB,
  maxResetsPerSecond: 500,
  maxControlFramesPerSecond: 1000,
  inflateBytesPerSecond: 16 * MIB,
  maxWatchesPerConnection: 8,
  keepaliveTimeMs: 60_000,
  keepaliveTimeoutMs: 20_000,
};

export interface GrpcLimitSettingsView {
  readonly grpcMaxConnections: number;
  readonly grpcPrefaceTimeoutMs: number;
  readonly grpcIdleTimeoutMs: number;
  readonly grpcRequestReadTimeoutMs: number;
  readonly grpcMaxHeaderListBytes: number;
  readonly grpcStreamWindowBytes: number;
  readonly grpcConnectionWindowBytes: number;
  readonly grpcConnectionBufferBytes: number;
  readonly grpcProcessBufferBytes: number;
  readonly grpcMaxResetsPerSecond: number;
  readonly grpcMaxControlFramesPerSecond: number;
  readonly grpcInflateBytesPerSecond: number;
  readonly grpcMaxWatchesPerConnection: number;
  readonly grpcKeepaliveTimeMs: number;
  readonly grpcKeepaliveTimeoutMs: number;
}

export function grpcLimitsOf(s: GrpcLimitSettingsView): GrpcLimits {
  return {
    maxConnections: s.grpcMaxConnections,
    prefaceTimeoutMs: s.grpcPrefaceTimeoutMs,
    idleTimeoutMs: s.grpcIdleTimeoutMs,
    requestReadTimeoutMs: s.grpcRequestReadTimeoutMs,
    maxHeaderListBytes: s.grpcMaxHeaderListBytes,
    streamWindowBytes: s.grpcStreamWindowBytes,
    connectionWindowBytes: s.grpcConnectionWindowBytes,
    connectionBufferBytes: s.grpcConnectionBufferBytes,
    processBufferBytes: s.grpcProcessBufferBytes,
    maxResetsPerSecond: s.grpcMaxResetsPerSecond,
    maxControlFramesPerSecond: s.grpcMaxControlFramesPerSecond,
    inflateBytesPerSecond: s.grpcInflateBytesPerSecond,
    maxWatchesPerConnection: s.grpcMaxWatchesPerConnection,
    keepaliveTimeMs: s.grpcKeepaliveTimeMs,
    keepaliveTimeoutMs: s.grpcKeepaliveTimeoutMs,
  };
}

/** How often the time limits are checked: a quarter of the shortest, between 25 ms and 1 s. */
export function sweepIntervalMs(l: GrpcLimits): number {
  const keepalive = l.keepaliveTimeMs > 0 ? Math.min(l.keepaliveTimeMs, l.keepaliveTimeoutMs) : Infinity;
  const shortest = Math.min(l.prefaceTimeoutMs, l.requestReadTimeoutMs, l.idleTimeoutMs > 0 ? l.idleTimeoutMs : Infinity, keepalive);
  return Math.max(25, Math.min(1000, Math.floor(shortest / 4)));
}

/** Cross-field check: the process budget must hold at least one connection's budget. */
export function checkGrpcLimitSettings(s: GrpcLimitSettingsView, fail: (message: string) => void): void {
  if (s.grpcProcessBufferBytes < s.grpcConnectionBufferBytes) {
    fail(`GRPC_PROCESS_BUFFER (${s.grpcProcessBufferBytes}) must be at least GRPC_CONNECTION_BUFFER (${s.grpcConnectionBufferBytes})`);
  }
}
