/** What shutdownWithin needs of a tracer provider and a logger (the two services' own types fit). */
export interface ShutdownTarget {
  shutdown(): Promise<void>;
}
export interface ShutdownLog {
  warn(obj: object, msg: string): void;
}

/**
 * Flushes and stops `provider`, waiting at most `timeoutMs`: a collector that does not answer must
 * not hold up the process's exit. A timeout or a failure is logged (queued spans are dropped).
 */
export async function shutdownWithin(provider: ShutdownTarget, log: ShutdownLog, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref();
  });
  try {
    if ((await Promise.race([provider.shutdown(), timedOut])) === 'timeout') log.warn({ timeoutMs }, 'flushing traces timed out; queued spans dropped');
  } catch (err) {
    log.warn({ err: err instanceof Error ? err.message : String(err) }, 'flushing traces failed');
  } finally {
    clearTimeout(timer);
  }
}
