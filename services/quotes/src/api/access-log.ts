import type { IncomingMessage } from 'node:http';
import pino from 'pino';

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

/** What fastify's request serializers read (the service's own reads method, url and ip). */
interface LoggedRequest {
  method: string | undefined;
  url: string | undefined;
  ip: string | undefined;
  host: string | undefined;
  headers: IncomingMessage['headers'];
  socket: IncomingMessage['socket'];
}

/** Characters of access lines held before a write even within one event-loop turn. */
const PENDING_MAX = 64 * 1024;

type Stringifier = (value: unknown, safe?: unknown) => string | undefined;

/** The pino internals a line is assembled from (see `compileLines`). */
interface PinoParts {
  level: string;
  time: () => string;
  chindings: string;
  end: string;
  serializeReq: (req: LoggedRequest) => unknown;
  serializeRes: (res: { statusCode: number }) => unknown;
  stringifyReq: Stringifier;
  stringifyRes: Stringifier;
  write: (line: string) => void;
}

/**
 * Reads, from a plain pino logger, what its `info` writes a line from: the level and time
 * prefixes, the bindings (pid, hostname, ...), the `req`/`res` serializers, the stringifiers that
 * apply the redaction to those keys, and the stream. Undefined when the logger does anything
 * per line these parts do not capture (a mixin, log formatter, nested key, stream hook or a
 * stream that wants metadata): the caller then logs through `info`.
 */
function compileLines(log: object): PinoParts | undefined {
  const s = pino.symbols;
  const l = log as Record<symbol, unknown>;
  const stream = l[s.streamSym] as { write(line: string): unknown; [k: symbol]: unknown } | undefined;
  const formatters = l[s.formattersSym] as { log?: unknown } | undefined;
  const hooks = l[s.hooksSym] as { streamWrite?: unknown } | undefined;
  const serializers = l[s.serializersSym] as Record<string, ((v: unknown) => unknown) | undefined> | undefined;
  const stringifiers = (l[s.stringifiersSym] ?? {}) as Record<string | symbol, Stringifier | undefined>;
  const stringify = l[s.stringifySym] as Stringifier | undefined;
  const lsCache = l[s.lsCacheSym] as Record<number, string> | undefined;
  const time = l[s.timeSym] as (() => string) | undefined;
  const chindings = l[s.chindingsSym];
  const end = l[s.endSym];
  if (stream === undefined || typeof stream.write !== 'function' || stream[s.needsMetadataGsym] === true) return undefined;
  if (l[s.mixinSym] !== undefined && l[s.mixinSym] !== null) return undefined;
  if (formatters?.log !== undefined || hooks?.streamWrite !== undefined || l[s.nestedKeySym] || l[s.messageKeySym] !== 'msg') return undefined;
  if (stringify === undefined || lsCache?.[30] === undefined || time === undefined || typeof chindings !== 'string' || typeof end !== 'string') return undefined;
  const wildcard = stringifiers[s.wildcardFirstSym as symbol];
  const serializeReq = serializers?.req;
  const serializeRes = serializers?.res;
  const safe = l[s.stringifySafeSym];
  const withSafe = (f: Stringifier): Stringifier => (v) => f(v, safe);
  return {
    level: lsCache[30],
    time: () => time.call(log),
    chindings,
    end,
    serializeReq: serializeReq ?? ((r) => r),
    serializeRes: serializeRes ?? ((r) => r),
    stringifyReq: withSafe(stringifiers.req ?? wildcard ?? stringify),
    stringifyRes: withSafe(stringifiers.res ?? wildcard ?? stringify),
    write: (line) => void stream.write(line),
  };
}

/**
 * fastify's two access lines for a request answered outside its pipeline: the same messages,
 * level and fields ("incoming request" with `req`, "request completed" with `res` and
 * `responseTime` in milliseconds, both bound to `reqId`), from fastify's own logger so its
 * serializers and redaction apply alike. Through pino's generic `info` the two lines cost more
 * than the whole cached quote (the redaction's wildcard paths walk every key), so, when the
 * logger is a plain pino logger, the lines are assembled from its own parts (`compileLines`)
 * with the serialized `req` of the last URL and address reused: the same bytes (the fast-path
 * test compares them with fastify's lines), a fraction of the work.
 */
export class AccessLog {
  private readonly parts: PinoParts | undefined;
  private lastReq: LoggedRequest | undefined;
  private lastReqJson = '';
  private readonly resJson = new Map<number, string>();
  /** Lines not yet handed to the stream (see `push`). */
  private pending = '';
  private scheduled = false;
  private readonly flushSoon = (): void => this.flush();

  constructor(private readonly log: AccessLogger) {
    this.parts = compileLines(log);
  }

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
    if (this.pending === '' || this.parts === undefined) return;
    const lines = this.pending;
    this.pending = '';
    this.parts.write(lines);
  }

  /** `ip`: the client address as fastify's `request.ip` gives it. */
  incoming(reqId: string, req: IncomingMessage, ip: string | undefined): void {
    const logged: LoggedRequest = { method: req.method, url: req.url, ip, host: req.headers.host, headers: req.headers, socket: req.socket };
    const p = this.parts;
    if (p === undefined) {
      this.log.info({ reqId, req: logged }, 'incoming request');
      return;
    }
    const last = this.lastReq;
    // Only these four fields vary between requests of the fast path (GET /api/v2/crypto?...).
    if (last === undefined || last.url !== logged.url || last.ip !== logged.ip || last.host !== logged.host || last.method !== logged.method) {
      const json = p.stringifyReq(p.serializeReq(logged));
      if (json === undefined) {
        this.log.info({ reqId, req: logged }, 'incoming request');
        return;
      }
      this.lastReq = logged;
      this.lastReqJson = json;
    }
    this.push(`${p.level}${p.time()}${p.chindings},"reqId":"${reqId}","req":${this.lastReqJson},"msg":"incoming request"${p.end}`);
  }

  completed(reqId: string, statusCode: number, responseTime: number): void {
    const p = this.parts;
    if (p === undefined) {
      this.log.info({ reqId, res: { statusCode }, responseTime }, 'request completed');
      return;
    }
    let res = this.resJson.get(statusCode);
    if (res === undefined) {
      res = p.stringifyRes(p.serializeRes({ statusCode })) ?? `{"statusCode":${statusCode}}`;
      this.resJson.set(statusCode, res);
    }
    this.push(`${p.level}${p.time()}${p.chindings},"reqId":"${reqId}","res":${res},"responseTime":${Number.isFinite(responseTime) ? responseTime : null},"msg":"request completed"${p.end}`);
  }
}
