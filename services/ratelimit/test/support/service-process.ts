// Starts the real `ratelimit` process (from sources, through tsx) with a given environment and
// waits until both listeners answer. Used by the end-to-end tests.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, spawnManaged, tempDir, waitFor, GiveUp, type Managed } from '@rls/testkit';

const mainTs = new URL('../../src/main.ts', import.meta.url).pathname;

export interface ServiceProcess {
  grpcAddress: string;
  httpUrl: string;
  /** The debug server (`/rlconfig`, `/stats`, `/debug/pprof/`). */
  debugUrl: string;
  proc: Managed;
  output: () => string;
  stop: () => Promise<void>;
}

/** Writes rule files into a fresh runtime tree; returns the env that points the service at it. */
export function writeRules(files: Record<string, string>): { env: Record<string, string>; dir: string; cleanup: () => void } {
  const root = tempDir('rls-rules-');
  const dir = join(root.path, 'current', 'ratelimit', 'config');
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return {
    env: { RUNTIME_ROOT: join(root.path, 'current'), RUNTIME_SUBDIRECTORY: 'ratelimit', RUNTIME_APPDIRECTORY: 'config' },
    dir,
    cleanup: root.cleanup,
  };
}

export async function startService(env: Record<string, string>): Promise<ServiceProcess> {
  const grpcPort = await freePort();
  const httpPort = await freePort();
  const debugPort = await freePort();
  const fullEnv = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(httpPort),
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpcPort),
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: String(debugPort),
    LOG_LEVEL: 'info',
    // One process unless a test asks for worker mode (WORKERS defaults to one per core).
    WORKERS: '1',
    ...env,
  };
  const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], { env: fullEnv });
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  await waitFor(
    async () => {
      if (proc.proc.exitCode !== null) throw new GiveUp(`service exited early:\n${proc.output()}`);
      const r = await fetch(`${httpUrl}/healthcheck`);
      return r.status > 0;
    },
    { what: 'ratelimit HTTP listener', timeoutMs: 20_000, intervalMs: 50 },
  );
  return { grpcAddress: `127.0.0.1:${grpcPort}`, httpUrl, debugUrl: `http://${fullEnv.DEBUG_HOST}:${fullEnv.DEBUG_PORT}`, proc, output: proc.output, stop: () => proc.stop() };
}

export async function postJson(httpUrl: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(`${httpUrl}/json`, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}
