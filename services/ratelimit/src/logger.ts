// The one root logger; components take child loggers. LOG_FORMAT=json writes objects with `@timestamp`
// (RFC 3339 with nanoseconds), `@message` and `level`, as upstream's logrus JSON formatter;
// LOG_FORMAT=text writes `time=<ts> level=<level> msg=<text>` lines plus `key=value` fields.
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

export interface LoggerOptions {
  level: string;
  format: 'text' | 'json';
  /** Where lines go (default stderr). */
  destination?: { write(line: string): unknown };
}

const REDACT = ['auth', 'password', '*.password', '*.auth', 'headers.authorization', 'token', '*.token'];

/** Wall-clock time with nanosecond digits (sub-millisecond part from the monotonic clock). */
export function rfc3339Nano(): string {
  const nowMs = performance.timeOrigin + performance.now();
  const whole = Math.floor(nowMs);
  const iso = new Date(whole).toISOString(); // 2026-01-01T00:00:00.123Z
  const subMsNs = Math.floor((nowMs - whole) * 1e6)
    .toString()
    .padStart(6, '0');
  return `${iso.slice(0, -1)}${subMsNs}Z`;
}

function quoteIfNeeded(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /^[A-Za-z0-9_.:/@+-]+$/.test(s) ? s : JSON.stringify(s);
}

/** Turns pino's JSON lines into logrus-style text lines. */
class TextStream implements DestinationStream {
  constructor(private readonly out: { write(line: string): unknown }) {}
  write(line: string): void {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.out.write(line);
      return;
    }
    const { '@timestamp': time, level, '@message': msg, ...rest } = rec;
    let text = `time=${quoteIfNeeded(time)} level=${String(level)} msg=${quoteIfNeeded(msg ?? '')}`;
    for (const [k, v] of Object.entries(rest)) text += ` ${k}=${quoteIfNeeded(v)}`;
    this.out.write(text + '\n');
  }
}

export function createLogger(opts: LoggerOptions): Logger {
  const dest = opts.destination ?? process.stderr;
  const stream: DestinationStream = opts.format === 'text' ? new TextStream(dest) : { write: (l: string) => dest.write(l) };
  return pino(
    {
      level: opts.level,
      base: null,
      messageKey: '@message',
      timestamp: () => `,"@timestamp":"${rfc3339Nano()}"`,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT, censor: '*****' },
    },
    stream,
  );
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** Masks credentials in `scheme://user:pass@host` strings before they are logged. */
export function maskCredentials(url: string): string {
  return url.replace(/\/\/([^/]*)@/, '//*****@');
}
