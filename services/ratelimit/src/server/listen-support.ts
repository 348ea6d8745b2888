// Listening chores both gRPC transports share: stale unix socket files, the TLS context options,
// and a listen() that rejects on EADDRINUSE and logs later server errors.
import cluster from 'node:cluster';
import { lstatSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import type { TransportLogger } from './transport-logger.js';

/**
 * A socket file left by a process that died is removed; one that something still listens on is
 * an error (EADDRINUSE), as is a path that is not a socket.
 *
 * Not in a cluster worker: there node:cluster binds the path in the primary, once, and shares the
 * handle, so the first worker's socket is live when the second one looks (it would refuse to
 * start); the primary ran this check once before forking (cluster/primary.ts).
 */
export async function removeStaleSocket(path: string): Promise<void> {
  if (cluster.isWorker) return;
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // nothing there
  }
  if (!isSocket) throw Object.assign(new Error(`listen EADDRINUSE: ${path} exists and is not a unix socket`), { code: 'EADDRINUSE' });
  const live = await new Promise<boolean>((resolve) => {
    const probe = net.connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw Object.assign(new Error(`listen EADDRINUSE: another process is listening on ${path}`), { code: 'EADDRINUSE' });
  unlinkSync(path);
}

export interface TlsPair {
  key: string | Buffer;
  cert: string | Buffer;
  ca?: string | Buffer | undefined;
}

export function tlsContextOptions(tls: TlsPair): { key: string | Buffer; cert: string | Buffer; ca?: string | Buffer } {
  return tls.ca !== undefined ? { key: tls.key, cert: tls.cert, ca: tls.ca } : { key: tls.key, cert: tls.cert };
}

/** Starts listening; the promise rejects on a listen error (EADDRINUSE), later errors are logged. */
export function listenOn(server: net.Server, logger: TransportLogger, start: (cb: () => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    start(() => {
      server.off('error', onError);
      server.on('error', (err: Error) => logger.error({ err }, 'grpc server error'));
      resolve();
    });
  });
}
