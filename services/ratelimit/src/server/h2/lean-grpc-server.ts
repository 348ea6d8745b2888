// The gRPC server's transport: the gRPC calls of grpc-calls.ts on our own HTTP/2 connections
// (connection.ts) over net/tls servers. One LeanCall object per stream carries both the HTTP/2
// stream state and the gRPC call state; responses are pre-encoded HPACK blocks plus the message,
// written into the connection's output slab.
import type { IncomingHttpHeaders } from 'node:http2';
import { mathRandom, type RandomSource } from '@rls/engine';
import net, { type AddressInfo } from 'node:net';
import tls, { type PeerCertificate, type TLSSocket } from 'node:tls';
import { jitteredAge } from '../connection-age.js';
import { GrpcCall, GrpcDispatcher, MAX_TIMER_MS } from '../grpc-calls.js';
import { encodeGrpcMessage } from '../grpc-protocol.js';
import type { GrpcLimits, GrpcServer, GrpcServerOptions, GrpcTlsOptions, TransportLogger } from '../grpc-server-types.js';
import { listenOn, removeStaleSocket, tlsContextOptions } from '../listen-support.js';
import { silentLogger } from '../transport-logger.js';
import { DEFAULT_GRPC_LIMITS, GRPC_LIMIT_SETTING_DEFS, sweepIntervalMs } from '../grpc-limits-settings.js';
import { InflateScheduler, type InflateLane } from '../grpc-inflate.js';
import { H2Connection, HOLD_CONNECTION, HOLD_OK, HOLD_PROCESS, type H2Handler, type H2Options, type H2Stream, type H2Timeouts } from './connection.js';
import type { DecodedBlock } from './hpack-decoder.js';
import { ReceiveBudget, type CoarseClock } from './receive-budget.js';
import { OK_HEADERS_BLOCK, OK_TRAILERS_BLOCK, statusTrailersBlock, trailersOnlyBlock } from './hpack-encoder.js';
import { GrpcCapacityLog } from '../grpc-capacity-log.js';

class LeanCall extends GrpcCall implements H2Stream {
  readonly id: number;
  readonly conn: H2Connection<LeanCall>;
  readonly fields: readonly string[];
  /** The field list's key (DecodedBlock.key): the server's head cache is keyed on it. */
  readonly fieldsKey: number;
  sendWindow = 0;
  recvWindow = 0;
  recvUnacked = 0;
  recvBuffered = 0;
  openedAt = 0;
  headersSent = false;
  localClosed = false;
  remoteClosed = false;
  closed = false;
  pendingData: Buffer | undefined = undefined;
  pendingTrailers: Buffer | undefined = undefined;
  resetWhenSent = false;
  private headerObject: IncomingHttpHeaders | undefined = undefined;
  private readonly server: LeanServer;

  constructor(server: LeanServer, conn: H2Connection<LeanCall>, id: number, head: DecodedBlock) {
    super();
    this.server = server;
    this.conn = conn;
    this.id = id;
    this.fields = head.fields;
    this.fieldsKey = head.key;
  }

  /** Built on first read only (tracing): the hot path never pays for it. */
  get headers(): IncomingHttpHeaders {
    if (this.headerObject !== undefined) return this.headerObject;
    const h: Record<string, string | string[]> = {};
    const f = this.fields;
    for (let i = 0; i < f.length; i += 2) {
      const name = f[i]!;
      const value = f[i + 1]!;
      const prev = h[name];
      if (prev === undefined) h[name] = value;
      else if (typeof prev === 'string') h[name] = [prev, value];
      else prev.push(value);
    }
    this.headerObject = h as IncomingHttpHeaders;
    return this.headerObject;
  }

  sendUnary(body: Buffer): void {
    const conn = this.conn;
    conn.writeHeaders(this, OK_HEADERS_BLOCK, false);
    conn.writeData(this, body);
    conn.writeTrailers(this, OK_TRAILERS_BLOCK);
  }

  sendStatus(httpStatus: number, code: number, message: string, acceptEncoding: boolean): void {
    const msg = encodeGrpcMessage(message);
    if (!this.headersSent) this.conn.writeHeaders(this, trailersOnlyBlock(httpStatus, code, msg, acceptEncoding), true);
    else this.conn.writeTrailers(this, statusTrailersBlock(code, msg));
  }

  startStreaming(): boolean {
    if (this.closed) return false;
    this.conn.writeHeaders(this, OK_HEADERS_BLOCK, false);
    return true;
  }

  sendMessage(body: Buffer): void {
    this.conn.writeData(this, body);
  }

  stopReading(): void {
    this.conn.stopReading(this);
  }

  holdBytes(n: number): string | undefined {
    const r = this.conn.holdBytes(this, n);
    return r === HOLD_OK ? undefined : this.server.holdRefusal(r);
  }

  releaseBytes(n: number): void {
    this.conn.releaseBytes(this, n);
  }

  get inflateLane(): InflateLane {
    return this.server.laneOf(this.conn);
  }

  get connectionKey(): object {
    return this.conn;
  }

  override sendBacklog(): number {
    return this.pendingData?.length ?? 0;
  }

  override cancelStream(): void {
    this.done = true;
    this.conn.resetStream(this, CANCEL_CODE);
  }
}

/** RST_STREAM CANCEL (RFC 9113 §7). */
const CANCEL_CODE = 0x8;

interface ConnectionTimers {
  age: NodeJS.Timeout | undefined;
  grace: NodeJS.Timeout | undefined;
  /** Made on the first compressed message that needs the streaming inflation. */
  lane: InflateLane | undefined;
}

function onAge(conn: H2Connection<LeanCall>, server: LeanServer, ageMs: number): void {
  server.reachedAge(conn, ageMs);
}

function onGraceOver(conn: H2Connection<LeanCall>): void {
  conn.destroy();
}

function unrefTimer(fn: () => void, ms: number): void {
  setTimeout(fn, ms).unref();
}

function onSweep(server: LeanServer): void {
  server.sweep();
}

/** The flood counters (GRPC_MAX_RESETS_PER_SECOND, ...) count per window of this length. */
const FLOOD_WINDOW_MS = 1000;
/** Connection closes / stream resets done by one sweep before it yields to other work. */
const SWEEP_ACTIONS_PER_TURN = 16;

class LeanServer implements H2Handler<LeanCall> {
  readonly server: net.Server | tls.Server;
  readonly logger: TransportLogger;
  private readonly d: GrpcDispatcher;
  private readonly connections = new Map<H2Connection<LeanCall>, ConnectionTimers>();
  private readonly maxStreams: number;
  private closing = false;
  private verifyClient: ((cert: PeerCertificate) => string | undefined) | undefined;
  private readonly maxAgeMs: number;
  private readonly ageGraceMs: number;
  private readonly random: RandomSource;
  private readonly limits: GrpcLimits;
  private readonly h2: H2Options;
  private readonly timeouts: H2Timeouts;
  private readonly clock: CoarseClock;
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;
  private sweepPending = false;
  private countersFrom: number;
  private readonly capacityLog: GrpcCapacityLog;
  private readonly connectionRefusal: string;
  private readonly processRefusal: string;
  private readonly inflater: InflateScheduler;

  constructor(opts: GrpcServerOptions) {
    this.logger = opts.logger ?? silentLogger;
    this.limits = opts.limits ?? DEFAULT_GRPC_LIMITS;
    this.capacityLog = new GrpcCapacityLog(this.logger, this.limits.maxConnections);
    this.now = opts.now ?? Date.now;
    this.clock = { now: this.now() };
    this.countersFrom = this.clock.now;
    const l = this.limits;
    this.timeouts = { prefaceMs: l.prefaceTimeoutMs, idleMs: l.idleTimeoutMs, requestReadMs: l.requestReadTimeoutMs, keepaliveMs: l.keepaliveTimeMs, keepaliveTimeoutMs: l.keepaliveTimeoutMs };
    const defs = GRPC_LIMIT_SETTING_DEFS;
    this.connectionRefusal = `grpc: no receive budget left to decompress the request: this connection holds its ${defs.grpcConnectionBufferBytes.name} (${l.connectionBufferBytes} bytes)`;
    this.processRefusal = `grpc: no receive budget left to decompress the request: the process holds its ${defs.grpcProcessBufferBytes.name} (${l.processBufferBytes} bytes)`;
    this.d = new GrpcDispatcher({ ...opts, logger: this.logger, maxWatchesPerConnection: opts.maxWatchesPerConnection ?? l.maxWatchesPerConnection });
    this.maxStreams = opts.maxConcurrentStreams ?? 1000;
    this.verifyClient = opts.tls?.verifyClient;
    this.maxAgeMs = opts.maxConnectionAgeMs ?? 0;
    this.ageGraceMs = opts.maxConnectionAgeGraceMs ?? 0;
    this.random = opts.random ?? mathRandom;
    this.h2 = {
      maxConcurrentStreams: this.maxStreams,
      logger: this.logger,
      maxHeaderListSize: l.maxHeaderListBytes,
      streamWindow: l.streamWindowBytes,
      connectionWindow: l.connectionWindowBytes,
      connectionBuffer: l.connectionBufferBytes,
      budget: new ReceiveBudget(l.processBufferBytes),
      clock: this.clock,
      maxResets: l.maxResetsPerSecond,
      maxControlFrames: l.maxControlFramesPerSecond,
    };
    this.inflater = new InflateScheduler({ bytesPerSecond: l.inflateBytesPerSecond, now: this.now, delay: unrefTimer });
    this.sweeper = setInterval(onSweep, sweepIntervalMs(l), this);
    this.sweeper.unref();
    if (opts.tls !== undefined) {
      this.server = tls.createServer(
        {
          ...tlsContextOptions(opts.tls),
          // The preface timeout covers the TLS handshake too (node's default is 120 s).
          handshakeTimeout: l.prefaceTimeoutMs,
          requestCert: opts.tls.requestClientCert === true,
          rejectUnauthorized: opts.tls.requestClientCert === true,
          ALPNProtocols: ['h2'],
        },
        (socket) => this.onSecureSocket(socket),
      );
      this.server.on('tlsClientError', (err: Error) => this.logger.debug({ err }, 'grpc TLS handshake failed'));
    } else {
      this.server = net.createServer((socket) => this.onSocket(socket));
    }
  }

  private onSecureSocket(socket: TLSSocket): void {
    // A TLS client that did not negotiate h2 (e.g. plain HTTPS/1.1) cannot speak gRPC.
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      return;
    }
    if (this.verifyClient !== undefined) {
      // The TLS layer verified the chain; the extra conditions (SAN, key usage) are checked
      // before a single byte of HTTP/2 is read.
      const problem = this.verifyClient(socket.getPeerCertificate());
      if (problem !== undefined) {
        this.logger.debug({ err: problem }, 'grpc client certificate refused');
        socket.destroy();
        return;
      }
    }
    this.onSocket(socket);
  }

  private onSocket(socket: net.Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    if (this.connections.size >= this.limits.maxConnections && !this.makeRoom()) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    const conn = new H2Connection<LeanCall>(socket, this, this.h2, this.now());
    const timers: ConnectionTimers = { age: undefined, grace: undefined, lane: undefined };
    this.connections.set(conn, timers);
    if (this.maxAgeMs > 0) {
      const ageMs = jitteredAge(this.maxAgeMs, this.random);
      timers.age = setTimeout(onAge, ageMs, conn, this, ageMs);
      timers.age.unref();
    }
  }

  /**
   * At GRPC_MAX_CONNECTIONS: closes the connection idle the longest (no preface yet first, then
   * no open stream) so a new client, a health checker say, gets in. False when all are busy.
   */
  private makeRoom(): boolean {
    let victim: H2Connection<LeanCall> | undefined;
    let since = Infinity;
    for (const c of this.connections.keys()) {
      if (c.isIdle && c.idleSince < since) {
        victim = c;
        since = c.idleSince;
      }
    }
    const now = this.clock.now;
    if (victim === undefined) {
      this.capacityLog.refusal(now);
      return false;
    }
    this.capacityLog.eviction(now);
    // Forgotten at once so the count is right; GOAWAY is written, then the socket is destroyed
    // at once to free its descriptor.
    this.onConnectionClose(victim);
    victim.shutdown();
    victim.destroy();
    return true;
  }

  /** The periodic check of the time limits and the start of a new flood-counting window. */
  sweep(): void {
    if (this.sweepPending) return;
    const now = this.now();
    this.clock.now = now;
    const newWindow = now - this.countersFrom >= FLOOD_WINDOW_MS;
    if (newWindow) this.countersFrom = now;
    this.sweepFrom(this.connections.keys(), now, newWindow);
  }

  /**
   * Thousands of connections can expire in one sweep (a connection flood reaching its preface
   * timeout together); closing them all in one turn stalled other clients for 100+ ms. At most
   * SWEEP_ACTIONS_PER_TURN closes/resets per turn, the rest continue on the next turn.
   */
  private sweepFrom(it: Iterator<H2Connection<LeanCall>>, now: number, newWindow: boolean): void {
    this.sweepPending = false;
    let acted = 0;
    for (let r = it.next(); r.done !== true; r = it.next()) {
      const conn = r.value;
      if (newWindow) conn.resetCounters();
      if (conn.sweep(now, this.timeouts) && ++acted >= SWEEP_ACTIONS_PER_TURN) {
        this.sweepPending = true;
        setImmediate(() => this.sweepFrom(it, now, newWindow));
        return;
      }
    }
  }

  /** GOAWAY after the jittered age, then a forced close after the grace (as grpc-go's MaxConnectionAge). */
  reachedAge(conn: H2Connection<LeanCall>, ageMs: number): void {
    const timers = this.connections.get(conn);
    if (timers === undefined) return;
    timers.age = undefined;
    this.logger.debug({ ageMs }, 'grpc connection reached its maximum age; sending GOAWAY');
    conn.shutdown();
    if (this.connections.has(conn)) {
      timers.grace = setTimeout(onGraceOver, Math.min(MAX_TIMER_MS, this.ageGraceMs), conn);
      timers.grace.unref();
    }
  }

  // ---- H2Handler ----

  newStream(conn: H2Connection<LeanCall>, id: number, head: DecodedBlock): LeanCall {
    return new LeanCall(this, conn, id, head);
  }

  laneOf(conn: H2Connection<LeanCall>): InflateLane {
    const timers = this.connections.get(conn);
    // A connection already forgotten (closing) gets a lane of its own; its streams are ending anyway.
    if (timers === undefined) return this.inflater.lane();
    return (timers.lane ??= this.inflater.lane());
  }

  /** The RESOURCE_EXHAUSTED message of a refused holdBytes. */
  holdRefusal(result: number): string {
    if (result === HOLD_CONNECTION) return this.connectionRefusal;
    if (result === HOLD_PROCESS) return this.processRefusal;
    return 'grpc: the stream is closed';
  }

  // The request head read from the last field list, keyed on its DecodedBlock.key (unique in the
  // process, so calls of different connections never share an entry): a repeated header block
  // has the same key, and its head is not read again.
  private headKey = 0;
  private method: string | undefined;
  private path: string | undefined;
  private contentType: string | undefined;
  private timeout: string | undefined;
  private encoding: string | undefined;

  onRequest(call: LeanCall): void {
    if (call.fieldsKey !== this.headKey) this.readHead(call.fields, call.fieldsKey);
    this.d.begin(call, this.method, this.path, this.contentType, this.timeout, this.encoding);
  }

  private readHead(f: readonly string[], key: number): void {
    let method: string | undefined;
    let path: string | undefined;
    let contentType: string | undefined;
    let timeout: string | undefined;
    let encoding: string | undefined;
    for (let i = 0; i < f.length; i += 2) {
      const name = f[i]!;
      switch (name) {
        case ':method':
          method = f[i + 1];
          break;
        case ':path':
          path = f[i + 1];
          break;
        case 'content-type':
          contentType = f[i + 1];
          break;
        case 'grpc-timeout':
          timeout = f[i + 1];
          break;
        case 'grpc-encoding':
          encoding = f[i + 1];
          break;
        default:
          break;
      }
    }
    this.headKey = key;
    this.method = method;
    this.path = path;
    this.contentType = contentType;
    this.timeout = timeout;
    this.encoding = encoding;
  }

  onData(call: LeanCall, chunk: Buffer): void {
    this.d.onData(call, chunk);
  }

  onEnd(call: LeanCall): void {
    this.d.onEnd(call);
  }

  onClose(call: LeanCall): void {
    this.d.onReset(call);
  }

  onConnectionClose(conn: H2Connection<LeanCall>): void {
    const timers = this.connections.get(conn);
    if (timers === undefined) return;
    this.connections.delete(conn);
    if (timers.age !== undefined) clearTimeout(timers.age);
    if (timers.grace !== undefined) clearTimeout(timers.grace);
  }

  // ---- lifecycle ----

  connectionCount(): number {
    return this.connections.size;
  }

  listen(host: string, port: number): Promise<void> {
    return listenOn(this.server, this.logger, (cb) => this.server.listen(port, host, cb));
  }

  async listenUnix(path: string): Promise<void> {
    await removeStaleSocket(path);
    return listenOn(this.server, this.logger, (cb) => this.server.listen(path, cb));
  }

  setTls(opts: GrpcTlsOptions): void {
    if (!(this.server instanceof tls.Server)) throw new Error('setTls: the gRPC server was created without TLS');
    this.server.setSecureContext(tlsContextOptions(opts));
    if (opts.verifyClient !== undefined) this.verifyClient = opts.verifyClient;
  }

  async close(graceMs: number): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    this.d.endWatches();
    if (!this.server.listening) {
      for (const conn of this.connections.keys()) conn.destroy();
      return;
    }
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const conn of this.connections.keys()) conn.shutdown();
    const force = setTimeout(() => {
      for (const conn of this.connections.keys()) conn.destroy();
    }, graceMs);
    await closed;
    clearTimeout(force);
  }
}

export function createLeanGrpcServer(opts: GrpcServerOptions): GrpcServer {
  const s = new LeanServer(opts);
  return {
    listen: (host, port) => s.listen(host, port),
    listenUnix: (path) => s.listenUnix(path),
    address: (): AddressInfo | string | null => s.server.address(),
    setTls: (t) => s.setTls(t),
    connectionCount: () => s.connectionCount(),
    close: (graceMs = 10_000) => s.close(graceMs),
  };
}
