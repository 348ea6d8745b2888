import pino, { type DestinationStream, type Logger } from 'pino';

/** Replaces the value of any `token` query parameter so URLs can be logged. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[REDACTED]');
}

interface LoggedRequest {
  method?: string;
  url?: string;
  headers?: Record<string, unknown>;
  ip?: string;
}

/**
 * The one root logger. Tokens never reach the output: the `token` query parameter is masked in
 * request URLs and the Authorization header (and any password in DATABASE_URL-like fields) is
 * redacted, as are cookies (dashboard sessions), passwords and request bodies.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', '*.token', 'databaseUrl', 'req.headers.cookie', 'headers.cookie', 'cookie', 'password', '*.password', 'body', '*.body'], censor: '[REDACTED]' },
      serializers: {
        req: (req: LoggedRequest) => ({ method: req.method, url: redactUrl(req.url ?? ''), remoteAddress: req.ip }),
        err: pino.stdSerializers.err,
      },
    },
    destination,
  );
}
