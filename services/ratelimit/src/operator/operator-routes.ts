// The operator page's HTTP side on the debug server: the static page (plain HTML, CSS and one
// script from services/ratelimit/static/operator/, read once, no build step) and its JSON.
//   /operator/            the page           /operator/app.js, /operator/style.css
//   /operator/api/state   top list, rates, store, health, local cache, workers (polled every 5 s)
//   /operator/api/rules   rule tree and reload history (ETag: a poll with If-None-Match gets 304)
// OPERATOR_PAGE=loopback (the default) answers only clients on a loopback address that name a
// loopback host (so a DNS-rebound web page cannot read it either), whatever DEBUG_ACCESS says;
// `on` answers every client the debug server admits (its access rule runs before any route).
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isLoopbackAddress, isLoopbackHost } from '../server/debug-access.js';
import type { OperatorContext, OperatorMonitor } from './operator-monitor.js';
import type { OperatorPageMode } from './operator-settings.js';

export const OPERATOR_PREFIX = '/operator';

/** services/ratelimit/static/operator/ from src/operator/ (sources) or dist/src/operator/ (built). */
function staticDir(): URL {
  const fromSources = new URL('../../static/operator/', import.meta.url);
  const fromDist = new URL('../../../static/operator/', import.meta.url);
  return existsSync(new URL('index.html', fromSources)) ? fromSources : fromDist;
}
const FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/operator/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/operator/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/operator/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/operator/counters.js': { file: 'counters.js', type: 'text/javascript; charset=utf-8' },
};

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export interface OperatorRoutesOptions {
  readonly mode: Exclude<OperatorPageMode, 'off'>;
  readonly monitor: OperatorMonitor;
  readonly context: OperatorContext;
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body), ...extra });
  res.end(body);
}

export class OperatorRoutes {
  private readonly files = new Map<string, Buffer>();
  private dir: URL | undefined;

  constructor(private readonly opts: OperatorRoutesOptions) {}

  /** Answers a path under /operator (true), or leaves it (false). */
  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    if (path !== OPERATOR_PREFIX && !path.startsWith(OPERATOR_PREFIX + '/')) return false;
    if (this.opts.mode === 'loopback' && !(isLoopbackAddress(req.socket.remoteAddress) && isLoopbackHost(req.headers.host))) {
      send(
        res,
        403,
        'text/plain; charset=utf-8',
        'the operator page answers only loopback clients that name a loopback host (OPERATOR_PAGE=loopback); reach it through 127.0.0.1 (ssh -L or kubectl port-forward), or set OPERATOR_PAGE=on to let it follow the debug server\'s rule (DEBUG_ACCESS, DEBUG_ALLOWED_HOSTS)\n',
      );
      return true;
    }
    if (path === OPERATOR_PREFIX) {
      res.writeHead(301, { location: OPERATOR_PREFIX + '/', 'content-length': 0 });
      res.end();
      return true;
    }
    if (path === '/operator/api/state') {
      send(res, 200, 'application/json; charset=utf-8', JSON.stringify(this.opts.monitor.state(this.opts.context)));
      return true;
    }
    if (path === '/operator/api/rules') {
      const etag = `"rules-${this.opts.monitor.rules.currentGeneration}"`;
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { ...SECURITY_HEADERS, etag });
        res.end();
        return true;
      }
      send(res, 200, 'application/json; charset=utf-8', JSON.stringify(this.opts.monitor.rulesView()), { etag, 'cache-control': 'no-cache' });
      return true;
    }
    const f = FILES[path];
    if (f === undefined) {
      send(res, 404, 'text/plain; charset=utf-8', `no such operator resource: ${path.slice(0, 200)}; the page is at ${OPERATOR_PREFIX}/\n`);
      return true;
    }
    let body = this.files.get(f.file);
    if (body === undefined) {
      body = readFileSync(new URL(f.file, (this.dir ??= staticDir())));
      this.files.set(f.file, body);
    }
    send(res, 200, f.type, body, { 'cache-control': 'no-cache' });
    return true;
  }
}
