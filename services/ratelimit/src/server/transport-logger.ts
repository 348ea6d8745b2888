// The slice of a pino logger the transports use; pino's Logger satisfies it, tests may pass
// nothing (logs are then dropped).
export interface TransportLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

function noop(): void {}

export const silentLogger: TransportLogger = { debug: noop, info: noop, warn: noop, error: noop };
