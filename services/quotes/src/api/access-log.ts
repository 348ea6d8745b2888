import type { IncomingMessage } from 'node:http';
import { serializeRequest, type AccessSink, type LoggedRequest } from '../logger.js';

/** The `info` method of the framework's logger (fastify's root logger, with its serializers). */
export interface AccessLogger {
  info(obj: object, msg: string): void;
}

/**
 * Request ids in fastify's default format (`req-1`, `req-2`, ... in base 36, wrapping below
 * 2^31), from one counter shared by fastify (its `genReqId` option) and the fast path, so ids
 * stay unique and ordered whichever path answers. Like fastify 5's default, no request header
 * (such as X-Request-Id) is trusted as an id.
 */
export function requestIdGenerator(): () => string {
  let next = 0;
  return () => {
    next = (next + 1) & 0x7fffffff;
    return `req-${next.toString(36)}`;
  };
}

/** Characters of access lines held before a write even within one event-loop turn. */
const PENDING_MAX = 64 * 1024;

/** pino's `info` level and the end of every line (no custom levels, formatters or message key: createLogger's). */
const LEVEL = '{"level":30';
const END = '}\n';

/**
 * fastify's two access lines for a request answered outside its pipeline: the same messages,
 * level and fields ("incoming request" with `req`, "request completed" with `res` and
 * `responseTime` in milliseconds, both bound to `reqId`), in a format this module owns: the
 * line is assembled here from the root logger's sink (AccessSink: destination and bindings,
 * made by createLogging) and the service's own request serializer (serializeRequest, the one
 * fastify's logger uses), with the serialized `req` of the last URL and address reused. Through
 * pino's generic `info` the two lines cost more than the whole cached quote (the redaction's
 * wildcard paths walk every key). The fast-path test compares the lines with fastify's, field
 * by field. Without a sink (a logger made by the caller), the lines go through `info`.
 */
export class AccessLog {
  private lastReq: LoggedRequest | undefined;
  private lastReqJson = '';
  private readonly resJson = new Map<number, string>();
  /** Lines not yet handed to the stream (see `push`). */
  private pending = '';
  private scheduled = false;
  private readonly flushSoon = (): void => this.flush();

  constructor(
    private readonly log: AccessLogger,
    private readonly sink: AccessSink | undefined,
  ) {}

  /**
   * Hands the lines of one event-loop turn to the stream in one write. pino's default
   * destination (sonic-boom, asynchronous) measures the whole string it is still buffering on
   * every write, which under load cost more per line (~4 µs) than the rest of the access log; the
   * lines keep their order and reach the stream before the next turn's I/O (at most
   * PENDING_MAX characters wait).
   */
  private push(line: string): void {
    this.pending += line;
    if (this.pending.length >= PENDING_MAX) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushSoon);
    }
  }

  /** Writes the pending lines now (also called by the turn's scheduled flush). */
  flush(): void {
    this.scheduled = false;
    if (this.pending === '' || this.sink === undefined) return;
    const lines = this.pending;
    this.pending = '';
    this.sink.write(lines);
  }

  /** `ip`: the client address as fastify's `request.ip` gives it. */
  incoming(reqId: string, req: IncomingMessage, ip: string | undefined): void {
    const sink = this.sink;
    if (sink === undefined) {
      this.log.info({ reqId, req: { method: req.method, url: req.url, ip } }, 'incoming request');
      return;
    }
    const last = this.lastReq;
    // Only these fields vary between requests of the fast path (GET /api/v2/crypto?...).
    if (last === undefined || last.url !== req.url || last.ip !== ip || last.method !== req.method) {
      const logged: LoggedRequest = { method: req.method, url: req.url, ip };
      this.lastReq = logged;
      this.lastReqJson = JSON.stringify(serializeRequest(logged));
    }
    this.push(`${LEVEL},"time":${Date.now()}${sink.bindings},"reqId":"${reqId}","req":${this.lastReqJson},"msg":"incoming request"${END}`);
  }

  completed(reqId: string, statusCode: number, responseTime: number): void {
    const sink = this.sink;
    if (sink === undefined) {
      this.log.info({ reqId, res: { statusCode }, responseTime }, 'request completed');
      return;
    }
    let res = this.resJson.get(statusCode);
    if (res === undefined) {
      res = `{"statusCode":${statusCode}}`;
      this.resJson.set(statusCode, res);
    }
    this.push(`${LEVEL},"time":${Date.now()}${sink.bindings},"reqId":"${reqId}","res":${res},"responseTime":${Number.isFinite(responseTime) ? responseTime : null},"msg":"request completed"${END}`);
  }
}
