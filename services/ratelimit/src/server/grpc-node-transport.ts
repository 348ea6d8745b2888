// GRPC_TRANSPORT=node: the gRPC calls of grpc-calls.ts carried by node:http2 (core `stream` API).
// Kept as the operator's escape hatch beside the lean transport (h2/): node's HTTP/2 stack is the
// reference implementation (nghttp2), at several times the CPU cost per request.
//
// Hot path shape: one `stream` listener on the server, one NodeCall per stream, shared
// module-level listeners (they find the call through a symbol on the stream, so no closures are
// allocated per request).
import http2, { type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket, PeerCertificate } from 'node:tls';
import { jitteredAge } from './connection-age.js';
import { GrpcCall, GrpcDispatcher, MAX_TIMER_MS } from './grpc-calls.js';
import { encodeGrpcMessage } from './grpc-protocol.js';
import type { GrpcRandom, GrpcServer, GrpcServerOptions, GrpcTlsOptions } from './grpc-server.js';
import { listenOn, removeStaleSocket, tlsContextOptions } from './listen-support.js';
import { silentLogger, type TransportLogger } from './transport-logger.js';
import { DEFAULT_GRPC_LIMITS, sweepIntervalMs, type GrpcLimits } from './grpc-limits-settings.js';
import { GrpcCapacityLog } from './grpc-capacity-log.js';

/** The flood counters count per window of this length. */
const FLOOD_WINDOW_MS = 1000;

/**
 * What the limits need to know of one session. node:http2 hides the frames, so this is what its
 * events show: the client's first SETTINGS (after the preface), streams, resets, PINGs.
 */
interface SessionState {
  readonly session: Http2Session;
  readonly openedAt: number;
  gotSettings: boolean;
  open: number;
  idleFrom: number;
  /** Request bytes delivered to calls whose message is not complete yet. */
  buffered: number;
  resets: number;
  control: number;
  /** Streams paused because this session or the process was over its budget. */
  paused: Set<CallStream> | undefined;
  /** When we sent GOAWAY for idleness (0: not yet): a stream node never showed us may still hold it open. */
  closingAt: number;
  calmed: boolean;
}

const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': 'identity,gzip' };
const OK_TRAILERS = { 'grpc-status': '0' };
const WAIT_TRAILERS = { waitForTrailers: true };
const END_STREAM = { endStream: true };

const CALL = Symbol('grpcCall');
type CallStream = ServerHttp2Stream & { [CALL]?: NodeCall };
const SESSION = Symbol('grpcSession');
type StateSession = Http2Session & { [SESSION]?: SessionState };

class NodeCall extends GrpcCall {
  readonly stream: CallStream;
  readonly d: GrpcDispatcher;
  readonly t: NodeTransport;
  readonly state: SessionState | undefined;
  private readonly reqHeaders: IncomingHttpHeaders;
  trailers: Record<string, string> = OK_TRAILERS;
  /** Request bytes counted in the session's and the process's budget until the message is complete. */
  held = 0;
  /** The client has not ended its side yet (GRPC_REQUEST_READ_TIMEOUT). */
  reading = true;
  /** Reset by us for GRPC_REQUEST_READ_TIMEOUT (not a client reset). */
  expired = false;
  openedAt: number;

  constructor(t: NodeTransport, stream: CallStream, headers: IncomingHttpHeaders, state: SessionState | undefined, now: number) {
    super();
    this.t = t;
    this.d = t.d;
    this.stream = stream;
    this.reqHeaders = headers;
    this.state = state;
    this.openedAt = now;
  }

  get headers(): IncomingHttpHeaders {
    return this.reqHeaders;
  }

  private gone(): boolean {
    return this.stream.destroyed || this.stream.closed;
  }

  sendUnary(body: Buffer): void {
    if (this.gone()) return;
    this.stream.respond(OK_HEADERS, WAIT_TRAILERS);
    this.stream.end(body);
  }

  sendStatus(httpStatus: number, code: number, message: string, acceptEncoding: boolean): void {
    if (this.gone()) return;
    const msg = encodeGrpcMessage(message);
    if (!this.stream.headersSent) {
      const headers: http2.OutgoingHttpHeaders = { ...OK_HEADERS, ':status': httpStatus, 'grpc-status': String(code), 'grpc-message': msg };
      if (!acceptEncoding && httpStatus !== 200) delete headers['grpc-accept-encoding'];
      this.stream.respond(headers, END_STREAM);
    } else {
      this.trailers = { 'grpc-status': String(code), 'grpc-message': msg };
      this.stream.end();
    }
  }

  startStreaming(): boolean {
    if (this.gone()) return false;
    this.stream.respond(OK_HEADERS, WAIT_TRAILERS);
    return true;
  }

  sendMessage(body: Buffer): void {
    if (!this.gone()) this.stream.write(body);
  }

  stopReading(): void {
    stopReading(this.stream);
  }
}

function stopReading(stream: CallStream): void {
  if (stream.readableEnded) return;
  stream.resume();
  // After our frames are out, so the response is not lost behind the reset.
  setImmediate(closeNoError, stream);
}

// ---- shared stream listeners (module level: `this` is the stream) ----

function onStreamError(this: CallStream, err: Error): void {
  this[CALL]?.d.logger.debug({ err }, 'grpc stream error');
}

function onData(this: CallStream, chunk: Buffer): void {
  const call = this[CALL];
  if (call === undefined) return;
  call.t.hold(call, chunk.length);
  call.d.onData(call, chunk);
}

function onEnd(this: CallStream): void {
  const call = this[CALL];
  if (call === undefined) return;
  call.t.endReading(call);
  // Decided after the rest of the bytes read with this request were processed: node emits 'end'
  // before it reports an RST_STREAM that followed in the same read, and a stream the client reset
  // right after ending it (rapid reset) must not be decided nor counted.
  setImmediate(decideEnded, this);
}

function decideEnded(stream: CallStream): void {
  const call = stream[CALL];
  if (call === undefined || stream.closed || stream.destroyed) return;
  call.d.onEnd(call);
}

function onClose(this: CallStream): void {
  const call = this[CALL];
  if (call === undefined) return;
  call.t.streamClosed(call);
  call.d.onReset(call);
}

function onWantTrailers(this: CallStream): void {
  const call = this[CALL];
  try {
    this.sendTrailers(call?.trailers ?? OK_TRAILERS);
  } catch {
    // The stream was reset between the last DATA frame and the trailers; nothing to send to.
  }
}

function closeNoError(stream: CallStream): void {
  if (!stream.destroyed && !stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

class NodeTransport {
  readonly server: http2.Http2Server | http2.Http2SecureServer;
  readonly logger: TransportLogger;
  readonly d: GrpcDispatcher;
  private readonly sessions = new Map<Http2Session, SessionState>();
  private readonly limits: GrpcLimits;
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;
  private countersFrom: number;
  /** Request bytes all sessions hold in incomplete messages (GRPC_PROCESS_BUFFER). */
  private buffered = 0;
  /** Calls whose client has not finished sending (GRPC_REQUEST_READ_TIMEOUT). */
  private readonly reading = new Set<NodeCall>();
  private readonly capacityLog: GrpcCapacityLog;
  private closing = false;
  private verifyClient: ((cert: PeerCertificate) => string | undefined) | undefined;
  private readonly maxAgeMs: number;
  private readonly ageGraceMs: number;
  private readonly random: GrpcRandom;

  constructor(opts: GrpcServerOptions) {
    this.logger = opts.logger ?? silentLogger;
    this.d = new GrpcDispatcher({ ...opts, logger: this.logger });
    this.verifyClient = opts.tls?.verifyClient;
    this.maxAgeMs = opts.maxConnectionAgeMs ?? 0;
    this.ageGraceMs = opts.maxConnectionAgeGraceMs ?? 0;
    this.random = opts.random ?? { int: (max) => Math.floor(Math.random() * max) };
    this.limits = opts.limits ?? DEFAULT_GRPC_LIMITS;
    this.capacityLog = new GrpcCapacityLog(this.logger, this.limits.maxConnections);
    this.now = opts.now ?? Date.now;
    this.countersFrom = this.now();
    const l = this.limits;
    const settings: http2.Settings = {
      maxConcurrentStreams: opts.maxConcurrentStreams ?? 1000,
      initialWindowSize: l.streamWindowBytes,
      maxHeaderListSize: l.maxHeaderListBytes,
    };
    const common: http2.ServerOptions = {
      settings,
      // Node's default (10 MB) makes a busy connection refuse streams with ENHANCE_YOUR_CALM; the
      // request bytes themselves are bounded by pausing streams (hold) and the windows above.
      maxSessionMemory: 64,
      // The decoded header list is bounded by size (maxHeaderListSize) and by field count.
      maxHeaderListPairs: 128,
      // Frames node counts as invalid (among them empty DATA without END_STREAM) and streams it
      // refuses end the session beyond these. Node counts them over the session's whole life, so
      // its defaults (1000, 100) stay the ceiling.
      maxSessionInvalidFrames: Math.min(1000, l.maxControlFramesPerSecond),
      maxSessionRejectedStreams: Math.min(100, l.maxResetsPerSecond),
    };
    this.sweeper = setInterval(() => this.sweep(), sweepIntervalMs(l));
    this.sweeper.unref();
    if (opts.tls !== undefined) {
      this.server = http2.createSecureServer({
        ...common,
        ...tlsContextOptions(opts.tls),
        // The preface timeout covers the TLS handshake too (node's default is 120 s).
        handshakeTimeout: l.prefaceTimeoutMs,
        requestCert: opts.tls.requestClientCert === true,
        rejectUnauthorized: opts.tls.requestClientCert === true,
        allowHTTP1: false,
        ALPNProtocols: ['h2'],
      });
      this.server.on('tlsClientError', (err: Error) => this.logger.debug({ err }, 'grpc TLS handshake failed'));
      // A TLS client that did not negotiate h2 (e.g. plain HTTPS/1.1) cannot speak gRPC.
      this.server.on('unknownProtocol', (socket: { destroy(): void }) => socket.destroy());
    } else {
      this.server = http2.createServer(common);
    }
    this.server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => this.onStream(stream, headers));
    this.server.on('session', (session: Http2Session) => this.onSession(session));
    this.server.on('sessionError', (err: Error) => this.logger.debug({ err }, 'grpc session error'));
  }

  private onSession(session: Http2Session): void {
    if (this.closing) {
      session.destroy();
      return;
    }
    if (this.sessions.size >= this.limits.maxConnections && !this.makeRoom()) {
      session.destroy();
      return;
    }
    if (this.verifyClient !== undefined) {
      // The TLS layer verified the chain; the extra conditions (SAN, key usage) are checked here,
      // in the same tick the session is made, so no stream of a refused client is ever read.
      const problem = this.verifyClient((session.socket as TLSSocket).getPeerCertificate());
      if (problem !== undefined) {
        this.logger.debug({ err: problem }, 'grpc client certificate refused');
        session.destroy();
        return;
      }
    }
    const now = this.now();
    const state: SessionState = { session, openedAt: now, gotSettings: false, open: 0, idleFrom: now, buffered: 0, resets: 0, control: 0, paused: undefined, closingAt: 0, calmed: false };
    (session as StateSession)[SESSION] = state;
    this.sessions.set(session, state);
    session.once('close', () => this.sessions.delete(session));
    session.on('error', (err: Error) => this.logger.debug({ err }, 'grpc connection error'));
    // The client's SETTINGS follow its preface: the end of the preface timeout.
    session.on('remoteSettings', () => {
      if (state.gotSettings) this.control(state, 'SETTINGS');
      state.gotSettings = true;
    });
    session.on('ping', () => this.control(state, 'PING'));
    if (this.maxAgeMs > 0) this.limitAge(session);
    try {
      session.setLocalWindowSize(Math.min(this.limits.connectionWindowBytes, this.limits.connectionBufferBytes));
    } catch {
      // Only an optimisation for large requests; the default window works.
    }
  }

  // ---- limits ----

  /** At GRPC_MAX_CONNECTIONS: closes the longest-idle session (no SETTINGS yet first, then no open stream). */
  private makeRoom(): boolean {
    let victim: SessionState | undefined;
    let since = Infinity;
    for (const st of this.sessions.values()) {
      if (st.gotSettings && st.open > 0) continue;
      const t = st.gotSettings ? st.idleFrom : st.openedAt - 1e12;
      if (t < since) {
        since = t;
        victim = st;
      }
    }
    const now = this.now();
    if (victim === undefined) {
      this.capacityLog.refusal(now);
      return false;
    }
    this.capacityLog.eviction(now);
    this.sessions.delete(victim.session);
    victim.session.destroy();
    return true;
  }

  private calm(state: SessionState, reason: string): void {
    const session = state.session;
    if (session.destroyed || state.calmed) return;
    state.calmed = true;
    this.logger.warn({ err: reason }, 'grpc connection closed with ENHANCE_YOUR_CALM');
    session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from(reason));
    // After the GOAWAY is written (nghttp2 sends it on the next write cycle).
    setImmediate(() => {
      if (!session.destroyed) session.destroy();
    });
  }

  private control(state: SessionState, what: string): void {
    if (++state.control > this.limits.maxControlFramesPerSecond) this.calm(state, `too many ${what} frames (over ${this.limits.maxControlFramesPerSecond} per second)`);
  }

  /** Request bytes that a call keeps until its message is complete; over budget, the stream stops being read. */
  hold(call: NodeCall, n: number): void {
    call.held += n;
    this.buffered += n;
    const st = call.state;
    if (st === undefined) return;
    st.buffered += n;
    if (st.buffered >= this.limits.connectionBufferBytes || this.buffered >= this.limits.processBufferBytes) {
      // A paused stream is no longer consumed, so node grants the client no more window for it.
      call.stream.pause();
      (st.paused ??= new Set()).add(call.stream);
    }
  }

  private release(call: NodeCall): void {
    const n = call.held;
    if (n === 0) return;
    call.held = 0;
    this.buffered -= n;
    const st = call.state;
    if (st === undefined) return;
    st.buffered -= n;
    if (st.paused !== undefined && st.buffered < this.limits.connectionBufferBytes && this.buffered < this.limits.processBufferBytes) {
      const paused = st.paused;
      st.paused = undefined;
      for (const s of paused) if (!s.destroyed) s.resume();
    }
  }

  endReading(call: NodeCall): void {
    call.reading = false;
    this.reading.delete(call);
    this.release(call);
  }

  streamClosed(call: NodeCall): void {
    const st = call.state;
    if (call.reading) {
      call.reading = false;
      this.reading.delete(call);
      // Closed before the client finished sending: reset by the client, or refused by us.
      if (st !== undefined && !call.done && ++st.resets > this.limits.maxResetsPerSecond) {
        this.calm(st, `too many reset streams (over ${this.limits.maxResetsPerSecond} per second)`);
      }
    } else if (st !== undefined && !call.done && !call.expired && call.stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) {
      // Reset after it ended its side but before our answer: the rapid-reset pattern.
      if (++st.resets > this.limits.maxResetsPerSecond) this.calm(st, `too many reset streams (over ${this.limits.maxResetsPerSecond} per second)`);
    }
    this.release(call);
    if (st !== undefined && --st.open === 0) st.idleFrom = this.now();
  }

  private sweep(): void {
    const now = this.now();
    const l = this.limits;
    const newWindow = now - this.countersFrom >= FLOOD_WINDOW_MS;
    if (newWindow) this.countersFrom = now;
    for (const st of this.sessions.values()) {
      if (newWindow) {
        st.resets = 0;
        st.control = 0;
      }
      const s = st.session;
      if (s.destroyed) continue;
      if (st.closingAt !== 0) {
        // A header block that never ends holds a stream node does not show us: the session
        // would wait for it forever after the GOAWAY.
        if (now - st.closingAt >= l.requestReadTimeoutMs) s.destroy();
        continue;
      }
      if (s.closed) continue;
      if (!st.gotSettings) {
        if (now - st.openedAt >= l.prefaceTimeoutMs) {
          this.logger.debug({ ms: l.prefaceTimeoutMs }, 'grpc connection closed: no client preface in time');
          s.destroy();
        }
      } else if (l.idleTimeoutMs > 0 && st.open === 0 && now - st.idleFrom >= l.idleTimeoutMs) {
        this.logger.debug({ ms: l.idleTimeoutMs }, 'grpc connection idle: sending GOAWAY');
        st.closingAt = now;
        s.close();
      }
    }
    for (const call of this.reading) {
      if (now - call.openedAt < l.requestReadTimeoutMs) continue;
      this.reading.delete(call);
      call.reading = false;
      call.expired = true;
      this.logger.debug({ ms: l.requestReadTimeoutMs }, 'grpc stream reset: request not received in time');
      if (!call.stream.destroyed && !call.stream.closed) call.stream.close(http2.constants.NGHTTP2_CANCEL);
    }
  }

  /** GOAWAY after the jittered age, then a forced close after the grace (as grpc-go's MaxConnectionAge). */
  private limitAge(session: Http2Session): void {
    const ageMs = jitteredAge(this.maxAgeMs, this.random);
    let grace: NodeJS.Timeout | undefined;
    const age = setTimeout(() => {
      if (session.closed || session.destroyed) return;
      this.logger.debug({ ageMs }, 'grpc connection reached its maximum age; sending GOAWAY');
      // close() sends GOAWAY (NO_ERROR, last stream id) and ends the session when its streams are done.
      session.close();
      grace = setTimeout(() => {
        if (!session.destroyed) session.destroy();
      }, Math.min(MAX_TIMER_MS, this.ageGraceMs));
      grace.unref();
    }, ageMs);
    age.unref();
    session.once('close', () => {
      clearTimeout(age);
      if (grace !== undefined) clearTimeout(grace);
    });
  }

  connectionCount(): number {
    return this.sessions.size;
  }

  private onStream(raw: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    const stream = raw as CallStream;
    stream.on('error', onStreamError);
    try {
      const state = (stream.session as StateSession | undefined)?.[SESSION];
      if (state !== undefined) {
        state.open++;
        // Each request earns back one control frame (PINGs in step with traffic are not a flood).
        if (state.control > 0) state.control--;
      }
      const call = new NodeCall(this, stream, headers, state, this.now());
      stream[CALL] = call;
      // Counted before begin(): a refused call still closes (and is released) through onClose.
      stream.on('close', onClose);
      if (stream.readableEnded) call.reading = false;
      else this.reading.add(call);
      const ct = headers['content-type'];
      if (!this.d.begin(call, headers[':method'], headers[':path'], ct, headers['grpc-timeout'], headers['grpc-encoding'])) {
        return; // answered already
      }
      stream.on('data', onData);
      stream.on('end', onEnd);
      stream.on('wantTrailers', onWantTrailers);
    } catch (err) {
      this.logger.error({ err }, 'grpc stream handling failed');
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    }
  }

  listen(host: string, port: number): Promise<void> {
    return listenOn(this.server, this.logger, (cb) => this.server.listen(port, host, cb));
  }

  async listenUnix(path: string): Promise<void> {
    await removeStaleSocket(path);
    return listenOn(this.server, this.logger, (cb) => this.server.listen(path, cb));
  }

  setTls(tls: GrpcTlsOptions): void {
    if (!('setSecureContext' in this.server)) throw new Error('setTls: the gRPC server was created without TLS');
    this.server.setSecureContext(tlsContextOptions(tls));
    if (tls.verifyClient !== undefined) this.verifyClient = tls.verifyClient;
  }

  async close(graceMs: number): Promise<void> {
    this.closing = true;
    clearInterval(this.sweeper);
    this.d.endWatches();
    if (!this.server.listening) {
      for (const s of this.sessions.keys()) s.destroy();
      return;
    }
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sessions.keys()) s.close();
    const force = setTimeout(() => {
      for (const s of this.sessions.keys()) s.destroy();
    }, graceMs);
    await closed;
    clearTimeout(force);
  }
}

export function createNodeGrpcServer(opts: GrpcServerOptions): GrpcServer {
  const t = new NodeTransport(opts);
  return {
    listen: (host, port) => t.listen(host, port),
    listenUnix: (path) => t.listenUnix(path),
    address: (): AddressInfo | string | null => t.server.address(),
    setTls: (tls) => t.setTls(tls),
    connectionCount: () => t.connectionCount(),
    close: (graceMs = 10_000) => t.close(graceMs),
  };
}
