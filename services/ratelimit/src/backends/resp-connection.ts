// One Redis connection of the lean RESP client: it owns a socket, writes the commands of every
// caller in the same event-loop turn with one socket write, matches replies to callers through a
// FIFO (Redis answers in order), fails the callers whose replies are late, and reconnects with
// backoff. Callers never wait longer than the timeout: a connection whose oldest reply is overdue
// is presumed broken and replaced, which fails every request queued on it. TLS (KVSTORE_TLS) and
// a write-coalescing window (KVSTORE_PIPELINE_WINDOW) are options of the same connection.
import { createConnection, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { backoffDelayMs } from '@rls/backoff';
import { StoreError, type RandomSource } from '@rls/engine';
import { RespParser, type RespReply } from './resp-parser.js';

export type RespEndpoint = { kind: 'tcp'; host: string; port: number } | { kind: 'unix'; path: string };

/** A caller waiting for `expected` replies; the connection hands it replies in order. */
export interface ReplyHandler {
  /** Absolute time (ms) by which the last reply must arrive; set by the connection. */
  deadline: number;
  /** Takes the next reply; returns true once it has all of its replies (and has settled). */
  accept(reply: RespReply): boolean;
  /** The connection failed before all replies arrived. */
  fail(err: StoreError): void;
}

export interface ConnectionEvents {
  onReady(conn: RespConnection): void;
  /** Called when a connection that was ready stops being ready. */
  onDown(conn: RespConnection, err: StoreError): void;
  /** Called when a connection this side opened is closed by this side (timeouts, failed handshake, close()). */
  onLocalClose(conn: RespConnection): void;
  /** Called after the buffered commands were written; the pool uses it to rotate connections. */
  onFlush(conn: RespConnection): void;
  /** Called after a caller got all of its replies (the pool hands freed capacity to waiters). */
  onSettled?(conn: RespConnection): void;
  /** Called whenever a socket fails or is given up (refused, timed out, handshake refused). */
  onError?(conn: RespConnection, err: StoreError): void;
}

export interface RespConnectionOptions {
  endpoint: RespEndpoint;
  timeoutMs: number;
  /** Encoded commands sent first on every new socket (AUTH, PING) and the handler of their replies. */
  handshake: () => { commands: Buffer; handler: ReplyHandler };
  backoffMinMs: number;
  backoffMaxMs: number;
  random: RandomSource;
  events: ConnectionEvents;
  now: () => number;
  /** TLS options (CA, client certificate, hostname check); plain TCP/unix when undefined. */
  tls?: TlsConnectionOptions | undefined;
  /** Milliseconds to coalesce writes before flushing; 0 flushes at the end of the event-loop turn. */
  flushDelayMs?: number | undefined;
  /** Consulted before every (re)connect: lets a sentinel watcher rotate through the sentinels. */
  nextEndpoint?: (() => RespEndpoint) | undefined;
}

export type ConnectionState = 'connecting' | 'ready' | 'waiting' | 'closed';

export class RespConnection {
  state: ConnectionState = 'waiting';
  /** Why the last attempt or connection failed (for error messages while down). */
  lastError: StoreError | undefined;
  private sock: Socket | undefined;
  private readonly parser: RespParser;
  private queue: (ReplyHandler | undefined)[] = [];
  private head = 0;
  private out = '';
  /** The new socket's handshake, written before `out` (a Buffer: it may carry a password, which no string may hold). */
  private handshakeBytes: Buffer | undefined;
  private flushScheduled = false;
  private watchdog: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private endpoint: RespEndpoint;
  private readonly flushBound = (): void => this.flush();
  private readonly watchdogBound = (): void => this.checkDeadline();

  constructor(private readonly opts: RespConnectionOptions) {
    this.endpoint = opts.endpoint;
    this.parser = new RespParser((reply) => this.onReply(reply));
  }

  /** Opens the socket and sends the handshake; commands sent meanwhile are written after it. */
  connect(): void {
    if (this.state === 'closed') return;
    this.reconnectTimer = undefined;
    this.state = 'connecting';
    this.parser.reset();
    if (this.opts.nextEndpoint !== undefined) this.endpoint = this.opts.nextEndpoint();
    const ep = this.endpoint;
    const tls = this.opts.tls;
    const sock: Socket =
      tls !== undefined
        ? tlsConnect(ep.kind === 'unix' ? { ...tls, path: ep.path } : { ...(isIP(ep.host) === 0 ? { servername: ep.host } : {}), ...tls, host: ep.host, port: ep.port })
        : ep.kind === 'unix'
          ? createConnection({ path: ep.path })
          : createConnection({ host: ep.host, port: ep.port });
    sock.setNoDelay(true);
    this.sock = sock;
    let sockError: Error | undefined;
    sock.on('data', (chunk: Buffer) => {
      if (this.sock !== sock) return;
      try {
        this.parser.feed(chunk);
      } catch (err) {
        this.drop(new StoreError(`redis protocol error: ${(err as Error).message}`, { cause: err }), true);
      }
    });
    sock.on('error', (err) => {
      sockError = err;
    });
    sock.on('close', () => {
      if (this.sock !== sock) return;
      const why = sockError !== undefined ? sockError.message : 'connection closed by server';
      this.drop(new StoreError(`redis connection lost: ${why}`, sockError !== undefined ? { cause: sockError } : undefined), false);
    });
    const hs = this.opts.handshake();
    hs.handler.deadline = this.opts.now() + this.opts.timeoutMs;
    // The handshake goes before anything queued while the previous socket was being replaced.
    this.queue.splice(this.head, 0, hs.handler);
    this.handshakeBytes = hs.commands;
    this.scheduleFlush();
    this.armWatchdog();
  }

  /** Handshake finished: the connection may take traffic. */
  markReady(): void {
    if (this.state !== 'connecting') return;
    this.state = 'ready';
    this.attempt = 0;
    this.lastError = undefined;
    this.opts.events.onReady(this);
  }

  /** Handshake refused (bad password...): close and retry later. */
  rejectHandshake(err: StoreError): void {
    this.drop(err, true);
  }

  /** Callers waiting for replies (including commands not yet written). */
  get pending(): number {
    return this.queue.length - this.head;
  }

  /** Callers' requests on this connection (`pending` without the handshake of a connecting socket). */
  get load(): number {
    return this.queue.length - this.head - (this.state === 'connecting' ? 1 : 0);
  }

  /** Where the connection points; `host:port` or the socket path. */
  get address(): string {
    const ep = this.endpoint;
    return ep.kind === 'unix' ? ep.path : `${ep.host}:${ep.port}`;
  }

  /**
   * Points the connection elsewhere (the sentinel's new master): the current socket is dropped,
   * failing its callers, and a new one is opened at once.
   */
  setEndpoint(ep: RespEndpoint, why: string): void {
    const same = ep.kind === 'unix' ? this.endpoint.kind === 'unix' && this.endpoint.path === ep.path : this.endpoint.kind === 'tcp' && this.endpoint.host === ep.host && this.endpoint.port === ep.port;
    this.endpoint = ep;
    if (same || this.state === 'closed') return;
    this.attempt = 0;
    if (this.sock !== undefined) {
      this.drop(new StoreError(why), true, 0);
    } else if (this.state === 'waiting') {
      if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
      this.connect();
    }
  }

  /** Queues encoded commands whose replies `handler` consumes; written with the turn's other commands. */
  send(commands: string, handler: ReplyHandler, deadline?: number): void {
    handler.deadline = deadline ?? this.opts.now() + this.opts.timeoutMs;
    this.queue.push(handler);
    this.out += commands;
    if (!this.flushScheduled) this.scheduleFlush();
    if (this.watchdog === undefined) this.armWatchdog();
  }

  /** Stops reconnecting; lets in-flight replies arrive (bounded by the timeout), then closes. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const wasOpen = this.sock !== undefined;
    this.state = 'closed';
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    const sock = this.sock;
    if (sock === undefined) {
      this.failAll(new StoreError('redis store closed'));
      return;
    }
    this.flush();
    const closed = new Promise<void>((resolve) => sock.once('close', () => resolve()));
    const hard = setTimeout(() => sock.destroy(), this.opts.timeoutMs);
    sock.end();
    await closed;
    clearTimeout(hard);
    this.sock = undefined;
    this.failAll(new StoreError('redis store closed'));
    this.stopWatchdog();
    if (wasOpen) this.opts.events.onLocalClose(this);
  }

  private scheduleFlush(): void {
    this.flushScheduled = true;
    const window = this.opts.flushDelayMs ?? 0;
    if (window > 0) setTimeout(this.flushBound, window);
    else setImmediate(this.flushBound);
  }

  private flush(): void {
    this.flushScheduled = false;
    const hs = this.handshakeBytes;
    if ((this.out.length === 0 && hs === undefined) || this.sock === undefined) return;
    if (hs !== undefined) {
      // One write either way: corked, the handshake and the queued commands leave together.
      this.sock.cork();
      this.sock.write(hs);
      this.handshakeBytes = undefined;
      if (this.out.length > 0) this.sock.write(this.out);
      this.sock.uncork();
    } else this.sock.write(this.out);
    this.out = '';
    this.opts.events.onFlush(this);
  }

  private onReply(reply: RespReply): void {
    const h = this.queue[this.head];
    if (h === undefined) {
      this.drop(new StoreError('redis protocol error: reply without a request'), true);
      return;
    }
    if (!h.accept(reply)) return;
    this.queue[this.head] = undefined;
    this.head++;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.opts.events.onSettled?.(this);
  }

  private armWatchdog(): void {
    const h = this.queue[this.head];
    // A subscription waits for messages forever (deadline Infinity): nothing to watch.
    if (h === undefined || !Number.isFinite(h.deadline)) {
      this.watchdog = undefined;
      return;
    }
    this.watchdog = setTimeout(this.watchdogBound, Math.max(1, h.deadline - this.opts.now()));
    this.watchdog.unref();
  }

  private stopWatchdog(): void {
    if (this.watchdog !== undefined) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  // Replies come in order, so only the oldest request needs watching; one timer per timeout
  // period replaces a timer per request.
  private checkDeadline(): void {
    this.watchdog = undefined;
    const h = this.queue[this.head];
    if (h === undefined) return;
    if (h.deadline <= this.opts.now()) {
      const what = this.state === 'connecting' ? 'connecting to redis' : 'redis reply';
      this.drop(new StoreError(`${what} timed out after ${this.opts.timeoutMs} ms`), true);
      return;
    }
    this.armWatchdog();
  }

  /** The socket is unusable: fail every waiting caller and schedule a reconnect. */
  private drop(err: StoreError, local: boolean, delayMs?: number): void {
    const sock = this.sock;
    if (sock === undefined) return;
    this.sock = undefined;
    sock.destroy();
    const wasReady = this.state === 'ready';
    this.lastError = err;
    this.out = '';
    this.handshakeBytes = undefined;
    this.stopWatchdog();
    this.failAll(err);
    if (local) this.opts.events.onLocalClose(this);
    this.opts.events.onError?.(this, err);
    if (this.state === 'closed') return;
    this.state = 'waiting';
    if (wasReady) this.opts.events.onDown(this, err);
    // Equal jitter, in [base/2, base), so a pool does not reconnect in lockstep.
    const delay = delayMs ?? backoffDelayMs({ initialMs: this.opts.backoffMinMs, maxMs: this.opts.backoffMaxMs, jitter: 'equal' }, this.attempt, this.opts.random);
    this.attempt = Math.min(this.attempt + 1, 30);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
    this.reconnectTimer.unref();
  }

  private failAll(err: StoreError): void {
    const pending = this.queue;
    const from = this.head;
    this.queue = [];
    this.head = 0;
    for (let i = from; i < pending.length; i++) pending[i]?.fail(err);
  }
}
