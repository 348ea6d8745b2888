import { readFileSync, mkdirSync, openSync, writeSync, closeSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Ports for test servers are taken BELOW the kernel's ephemeral range on purpose.
 *
 * A port the kernel hands out with listen(0) lies inside ip_local_port_range, the same
 * range it draws source ports from for outgoing connections. Between "port found" and
 * "server listening" (and, worse, while a test has stopped a server to restart it on the
 * same port) any outgoing connection on the machine may be given that port as its local
 * end; a client that keeps reconnecting to the stopped server can even connect to itself
 * (TCP simultaneous open on 127.0.0.1:P -> 127.0.0.1:P). Either way the restart fails
 * with EADDRINUSE. Ports outside the ephemeral range are never used as source ports.
 *
 * Parallel test processes coordinate through reservation files (one per port, holding
 * the owner's pid) so two files never receive the same port; a file whose owner is gone
 * is taken over.
 */

const FALLBACK_EPHEMERAL_LOW = 32768;
const LOWEST = 10000;

function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const n = Number(low);
    return Number.isInteger(n) && n > LOWEST + 1000 ? n : FALLBACK_EPHEMERAL_LOW;
  } catch {
    return FALLBACK_EPHEMERAL_LOW;
  }
}

const reservationDir = join(tmpdir(), 'rls-testkit-ports');
const mine = new Set<number>();
let cleanupInstalled = false;

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function writeOwner(path: string, flags: 'wx' | 'w'): boolean {
  try {
    const fd = openSync(path, flags);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch {
    return false;
  }
}

/** Claims `port` for this process across all test processes on the machine. */
function reserve(port: number): boolean {
  if (mine.has(port)) return false;
  mkdirSync(reservationDir, { recursive: true });
  const path = join(reservationDir, String(port));
  if (!writeOwner(path, 'wx')) {
    let owner = NaN;
    try {
      owner = Number(readFileSync(path, 'utf8'));
    } catch {
      return false;
    }
    if (alive(owner)) return false;
    // Stale reservation: remove and race for it again; exactly one 'wx' wins.
    try {
      unlinkSync(path);
    } catch {
      /* another process took it first */
    }
    if (!writeOwner(path, 'wx')) return false;
  }
  mine.add(port);
  if (!cleanupInstalled) {
    cleanupInstalled = true;
    process.once('exit', () => {
      for (const p of mine) {
        try {
          unlinkSync(join(reservationDir, String(p)));
        } catch {
          /* already gone */
        }
      }
    });
  }
  return true;
}

function release(port: number): void {
  mine.delete(port);
  try {
    unlinkSync(join(reservationDir, String(port)));
  } catch {
    /* already gone */
  }
}

async function canBind(port: number, host: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * A free TCP port on `host` for a test server, outside the ephemeral range and reserved
 * for this process (never returned twice, never given to a parallel test process).
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const high = ephemeralLow() - 1;
  const span = high - LOWEST + 1;
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * span);
    if (!reserve(port)) continue;
    if (await canBind(port, host)) return port;
    release(port);
  }
  throw new Error(`freePort: no free port found in ${LOWEST}-${high} on ${host}`);
}
