import type { IncomingMessage, ServerResponse } from 'node:http';
import { isPromise } from '../maybe-promise.js';
import type { AccessLog } from './access-log.js';
import type { CryptoPipeline } from './crypto-pipeline.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface FastQuoteDeps {
  pipeline: CryptoPipeline;
  /**
   * The request's scheme as fastify's `request.protocol` gives it without a trusted proxy (the
   * pre-router is not installed behind one unless PUBLIC_BASE_URL makes the scheme moot).
   */
  scheme: (req: IncomingMessage) => string;
  /**
   * fastify's access lines and request ids, when access logging is on (QUOTES_LOG_LEVEL info or
   * below); `clientIp` is fastify's `request.ip` without a trusted proxy.
   */
  access?: { log: AccessLog; requestId: () => string; clientIp: (req: IncomingMessage) => string } | undefined;
}

/** Requests the pre-router answered, by status class (index 1 to 5: 1xx to 5xx). */
export type FastQuoteCounts = number[];

const PATH = '/api/v2/crypto';
const PREFIX = '/api/v2/crypto?';

/**
 * The pre-router: `GET /api/v2/crypto` taken off node's server before fastify's per-request
 * pipeline (Request/Reply objects, hooks, async handler, header bookkeeping), which measured at
 * about twice the CPU of a whole cached quote. It decides from the request line and headers alone,
 * before anything is counted: a GET of exactly that path, without a body; everything else
 * (HEAD, other paths, bodies) goes to fastify untouched. A request it takes is answered by the
 * same CryptoPipeline as fastify's route, step for step, and written by the same writer, errors,
 * 304s, compression and history included; only the access lines are written here (AccessLog, in
 * fastify's format) instead of by fastify.
 */
export class FastQuotePath {
  /** Turned off when the server starts closing, so fastify answers the 503s. */
  enabled = true;
  readonly counts: FastQuoteCounts = [0, 0, 0, 0, 0, 0];
  constructor(private readonly deps: FastQuoteDeps) {}

  /** True when this request is answered here; false leaves it to the caller (fastify). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.enabled || req.method !== 'GET') return false;
    const url = req.url;
    if (url === undefined || !(url === PATH || url.startsWith(PREFIX)) || url.includes('#')) return false;
    const h = req.headers;
    if (h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false;
    const startedAt = performance.now();
    const d = this.deps;
    const access = d.access;
    let reqId: string | undefined;
    if (access !== undefined) {
      reqId = access.requestId();
      access.log.incoming(reqId, req, access.clientIp(req));
    }
    const done = d.pipeline.serve({ query: url.length === PATH.length ? '' : url.slice(PREFIX.length), headers: h, scheme: d.scheme(req), host: h.host, head: false, startedAt }, res);
    if (isPromise(done)) void done.then(() => this.completed(res, startedAt, reqId));
    else this.completed(res, startedAt, reqId);
    return true;
  }

  private completed(res: ServerResponse, startedAt: number, reqId: string | undefined): void {
    const status = res.statusCode;
    this.counts[status >= 100 && status < 600 ? Math.floor(status / 100) : 5]!++;
    if (reqId !== undefined) this.deps.access?.log.completed(reqId, status, performance.now() - startedAt);
  }
}

/**
 * Puts `fast` in front of the fastify request handler of `server` (fastify registers exactly
 * one 'request' listener); requests it does not take reach fastify as before.
 */
export function installFastPath(server: { listeners(event: 'request'): unknown[]; removeListener(event: 'request', l: RequestHandler): unknown; on(event: 'request', l: RequestHandler): unknown }, fast: FastQuotePath): boolean {
  const listeners = server.listeners('request');
  if (listeners.length !== 1) return false;
  const full = listeners[0] as RequestHandler;
  server.removeListener('request', full);
  server.on('request', (req, res) => {
    if (!fast.handle(req, res)) full(req, res);
  });
  return true;
}
