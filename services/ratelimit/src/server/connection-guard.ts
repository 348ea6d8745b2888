// Bounds for a node:http server (every input bounded by a documented setting): header, request and keep-alive timeouts, and a
// cap on open connections that makes room for a newcomer instead of turning it away.
//
// Node's own `server.maxConnections` drops the newest connection silently. That lets an attacker
// holding the cap with idle or slowly-sent requests (slowloris) lock out everyone, health checks
// included. Here a connection is *evictable* while it is not having a request handled: it has
// not sent complete headers yet, is an idle keep-alive connection, or is still uploading a body.
// At the cap, the connection that has been evictable the longest is closed to make room; only
// when every open connection has a request being handled is the newcomer refused, with a log
// line. Handled requests are short (no handler waits on the client), so that state does not last.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TransportLogger } from './transport-logger.js';

export interface HttpTimeouts {
  /** Time allowed to receive the complete request headers (ms; 0 = none). */
  headersTimeoutMs: number;
  /** Time allowed to receive the complete request, body included (ms; 0 = none). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long (ms). */
  keepAliveTimeoutMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = Object.freeze({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000 });

/**
 * How often node checks the header and request timeouts (it scans every connection then). Node's
 * default (30 s) would let expired connections linger up to 30 s past their timeout.
 */
function checkingIntervalMs(t: HttpTimeouts): number {
  const shortest = Math.min(...[t.headersTimeoutMs, t.requestTimeoutMs].filter((v) => v > 0), 30_000);
  return Math.max(100, Math.min(1_000, Math.floor(shortest / 4)));
}

/** An http.Server with the timeouts applied (node requires them at or after creation). */
export function createBoundedHttpServer(
  t: HttpTimeouts,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): http.Server {
  const server = http.createServer({ connectionsCheckingInterval: checkingIntervalMs(t) }, handler);
  // Node rejects a headers timeout above the request timeout (both non-zero).
  server.requestTimeout = t.requestTimeoutMs;
  server.headersTimeout = t.requestTimeoutMs > 0 && t.headersTimeoutMs > 0 ? Math.min(t.headersTimeoutMs, t.requestTimeoutMs) : t.headersTimeoutMs;
  server.keepAliveTimeout = t.keepAliveTimeoutMs;
  return server;
}

interface ConnState {
  /** Requests of this connection being handled (not finished). */
  active: number;
  /** A request whose body is still arriving (counts as evictable, like a slow header sender). */
  reading: boolean;
  /** When the connection last became evictable (ms). */
  since: number;
}

export interface ConnectionGuardOptions {
  /** Most open connections (0 = no limit). */
  maxConnections: number;
  /** Names the listener and its setting in log lines, e.g. `http` and `HTTP_MAX_CONNECTIONS`. */
  name: string;
  setting: string;
  logger: TransportLogger;
  /** Shortest time between two "limit reached" log lines (ms, default 10 s): an attack must not flood the log. */
  logIntervalMs?: number | undefined;
  now?: (() => number) | undefined;
  /**
   * The listener's header timeout (ms; 0 = none). The guard closes connections that have waited
   * this long without complete headers itself, at most REAP_PER_TURN per event-loop turn: node's
   * own check answers every expired connection in one turn, and a slowloris flood of a thousand
   * connections expiring together stalled other clients for ~90 ms. Node's check stays as a backstop.
   */
  headersTimeoutMs?: number | undefined;
}

/** Connections closed by one reaping turn before it yields to other work. */
const REAP_PER_TURN = 16;
const TIMEOUT_RESPONSE = Buffer.from('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', 'latin1');

export class ConnectionGuard {
  private readonly conns = new Map<Socket, ConnState>();
  /** Evictable connections, oldest first (a Set iterates in insertion order; re-adding moves to the end). */
  private readonly evictable = new Set<Socket>();
  private refusedSinceLog = 0;
  private evictedSinceLog = 0;
  private lastLog = -Infinity;
  private reaping = false;
  private readonly logIntervalMs: number;
  private readonly now: () => number;

  constructor(
    server: http.Server,
    private readonly opts: ConnectionGuardOptions,
  ) {
    this.logIntervalMs = opts.logIntervalMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    if (opts.maxConnections > 0) server.on('connection', (socket: Socket) => this.onConnection(socket));
    const headersMs = opts.headersTimeoutMs ?? 0;
    if (opts.maxConnections > 0 && headersMs > 0) {
      const every = Math.max(50, Math.min(1000, Math.floor(headersMs / 4)));
      // Node's own check becomes the backstop, a little later than ours (never past the request timeout).
      const backstop = headersMs + 2 * every;
      server.headersTimeout = server.requestTimeout > 0 ? Math.min(backstop, server.requestTimeout) : backstop;
      const timer = setInterval(() => this.reap(headersMs), every);
      timer.unref();
      server.once('close', () => clearInterval(timer));
    }
  }

  /** Closes connections evictable for longer than `ms` that are not uploading a body, in batches. */
  private reap(ms: number): void {
    if (this.reaping) return;
    this.reaping = true;
    const turn = (): void => {
      const limit = this.now() - ms;
      let n = 0;
      for (const s of this.evictable) {
        const st = this.conns.get(s);
        if (st === undefined || st.since > limit) break; // oldest first: the rest are younger
        if (st.reading) continue; // the request timeout (node's) governs uploads
        this.conns.delete(s);
        this.evictable.delete(s);
        if (s.writable) s.write(TIMEOUT_RESPONSE);
        s.destroy();
        if (++n >= REAP_PER_TURN) {
          setImmediate(turn);
          return;
        }
      }
      this.reaping = false;
    };
    turn();
  }

  /** Open connections being tracked (0 when there is no limit). */
  get open(): number {
    return this.conns.size;
  }

  /** Call from the request handler: the connection now has a request being handled. */
  requestStarted(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const st = this.conns.get(socket);
    if (st === undefined) return;
    st.active += 1;
    this.evictable.delete(socket);
    res.once('close', () => {
      st.active -= 1;
      st.reading = false;
      if (st.active === 0 && this.conns.has(socket)) this.markEvictable(socket);
    });
  }

  /** The handler is waiting for the request body: the connection may be evicted meanwhile. */
  bodyReading(req: IncomingMessage): void {
    const st = this.conns.get(req.socket);
    if (st === undefined) return;
    st.reading = true;
    this.markEvictable(req.socket);
  }

  /** The body has arrived and the request is being decided: no longer evictable. */
  bodyComplete(req: IncomingMessage): void {
    const st = this.conns.get(req.socket);
    if (st === undefined || !st.reading) return;
    st.reading = false;
    if (st.active > 0) this.evictable.delete(req.socket);
  }

  private markEvictable(socket: Socket): void {
    const st = this.conns.get(socket);
    if (st !== undefined) st.since = this.now();
    this.evictable.delete(socket);
    this.evictable.add(socket);
  }

  private onConnection(socket: Socket): void {
    const st: ConnState = { active: 0, reading: false, since: 0 };
    this.conns.set(socket, st);
    this.markEvictable(socket);
    socket.once('close', () => {
      this.conns.delete(socket);
      this.evictable.delete(socket);
    });
    if (this.conns.size <= this.opts.maxConnections) return;
    let victim: Socket | undefined;
    for (const s of this.evictable) {
      if (s !== socket) victim = s;
      break;
    }
    if (victim !== undefined) {
      this.conns.delete(victim);
      this.evictable.delete(victim);
      victim.destroy();
      this.evictedSinceLog += 1;
    } else {
      this.conns.delete(socket);
      this.evictable.delete(socket);
      socket.destroy();
      this.refusedSinceLog += 1;
    }
    this.maybeLog();
  }

  private maybeLog(): void {
    const t = this.now();
    if (t - this.lastLog < this.logIntervalMs) return;
    this.lastLog = t;
    const o = this.opts;
    const evicted = this.evictedSinceLog;
    const refused = this.refusedSinceLog;
    this.evictedSinceLog = 0;
    this.refusedSinceLog = 0;
    if (refused > 0) {
      o.logger.warn(
        { listener: o.name, maxConnections: o.maxConnections, refused, evicted },
        `${o.name} connection limit reached (${o.setting}=${o.maxConnections}); refusing new connections while every open connection has a request in progress`,
      );
    } else {
      o.logger.warn(
        { listener: o.name, maxConnections: o.maxConnections, evicted },
        `${o.name} connection limit reached (${o.setting}=${o.maxConnections}); closing the longest idle or slowest incomplete connections to make room`,
      );
    }
  }
}
