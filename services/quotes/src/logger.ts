import { hostname } from 'node:os';
import pino, { type DestinationStream, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { CG_KEY_HEADERS, maskCredentials } from './http/credentials.js';

export interface LoggedRequest {
  method?: string | undefined;
  url?: string | undefined;
  headers?: Record<string, unknown>;
  ip?: string | undefined;
}

/** What an access line says of a request (fastify's `req`): method, URL with every credential masked, client address. */
export function serializeRequest(req: LoggedRequest): { method: string | undefined; url: string; remoteAddress: string | undefined } {
  return { method: req.method, url: maskCredentials(req.url ?? ''), remoteAddress: req.ip };
}

/**
 * Where access lines written outside fastify go (AccessLog): the root logger's destination and
 * the bindings the root logger puts on every line (`pid`, `hostname`, as pino's default base).
 * Made here with the logger, so the line format is ours and no logger internals are read.
 */
export interface AccessSink {
  write(line: string): void;
  /** `,"pid":…,"hostname":"…"` */
  readonly bindings: string;
}

/** The root logger and the sink for access lines written beside it, on one destination. */
export interface Logging {
  logger: Logger;
  access: AccessSink;
}

/**
 * Where the logger writes when no destination is given: standard output through pino's
 * sonic-boom, synchronously, as node itself writes to a file or (on Linux) a pipe on stdout.
 * The access lines of an event-loop turn reach it as one write (AccessLog): measured over HTTP,
 * one synchronous write per turn costs ~10 µs less per cached quote than pino's default
 * asynchronous mode, whose every write is a round trip through libuv's thread pool. When stdout
 * has been replaced (a test harness), pino's own default applies.
 */
export function defaultLogDestination(dest: number | string = 1): DestinationStream | undefined {
  const out = process.stdout as { write: unknown; constructor: { prototype: { write: unknown } } };
  if (dest === 1 && out.write !== out.constructor.prototype.write) return undefined;
  return pino.destination({ dest, sync: true });
}

/**
 * Where the service's logs go for QUOTES_LOG_FORMAT: `pretty` (and `auto` on a terminal) renders
 * each line for a person reading the quick start (pino-pretty, in-process and synchronous, so
 * lines keep their order and none is lost on exit); `json` (and `auto` when stdout is a pipe or
 * a file) keeps the default destination, one JSON object a line, unchanged for log collectors.
 */
export function logDestination(format: 'auto' | 'json' | 'pretty', isTty: boolean = process.stdout.isTTY === true, out?: NodeJS.WritableStream): DestinationStream | undefined {
  if (format === 'json' || (format === 'auto' && !isTty)) return undefined;
  return PinoPretty({ colorize: isTty, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, ...(out === undefined ? {} : { destination: out }) });
}

/**
 * The one root logger. Tokens never reach the output: every query parameter a token is read from
 * (`token`, CoinGecko's key parameters, in any spelling the query parser decodes to them) is
 * masked in request URLs (maskCredentials); requests are logged without headers, and the
 * Authorization and CoinGecko key headers, cookies (dashboard sessions), passwords, request
 * bodies and any DATABASE_URL are redacted wherever else they appear.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'authorization',
          ...CG_KEY_HEADERS.flatMap((h) => [`req.headers["${h}"]`, `headers["${h}"]`]),
          'token',
          '*.token',
          'databaseUrl',
          'req.headers.cookie',
          'headers.cookie',
          'cookie',
          'password',
          '*.password',
          'body',
          '*.body',
        ],
        censor: '[REDACTED]',
      },
      serializers: {
        req: serializeRequest,
        err: pino.stdSerializers.err,
      },
    },
    destination ?? defaultLogDestination(),
  );
}

/**
 * The root logger (createLogger) and an AccessSink on the same destination: `destination`, else
 * standard output as defaultLogDestination writes it, else pino's own default (sonic-boom on fd 1).
 */
export function createLogging(level: string, destination?: DestinationStream): Logging {
  const dest = destination ?? defaultLogDestination() ?? pino.destination(1);
  const logger = createLogger(level, dest);
  return { logger, access: { write: (line) => void dest.write(line), bindings: `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}` } };
}
