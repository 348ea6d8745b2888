// The listener of `GET /metrics` (QUOTES_METRICS_PORT / _HOST): a port of its own, on loopback by
// default, so the public API never shows internals and a scrape never competes with API clients.
//
// What a client of this port controls, and the bound that holds it: connections (at most
// QUOTES_METRICS_MAX_CONNECTIONS; more are closed at once), time (headers within 5 s, a whole
// request within 10 s, idle keep-alive 5 s, any silent socket 10 s), bytes (16 KiB of headers, no
// body is read). The answer is the same for every request, so nothing a client sends is kept.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';

export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

export interface MetricsListenOptions {
  host: string;
  port: number;
  maxConnections: number;
}

export interface MetricsServer {
  readonly address: AddressInfo;
  close(): Promise<void>;
}

export const METRICS_TIMEOUTS = { headersMs: 5000, requestMs: 10_000, keepAliveMs: 5000, idleMs: 10_000, maxHeaderBytes: 16 * 1024 } as const;

function answer(source: MetricsSource, log: Logger, req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics') {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: the metrics are at /metrics\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
    return;
  }
  source.metrics().then(
    (body) => {
      res.writeHead(200, { 'content-type': source.contentType, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    },
    (err: unknown) => {
      log.error({ err: err instanceof Error ? err.message : String(err) }, 'metrics scrape failed');
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('scrape failed\n');
    },
  );
}

/** Listens; rejects (EADDRINUSE, EACCES) so a taken port stops the start-up with a clear error. */
export async function startMetricsServer(opts: MetricsListenOptions, source: MetricsSource, log: Logger): Promise<MetricsServer> {
  const server: Server = createServer(
    { connectionsCheckingInterval: 1000, headersTimeout: METRICS_TIMEOUTS.headersMs, requestTimeout: METRICS_TIMEOUTS.requestMs, keepAliveTimeout: METRICS_TIMEOUTS.keepAliveMs, maxHeaderSize: METRICS_TIMEOUTS.maxHeaderBytes },
    (req, res) => answer(source, log, req, res),
  );
  server.maxConnections = opts.maxConnections;
  server.setTimeout(METRICS_TIMEOUTS.idleMs, (socket) => socket.destroy());
  let dropped = 0;
  server.on('drop', () => {
    if (dropped++ % 1000 === 0) log.warn({ maxConnections: opts.maxConnections, dropped }, 'metrics listener full: connection closed (QUOTES_METRICS_MAX_CONNECTIONS)');
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error): void => reject(new Error(`metrics listener on ${opts.host}:${opts.port}: ${err.message} (QUOTES_METRICS_PORT=0 turns it off)`, { cause: err }));
    server.once('error', failed);
    server.listen(opts.port, opts.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  server.on('error', (err) => log.error({ err: err.message }, 'metrics listener error'));
  const address = server.address() as AddressInfo;
  log.info({ host: address.address, port: address.port }, 'metrics at /metrics');
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
