// Node's equivalents of Go's pprof for the debug server: a CPU profile taken through the built-in
// inspector protocol (the `.cpuprofile` JSON Chrome DevTools loads) and a V8 heap snapshot.
// One CPU profile at a time: the V8 profiler is per isolate.
import { Session } from 'node:inspector/promises';
import type { Readable } from 'node:stream';
import { getHeapSnapshot } from 'node:v8';

/** The `Profiler.Profile` object of the DevTools protocol (kept opaque here). */
export type CpuProfile = Record<string, unknown>;

export class CpuProfiler {
  private running: AbortController | undefined;

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** Profiles for `ms` (or until `signal` aborts or `cancel()` is called) and returns the profile. */
  async profile(ms: number, signal?: AbortSignal): Promise<CpuProfile> {
    if (this.running !== undefined) throw new Error('a CPU profile is already running');
    const stop = new AbortController();
    this.running = stop;
    const session = new Session();
    session.connect();
    try {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      await waitOrAbort(ms, [stop.signal, signal]);
      const { profile } = await session.post('Profiler.stop');
      await session.post('Profiler.disable');
      return profile as unknown as CpuProfile;
    } finally {
      session.disconnect();
      this.running = undefined;
    }
  }

  /** Ends a running profile early (shutdown). */
  cancel(): void {
    this.running?.abort();
  }
}

function waitOrAbort(ms: number, signals: (AbortSignal | undefined)[]): Promise<void> {
  return new Promise((resolve) => {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    const done = (): void => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of live) {
      if (s.aborted) {
        done();
        return;
      }
      s.addEventListener('abort', done, { once: true });
    }
  });
}

/** A heap snapshot as a stream of the `.heapsnapshot` JSON (the isolate pauses while it is taken). */
export function heapSnapshotStream(): Readable {
  return getHeapSnapshot();
}
