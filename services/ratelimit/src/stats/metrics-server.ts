// The pull-metrics listener (PULL_METRICS_ADDR, PULL_METRICS_PATH): a tiny HTTP server with one
// path. It has its own port, as upstream, so scraping stays independent of the API listeners.
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.js';
import { ConnectionGuard, createBoundedHttpServer, DEFAULT_HTTP_TIMEOUTS } from '../server/connection-guard.js';

export interface ListenAddress {
  /** undefined = every interface (Go's `:9090`). */
  host: string | undefined;
  port: number;
}

/** Accepts `:9090`, `host:9090` and `[::1]:9090` (Go's listen syntax). Throws an Error saying what was expected. */
export function parseListenAddress(raw: string): ListenAddress {
  const s = raw.trim();
  let host: string | undefined;
  let portText: string;
  const v6 = /^\[([^\]]+)\]:(\d+)$/.exec(s);
  if (v6 !== null) {
    host = v6[1];
    portText = v6[2] ?? '';
  } else {
    const i = s.lastIndexOf(':');
    if (i < 0 || s.slice(0, i).includes(':')) throw new Error('expected [host]:port, e.g. :9090 or 127.0.0.1:9090');
    host = i === 0 ? undefined : s.slice(0, i);
    portText = s.slice(i + 1);
  }
  if (!/^\d+$/.test(portText) || Number(portText) > 65535) throw new Error('expected a port between 0 and 65535 after the colon');
  return { host, port: Number(portText) };
}

export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

export interface MetricsServer {
  readonly address: AddressInfo;
  close(): Promise<void>;
}

/** Default of PULL_METRICS_MAX_CONNECTIONS: a few scrapers, with room for retries. */
export const DEFAULT_METRICS_MAX_CONNECTIONS = 16;

export async function startMetricsServer(
  opts: { address: ListenAddress; path: string; maxConnections?: number | undefined },
  source: MetricsSource,
  logger: Logger,
): Promise<MetricsServer> {
  // Scrapes are one short GET: the default header/request/keep-alive timeouts fit them.
  const server = createBoundedHttpServer(DEFAULT_HTTP_TIMEOUTS, (req, res) => {
    guard.requestStarted(req, res);
    const path = (req.url ?? '/').split('?')[0];
    if (path !== opts.path) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    source.metrics().then(
      (body) => {
        res.writeHead(200, { 'content-type': source.contentType });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        logger.error({ err: err instanceof Error ? err.message : String(err) }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('scrape failed\n');
      },
    );
  });
  const guard = new ConnectionGuard(server, {
    maxConnections: opts.maxConnections ?? DEFAULT_METRICS_MAX_CONNECTIONS,
    name: 'metrics server',
    setting: 'PULL_METRICS_MAX_CONNECTIONS',
    logger,
    headersTimeoutMs: DEFAULT_HTTP_TIMEOUTS.headersTimeoutMs,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.address.port, opts.address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err: err.message }, 'metrics server error'));
  return {
    address: server.address() as AddressInfo,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
