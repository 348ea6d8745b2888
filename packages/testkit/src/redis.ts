import { createConnection } from 'node:net';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { spawnManaged, tempDir, type Managed } from './process.js';
import { GiveUp, waitFor } from './wait.js';
import { assertMayStartServers } from './tier-guard.js';

/** A decoded RESP2 reply. Error replies are returned as `RedisReplyError` values by `readReply`. */
export type RespValue = string | number | null | RespValue[] | RedisReplyError;

/** An error reply (`-ERR ...`, `-WRONGPASS ...`) sent by the server. */
export class RedisReplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisReplyError';
  }
}

/** Where a test client connects: a TCP port or a unix socket path. */
export type RedisTarget = { host: string; port: number } | { path: string };

export interface RedisServer {
  host: string;
  port: number;
  /** `host:port`, the form KVSTORE_URL takes. */
  url: string;
  /** Path of the unix socket when started with `unixSocket: true`. */
  socketPath?: string;
  dir: string;
  /** Extra arguments the server was started with. */
  args: string[];
  /** Sends one command and returns the raw RESP reply text (CRLF shown as `\n`); error replies are returned, not thrown. */
  command: (...parts: string[]) => Promise<string>;
  /** Sends one command and returns the decoded reply; error replies reject with `RedisReplyError`. */
  call: (...parts: string[]) => Promise<RespValue>;
  /** Stops the server (data is not persisted). */
  stop: () => Promise<void>;
  /** Starts it again on the same port (and socket path). */
  start: () => Promise<void>;
}

export interface RedisOptions {
  port?: number;
  /** Extra redis-server arguments, e.g. ['--maxmemory', '10mb']. */
  args?: string[];
  /** Password used by `command()` (AUTH is sent first when set). */
  password?: string;
  /** Starts the server with `--requirepass <value>`; `command()` authenticates with it. */
  requirepass?: string;
  /** Also listen on a unix socket inside the server's temp dir (see `socketPath`). */
  unixSocket?: boolean;
  binary?: string;
}

const encode = (p: readonly string[]): string =>
  `*${p.length}\r\n` + p.map((x) => `$${Buffer.byteLength(x)}\r\n${x}\r\n`).join('');

/**
 * Reads one complete reply starting at `offset`. Returns the value and the offset after it, or
 * undefined when the buffer does not hold the whole reply yet.
 */
export function readReply(buf: Buffer, offset = 0): { value: RespValue; end: number } | undefined {
  const eol = buf.indexOf('\r\n', offset);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[offset] ?? 0);
  const line = buf.toString('utf8', offset + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new RedisReplyError(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, end: next };
      if (buf.length < next + len + 2) return undefined;
      return { value: buf.toString('utf8', next, next + len), end: next + len + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      const items: RespValue[] = [];
      let pos = next;
      for (let i = 0; i < n; i++) {
        const r = readReply(buf, pos);
        if (r === undefined) return undefined;
        items.push(r.value);
        pos = r.end;
      }
      return { value: items, end: pos };
    }
    default:
      throw new Error(`unexpected RESP type byte ${JSON.stringify(type)}`);
  }
}

/**
 * Sends commands over a fresh connection (AUTH first when `auth` is given, as `password` or
 * `user:password`) and resolves with the raw bytes of the last command's reply and its decoded value.
 */
async function exchange(
  target: RedisTarget,
  parts: readonly string[],
  auth?: string,
): Promise<{ raw: string; value: RespValue }> {
  const commands: string[][] = [];
  if (auth !== undefined) {
    const i = auth.indexOf(':');
    commands.push(i < 0 ? ['AUTH', auth] : ['AUTH', auth.slice(0, i), auth.slice(i + 1)]);
  }
  commands.push([...parts]);
  return await new Promise((resolve, reject) => {
    const sock = 'path' in target ? createConnection({ path: target.path }) : createConnection(target);
    let buf = Buffer.alloc(0);
    sock.setTimeout(3000, () => {
      sock.destroy();
      reject(new Error('redis command timed out'));
    });
    sock.on('error', reject);
    sock.on('connect', () => sock.write(commands.map(encode).join('')));
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      let pos = 0;
      let start = 0;
      let last: RespValue = null;
      for (let i = 0; i < commands.length; i++) {
        start = pos;
        const r = readReply(buf, pos);
        if (r === undefined) return;
        last = r.value;
        pos = r.end;
      }
      sock.end();
      resolve({ raw: buf.toString('utf8', start, pos).replace(/\r\n$/, '').replaceAll('\r\n', '\n'), value: last });
    });
  });
}

/** Sends a RESP array command over a fresh connection and returns the raw reply text. */
export async function rawRedisCommand(host: string, port: number, parts: string[], password?: string): Promise<string> {
  return (await exchange({ host, port }, parts, password)).raw;
}

/** Sends one command over a fresh connection and returns the decoded reply; error replies reject. */
export async function redisCall(target: RedisTarget, parts: string[], auth?: string): Promise<RespValue> {
  const { value } = await exchange(target, parts, auth);
  if (value instanceof RedisReplyError) throw value;
  return value;
}

/** Starts a private redis-server on a free loopback port, keeping nothing on disk. */
export async function startRedis(opts: RedisOptions = {}): Promise<RedisServer> {
  assertMayStartServers('startRedis');
  const host = '127.0.0.1';
  const port = opts.port ?? (await freePort());
  const dir = tempDir('rls-redis-');
  const args = [...(opts.args ?? [])];
  if (opts.requirepass !== undefined) args.push('--requirepass', opts.requirepass);
  const password = opts.password ?? opts.requirepass;
  const socketPath = opts.unixSocket === true ? join(dir.path, 'redis.sock') : undefined;
  const sockArgs = socketPath !== undefined ? ['--unixsocket', socketPath, '--unixsocketperm', '700'] : [];
  let proc: Managed | undefined;

  const start = async (): Promise<void> => {
    const p = spawnManaged(opts.binary ?? 'redis-server', [
      '--port', String(port), '--bind', host, '--save', '', '--appendonly', 'no', '--dir', dir.path,
      '--daemonize', 'no', '--protected-mode', 'no', ...sockArgs, ...args,
    ]);
    proc = p;
    await waitFor(
      async () => {
        if (p.proc.exitCode !== null) throw new GiveUp(`redis-server exited: ${p.output()}`);
        return (await rawRedisCommand(host, port, ['PING'], password)).includes('PONG');
      },
      { what: `redis on ${port}`, timeoutMs: 10_000 },
    );
  };
  await start();
  const server: RedisServer = {
    host,
    port,
    url: `${host}:${port}`,
    dir: dir.path,
    args,
    command: (...parts) => rawRedisCommand(host, port, parts, password),
    call: (...parts) => redisCall({ host, port }, parts, password),
    stop: async () => {
      await proc?.stop();
    },
    start,
  };
  if (socketPath !== undefined) server.socketPath = socketPath;
  return server;
}
