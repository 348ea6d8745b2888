// The HTTP/1.1 interface: `POST /json` (ShouldRateLimit with the proto3 JSON mapping) and
// `GET /healthcheck`. Transport only: it parses, calls the one service function and maps the
// outcome to a status code.
//
// Deliberate differences from upstream (which answers every failure with 400 "Bad Request"):
// - errors carry a JSON body `{"error": "<message>"}` naming the problem (field path for JSON
//   mapping errors), so callers can fix their request;
// - no_config and store_unavailable answer 503 (retryable) instead of 400, matching the gRPC
//   mapping to UNAVAILABLE;
// - `/json` answers only POST. Upstream registers the route for every method, but a GET without a
//   body could only ever produce 400 and no documented client uses another verb, so other methods
//   get 405 with `Allow: POST`, which tells a misconfigured caller what is wrong;
// - every input is bounded (limits-settings.ts): body size (413), descriptors, entries and entry
//   length (400 naming the limit, checked while mapping the JSON), header/request/keep-alive
//   timeouts and the number of connections (connection-guard.ts);
// - a body with a Content-Encoding other than identity gets 415 naming the encoding. Bodies are
//   never inflated here (upstream does not either, and then fails to parse the bytes as JSON),
//   so compressed input cannot grow beyond HTTP_MAX_BODY_BYTES.
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DEFAULT_REQUEST_LIMITS,
  encodeRateLimitResponseJson,
  isRequestLimitError,
  JsonMappingError,
  parseRateLimitRequestJson,
  type RequestLimits,
} from '@rls/rls-proto';
import { ConnectionGuard, createBoundedHttpServer, DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from './connection-guard.js';
import { LIMIT_SETTING_DEFS } from './limits-settings.js';
import { isRateLimitError, type MaybePromise, type RateLimitRequest, type RateLimitResponse } from '@rls/engine';
import type { CallContext } from './grpc-server-types.js';
import type { HealthSource } from './health-source.js';
import { silentLogger, type TransportLogger } from './transport-logger.js';

export interface HttpServerOptions {
  /** The decision (answered at once or later; a failure thrown or rejected: the `await` below takes both). */
  shouldRateLimit: (req: RateLimitRequest, ctx: CallContext) => MaybePromise<RateLimitResponse>;
  health: HealthSource;
  logger?: TransportLogger | undefined;
  /** Largest accepted `/json` body in bytes (default HTTP_MAX_BODY_BYTES' default). */
  maxBodyBytes?: number | undefined;
  /** Shape limits of a request (default DEFAULT_REQUEST_LIMITS). */
  requestLimits?: RequestLimits | undefined;
  timeouts?: HttpTimeouts | undefined;
  /** Most open connections (default HTTP_MAX_CONNECTIONS' default; 0 = no limit). */
  maxConnections?: number | undefined;
}

export interface HttpServer {
  listen(host: string, port: number): Promise<void>;
  address(): AddressInfo | string | null;
  /**
   * Graceful stop: refuse new connections, close idle keep-alive connections, let in-flight
   * requests finish (their connections close after the response); after `graceMs` (default
   * 10 s) the remaining connections are destroyed.
   */
  close(graceMs?: number): Promise<void>;
}

const DEFAULT_MAX_BODY = Number(LIMIT_SETTING_DEFS.httpMaxBodyBytes.default);
const DEFAULT_MAX_CONNECTIONS = Number(LIMIT_SETTING_DEFS.httpMaxConnections.default);

/**
 * The call context of one /json request. Like the gRPC one, the abort signal (and the 'close'
 * listener behind it) is made only when a handler reads it, so the hot path does not pay for it.
 */
class HttpCallContext implements CallContext {
  private controller: AbortController | undefined;
  constructor(
    private readonly res: ServerResponse,
    readonly headers: IncomingMessage['headers'],
  ) {}
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController();
      this.controller = controller;
      const abort = (): void => controller.abort(new Error('client closed the connection'));
      // 'close' on the response before it finished means the client went away.
      if (this.res.destroyed && !this.res.writableFinished) abort();
      else this.res.once('close', () => !this.res.writableFinished && abort());
    }
    return this.controller.signal;
  }
}

function sendJson(res: ServerResponse, status: number, body: string, extraHeaders?: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...extraHeaders });
  res.end(body);
}

function sendError(res: ServerResponse, status: number, message: string, extraHeaders?: Record<string, string>): void {
  sendJson(res, status, JSON.stringify({ error: message }), extraHeaders);
}


function statusForOverallCode(code: number): number {
  if (code === 2) return 429;
  if (code === 1) return 200;
  // UNKNOWN (an empty response) is a server-side failure, as upstream treats it.
  return 500;
}

class HttpServerImpl {
  readonly server: http.Server;
  private readonly opts: HttpServerOptions;
  private readonly logger: TransportLogger;
  private readonly maxBody: number;
  private readonly limits: RequestLimits;
  private readonly guard: ConnectionGuard;
  private closing = false;
  /** Responses not yet finished; on close they get `connection: close` so keep-alive ends with them. */
  private readonly inFlight = new Set<ServerResponse>();

  constructor(opts: HttpServerOptions) {
    this.opts = opts;
    this.logger = opts.logger ?? silentLogger;
    this.maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY;
    this.limits = opts.requestLimits ?? DEFAULT_REQUEST_LIMITS;
    // Unparsable HTTP is left to Node's default clientError handling (400/431, and nothing
    // after a response that is already on the wire); so are the timeouts (408 / close).
    this.server = createBoundedHttpServer(opts.timeouts ?? DEFAULT_HTTP_TIMEOUTS, (req, res) => this.route(req, res));
    this.guard = new ConnectionGuard(this.server, {
      maxConnections: opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      name: 'HTTP server',
      setting: LIMIT_SETTING_DEFS.httpMaxConnections.name,
      logger: this.logger,
      headersTimeoutMs: (opts.timeouts ?? DEFAULT_HTTP_TIMEOUTS).headersTimeoutMs,
    });
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    // While draining, finish this response and then let the connection go.
    if (this.closing) res.setHeader('connection', 'close');
    else this.inFlight.add(res);
    res.once('finish', () => this.inFlight.delete(res));
    this.guard.requestStarted(req, res);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    try {
      if (path === '/json') {
        if (req.method !== 'POST') {
          req.resume();
          sendError(res, 405, `method ${req.method ?? ''} not allowed on /json; use POST`, { allow: 'POST' });
          return;
        }
        this.handleJson(req, res);
      } else if (path === '/healthcheck') {
        req.resume();
        // Upstream answers this path for any method; so do we.
        if (this.opts.health.isHealthy()) {
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': 2 });
          res.end('OK');
        } else {
          res.writeHead(500, { 'content-length': 0 });
          res.end();
        }
      } else {
        req.resume();
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('404 page not found\n');
      }
    } catch (err) {
      this.logger.error({ err }, 'http request handling failed');
      if (!res.headersSent) sendError(res, 500, 'internal error');
      else res.destroy();
    }
  }

  private handleJson(req: IncomingMessage, res: ServerResponse): void {
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      sendError(res, 415, `Content-Encoding "${encoding.slice(0, 64)}" is not supported on /json; send the body uncompressed`, { connection: 'close' });
      req.resume();
      return;
    }
    const declared = Number(req.headers['content-length'] ?? '0');
    if (declared > this.maxBody) {
      this.tooLarge(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let aborted = false;
    // A client still sending its body is as evictable as one still sending headers.
    if (!req.complete) this.guard.bodyReading(req);
    req.on('data', (chunk: Buffer) => {
      if (aborted) return;
      size += chunk.length;
      if (size > this.maxBody) {
        aborted = true;
        this.tooLarge(req, res);
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', (err) => {
      aborted = true;
      this.logger.debug({ err }, 'http request body read failed');
    });
    req.on('end', () => {
      if (aborted) return;
      this.guard.bodyComplete(req);
      void this.answerJson(res, Buffer.concat(chunks, size).toString('utf8'), req.headers);
    });
  }

  private tooLarge(req: IncomingMessage, res: ServerResponse): void {
    // The rest of the body is not read, so the connection cannot be reused.
    sendError(res, 413, `request body larger than ${this.maxBody} bytes (limit set by ${LIMIT_SETTING_DEFS.httpMaxBodyBytes.name})`, { connection: 'close' });
    req.resume();
  }

  /** Never rejects: every outcome becomes a response. */
  private async answerJson(res: ServerResponse, text: string, headers: IncomingMessage['headers']): Promise<void> {
    let parsed: RateLimitRequest;
    try {
      parsed = parseRateLimitRequestJson(text, this.limits);
    } catch (err) {
      if (err instanceof JsonMappingError || isRequestLimitError(err)) sendError(res, 400, err.message);
      else {
        this.logger.error({ err }, '/json parse failed');
        sendError(res, 500, 'internal error');
      }
      return;
    }
    let out: RateLimitResponse;
    try {
      out = await this.opts.shouldRateLimit(parsed, new HttpCallContext(res, headers));
    } catch (err) {
      if (res.destroyed) return;
      if (isRateLimitError(err) && err.code === 'invalid_request') sendError(res, 400, err.message);
      else if (isRateLimitError(err) && (err.code === 'no_config' || err.code === 'store_unavailable')) sendError(res, 503, err.message);
      else {
        this.logger.error({ err }, 'ShouldRateLimit failed');
        sendError(res, 500, 'internal error');
      }
      return;
    }
    if (res.destroyed) return;
    let body: string;
    try {
      body = encodeRateLimitResponseJson(out);
    } catch (err) {
      this.logger.error({ err }, '/json response encoding failed');
      sendError(res, 500, 'internal error');
      return;
    }
    sendJson(res, statusForOverallCode(out.overallCode), body);
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        this.server.on('error', (err: Error) => this.logger.error({ err }, 'http server error'));
        resolve();
      });
    });
  }

  async close(graceMs: number): Promise<void> {
    this.closing = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    const force = setTimeout(() => this.server.closeAllConnections(), graceMs);
    await closed;
    clearTimeout(force);
  }
}

export function createHttpServer(opts: HttpServerOptions): HttpServer {
  const impl = new HttpServerImpl(opts);
  return {
    listen: (host, port) => impl.listen(host, port),
    address: () => impl.server.address(),
    close: (graceMs = 10_000) => impl.close(graceMs),
  };
}
