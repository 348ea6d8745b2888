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

const SESSION_WINDOW = 1024 * 1024;

const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': 'identity,gzip' };
const OK_TRAILERS = { 'grpc-status': '0' };
const WAIT_TRAILERS = { waitForTrailers: true };
const END_STREAM = { endStream: true };

const CALL = Symbol('grpcCall');
type CallStream = ServerHttp2Stream & { [CALL]?: NodeCall };

class NodeCall extends GrpcCall {
  readonly stream: CallStream;
  readonly d: GrpcDispatcher;
  private readonly reqHeaders: IncomingHttpHeaders;
  trailers: Record<string, string> = OK_TRAILERS;

  constructor(d: GrpcDispatcher, stream: CallStream, headers: IncomingHttpHeaders) {
    super();
    this.d = d;
    this.stream = stream;
    this.reqHeaders = headers;
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
  if (call !== undefined) call.d.onData(call, chunk);
}

function onEnd(this: CallStream): void {
  const call = this[CALL];
  if (call !== undefined) call.d.onEnd(call);
}

function onClose(this: CallStream): void {
  const call = this[CALL];
  if (call !== undefined) call.d.onReset(call);
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
  private readonly d: GrpcDispatcher;
  private readonly sessions = new Set<Http2Session>();
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
    const settings: http2.Settings = {
      maxConcurrentStreams: opts.maxConcurrentStreams ?? 1000,
      initialWindowSize: SESSION_WINDOW,
      // Envoy forwards only a handful of headers; 64 KiB bounds hostile header lists.
      maxHeaderListSize: 64 * 1024,
    };
    // Node's default (10 MB) makes a busy connection refuse streams with ENHANCE_YOUR_CALM.
    const common = { settings, maxSessionMemory: 64 };
    if (opts.tls !== undefined) {
      this.server = http2.createSecureServer({
        ...common,
        ...tlsContextOptions(opts.tls),
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
    this.sessions.add(session);
    session.once('close', () => this.sessions.delete(session));
    session.on('error', (err: Error) => this.logger.debug({ err }, 'grpc connection error'));
    if (this.maxAgeMs > 0) this.limitAge(session);
    try {
      session.setLocalWindowSize(SESSION_WINDOW);
    } catch {
      // Only an optimisation for large requests; the default window works.
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
      const call = new NodeCall(this.d, stream, headers);
      stream[CALL] = call;
      const ct = headers['content-type'];
      if (!this.d.begin(call, headers[':method'], headers[':path'], ct, headers['grpc-timeout'], headers['grpc-encoding'])) {
        return; // answered already
      }
      stream.on('data', onData);
      stream.on('end', onEnd);
      stream.on('close', onClose);
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
    this.d.endWatches();
    if (!this.server.listening) {
      for (const s of this.sessions) s.destroy();
      return;
    }
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sessions) s.close();
    const force = setTimeout(() => {
      for (const s of this.sessions) s.destroy();
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
