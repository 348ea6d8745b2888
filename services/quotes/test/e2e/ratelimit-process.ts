// Runs the real `ratelimit` service (from its sources, through tsx) against a real Redis, with a
// given rule directory, for the burst-limit integration tests.
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, spawnManaged, tempDir, waitFor, GiveUp, type Managed } from '@rls/testkit';

const mainTs = new URL('../../../ratelimit/src/main.ts', import.meta.url).pathname;

export interface RateLimitProcess {
  grpcAddress: string;
  proc: Managed;
  stop: () => Promise<void>;
}

export interface RulesTree {
  env: Record<string, string>;
  /** The directory holding the rule files (what the embedded engine loads too). */
  dir: string;
  cleanup: () => void;
}

/** A runtime tree `<root>/current/ratelimit/config/` holding the given files (contents or paths to copy). */
export function rulesTree(files: Record<string, { text: string } | { copyFrom: string }>): RulesTree {
  const root = tempDir('quotes-rls-rules-');
  const dir = join(root.path, 'current', 'ratelimit', 'config');
  mkdirSync(dir, { recursive: true });
  for (const [name, f] of Object.entries(files)) {
    if ('text' in f) writeFileSync(join(dir, name), f.text);
    else cpSync(f.copyFrom, join(dir, name));
  }
  return { env: { RUNTIME_ROOT: join(root.path, 'current'), RUNTIME_SUBDIRECTORY: 'ratelimit', RUNTIME_APPDIRECTORY: 'config' }, dir, cleanup: root.cleanup };
}

/** Starts `ratelimit` with BACKEND_TYPE=redis on `redisPort` (`extraEnv` on top); resolves once gRPC and HTTP answer. */
export async function startRateLimit(redisPort: number, rules: RulesTree, extraEnv: Record<string, string> = {}): Promise<RateLimitProcess> {
  const [grpcPort, httpPort, debugPort] = [await freePort(), await freePort(), await freePort()];
  const env = {
    ...process.env,
    ...rules.env,
    BACKEND_TYPE: 'redis',
    KVSTORE_SOCKET_TYPE: 'tcp',
    KVSTORE_URL: `127.0.0.1:${redisPort}`,
    HOST: '127.0.0.1',
    PORT: String(httpPort),
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpcPort),
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: String(debugPort),
    WORKERS: '1',
    USE_STATS_PUSH: 'false',
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  const proc = spawnManaged(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', `import(${JSON.stringify(mainTs)}).then((m) => m.run())`], { env });
  await waitFor(
    async () => {
      if (proc.proc.exitCode !== null) throw new GiveUp(`ratelimit exited early:\n${proc.output()}`);
      const r = await fetch(`http://127.0.0.1:${httpPort}/healthcheck`);
      return r.status === 200;
    },
    { what: 'ratelimit service healthy', timeoutMs: 30_000, intervalMs: 50 },
  );
  return { grpcAddress: `127.0.0.1:${grpcPort}`, proc, stop: () => proc.stop() };
}
