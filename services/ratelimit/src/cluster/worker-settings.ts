// WORKERS: how many processes serve requests. One process per core by default for the stores
// that live outside the process (Redis, memcached); the embedded memory store keeps its counters
// in one process, so it always runs one.
import { def, parseInteger } from '@rls/settings';

export const WORKER_SETTING_DEFS = {
  workers: def({
    name: 'WORKERS',
    default: 'auto',
    meaning:
      'Worker processes sharing the gRPC, HTTP and debug listeners (a primary process forks them, forwards signals, aggregates their statistics and runs the rule source once for all of them). `auto` = one per available core; `1` = a single process, no primary. BACKEND_TYPE=memory always runs one process.',
    parse: (raw): number | 'auto' => {
      const v = raw.trim().toLowerCase();
      if (v === '' || v === 'auto') return 'auto';
      return parseInteger(v, 1, 256);
    },
  }),
} as const;

/** The number of processes to run, and why when the setting was overridden. */
export function resolveWorkerCount(s: { workers: number | 'auto'; backendType: string }, cores: number): { count: number; note?: string } {
  if (s.backendType === 'memory') {
    return s.workers === 1 ? { count: 1 } : { count: 1, note: 'BACKEND_TYPE=memory keeps its counters inside one process: running a single process (WORKERS ignored)' };
  }
  return { count: s.workers === 'auto' ? Math.max(1, cores) : s.workers };
}
