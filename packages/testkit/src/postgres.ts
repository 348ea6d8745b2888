import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { once } from 'node:events';
import { freePort } from './ports.js';
import { tempDir } from './process.js';
import { GiveUp, waitFor } from './wait.js';
import { assertMayStartServers } from './tier-guard.js';

export interface PostgresServer {
  host: string;
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth, no password). */
  url: string;
  /** Connection URL of another database on the same server (create it first with `createDatabase`). */
  urlFor: (database: string) => string;
  /** Runs `createdb` for a fresh, empty database. */
  createDatabase: (name: string) => Promise<void>;
  dir: string;
  /** Everything the server wrote so far (for failure messages). */
  output: () => string;
  /** Fast shutdown, then removes the data directory. */
  stop: () => Promise<void>;
}

export interface PostgresOptions {
  /** Directory holding initdb/postgres/createdb; default Debian's PostgreSQL 15. */
  binDir?: string;
}

const DEFAULT_BIN = '/usr/lib/postgresql/15/bin';

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** PostgreSQL refuses to run as root, so under root the server runs as the `postgres` system user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid <= 0) {
    throw new Error('running as root needs a "postgres" system user to start PostgreSQL');
  }
  return { uid, gid };
}

async function tcpOpen(host: string, port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const sock = createConnection({ host, port });
    sock.once('connect', () => {
      sock.end();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/**
 * Starts a private PostgreSQL server (initdb + postgres in the foreground) on a free loopback
 * port in a temporary directory, with trust authentication and no durability (fsync off),
 * which is what tests want. The server is killed if the test process exits without `stop()`.
 */
export async function startPostgres(opts: PostgresOptions = {}): Promise<PostgresServer> {
  assertMayStartServers('startPostgres');
  const binDir = opts.binDir ?? DEFAULT_BIN;
  if (!existsSync(join(binDir, 'initdb'))) throw new Error(`initdb not found in ${binDir}`);
  const host = '127.0.0.1';
  const port = await freePort(host);
  const tmp = tempDir('rls-pg-');
  const dataDir = join(tmp.path, 'data');
  const sockDir = join(tmp.path, 'sock');
  mkdirSync(dataDir);
  mkdirSync(sockDir);
  const user = runAs();
  if (user !== undefined) {
    for (const d of [tmp.path, dataDir, sockDir]) chownSync(d, user.uid, user.gid);
  }
  const ids = user === undefined ? {} : { uid: user.uid, gid: user.gid };

  const init = spawnSync(join(binDir, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'], {
    encoding: 'utf8',
    ...ids,
  });
  if (init.status !== 0) {
    tmp.cleanup();
    throw new Error(`initdb failed (${init.status}): ${init.stderr}`);
  }

  const proc = spawn(
    join(binDir, 'postgres'),
    ['-D', dataDir, '-p', String(port), '-k', sockDir, '-c', `listen_addresses=${host}`, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
    { stdio: ['ignore', 'pipe', 'pipe'], ...ids },
  );
  live.add(proc);
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  proc.once('exit', () => live.delete(proc));

  const stopServer = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = once(proc, 'exit');
      proc.kill('SIGINT'); // fast shutdown
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    tmp.cleanup();
  };

  try {
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new GiveUp(`postgres exited: ${out}`);
        if (!(await tcpOpen(host, port))) return false;
        const ready = spawnSync(join(binDir, 'pg_isready'), ['-h', host, '-p', String(port), '-U', 'postgres'], { encoding: 'utf8' });
        return ready.status === 0;
      },
      { what: `postgres on ${port}`, timeoutMs: 30_000, intervalMs: 50 },
    );
  } catch (err) {
    await stopServer();
    throw err;
  }

  const urlFor = (database: string): string => `postgres://postgres@${host}:${port}/${database}`;
  return {
    host,
    port,
    url: urlFor('postgres'),
    urlFor,
    createDatabase: async (name: string) => {
      const child = spawn(join(binDir, 'createdb'), ['-h', host, '-p', String(port), '-U', 'postgres', name], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      if (code !== 0) throw new Error(`createdb ${name} failed: ${err}`);
    },
    dir: tmp.path,
    output: () => out,
    stop: stopServer,
  };
}
