// Private memcached servers for tests: `startMemcached()` runs the real binary on a free loopback
// port (optionally with TLS), and `memcachedCommand()` speaks the text protocol over a fresh
// connection so tests can inspect what the service stored (values, remaining TTLs).
import { readFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { freePort } from './ports.js';
import { spawnManaged, type Managed } from './process.js';
import { GiveUp, waitFor } from './wait.js';
import { assertMayStartServers } from './tier-guard.js';

export interface MemcachedTlsOptions {
  /** PEM certificate chain file of the server. */
  certFile: string;
  /** PEM private key file of the server. */
  keyFile: string;
  /** Client certificate and key `command()` presents (when the server requires one). */
  clientCertFile?: string;
  clientKeyFile?: string;
}

export interface MemcachedOptions {
  port?: number;
  /** Extra memcached arguments. */
  args?: string[];
  tls?: MemcachedTlsOptions;
  binary?: string;
}

export interface MemcachedServer {
  host: string;
  port: number;
  /** `host:port`, the form MCSTORE_HOST_PORT takes. */
  url: string;
  /** Sends raw protocol text (CRLF added to each line) and resolves with the reply text once `until` matches. */
  command: (text: string, until?: RegExp) => Promise<string>;
  /** Stored value of a key, undefined when missing. */
  get: (key: string) => Promise<string | undefined>;
  /** Remaining TTL in seconds as memcached's meta get reports it (-1 = never expires), undefined when missing. */
  ttl: (key: string) => Promise<number | undefined>;
  /** Removes every item. */
  flushAll: () => Promise<void>;
  stop: () => Promise<void>;
  /** Starts it again on the same port (empty). */
  start: () => Promise<void>;
}

/** Sends protocol text over a fresh (TLS) connection; resolves with everything read once `until` matches. */
export async function memcachedCommand(
  target: { host: string; port: number; tls?: { cert?: Buffer | undefined; key?: Buffer | undefined } },
  text: string,
  until: RegExp = /(\r\n)$/,
): Promise<string> {
  return await new Promise((resolve, reject) => {
    const sock: Socket =
      target.tls !== undefined
        ? // A probe of the test's own server: its certificate is not what is under test here.
          tlsConnect({ host: target.host, port: target.port, rejectUnauthorized: false, ...(target.tls.cert !== undefined ? { cert: target.tls.cert, key: target.tls.key } : {}) })
        : createConnection({ host: target.host, port: target.port });
    let out = '';
    sock.setTimeout(3000, () => {
      sock.destroy();
      reject(new Error('memcached command timed out'));
    });
    sock.on('error', reject);
    sock.once(target.tls !== undefined ? 'secureConnect' : 'connect', () => sock.write(text));
    sock.on('data', (d: Buffer) => {
      out += d.toString('latin1');
      if (until.test(out)) {
        sock.end();
        resolve(out);
      }
    });
  });
}

export async function startMemcached(opts: MemcachedOptions = {}): Promise<MemcachedServer> {
  assertMayStartServers('startMemcached');
  const host = '127.0.0.1';
  const port = opts.port ?? (await freePort());
  const tls = opts.tls;
  const clientAuth = tls?.clientCertFile !== undefined && tls.clientKeyFile !== undefined ? { cert: readFileSync(tls.clientCertFile), key: readFileSync(tls.clientKeyFile) } : {};
  const target = { host, port, ...(tls !== undefined ? { tls: clientAuth } : {}) };
  const tlsArgs = opts.tls !== undefined ? ['-Z', '-o', `ssl_chain_cert=${opts.tls.certFile},ssl_key=${opts.tls.keyFile}`] : [];
  // memcached refuses to run as root without a user to switch to.
  const userArgs = process.getuid?.() === 0 ? ['-u', 'root'] : [];
  let proc: Managed | undefined;
  const start = async (): Promise<void> => {
    const p = spawnManaged(opts.binary ?? 'memcached', ['-l', host, '-p', String(port), '-U', '0', '-m', '64', '-t', '2', ...userArgs, ...tlsArgs, ...(opts.args ?? [])]);
    proc = p;
    await waitFor(
      async () => {
        if (p.proc.exitCode !== null) throw new GiveUp(`memcached exited: ${p.output()}`);
        return (await memcachedCommand(target, 'version\r\n')).startsWith('VERSION');
      },
      { what: `memcached on ${port}`, timeoutMs: 10_000 },
    );
  };
  await start();
  const command = (text: string, until?: RegExp): Promise<string> => memcachedCommand(target, text, until);
  return {
    host,
    port,
    url: `${host}:${port}`,
    command,
    get: async (key) => {
      const r = await command(`get ${key}\r\n`, /END\r\n$/);
      const m = /^VALUE \S+ \d+ \d+\r\n(.*)\r\n/.exec(r);
      return m?.[1];
    },
    ttl: async (key) => {
      const r = await command(`mg ${key} t\r\n`, /(EN|HD[^\r]*)\r\n$/);
      const m = /^HD t(-?\d+)/.exec(r);
      return m === null ? undefined : Number(m[1]);
    },
    flushAll: async () => {
      await command('flush_all\r\n', /OK\r\n$/);
    },
    stop: async () => {
      await proc?.stop();
    },
    start,
  };
}
