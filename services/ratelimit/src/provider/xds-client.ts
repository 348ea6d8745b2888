// An ADS State-of-the-World client for one resource type (as upstream's xds_grpc_sotw_provider.go), on @grpc/grpc-js with
// the protobufjs-based codecs of @rls/rls-proto. One bidi stream
// `AggregatedDiscoveryService/StreamAggregatedResources`, wildcard subscription (no resource
// names), node id and metadata on every request; every response is handed to `onUpdate`, which
// answers ACK (undefined) or NACK (the error text). After any failure the connection is closed,
// the client waits a backoff (xds-backoff.ts) and dials again; the first request of a new stream
// carries the last acknowledged version and the last nonce, so the server can tell a reconnect
// from a fresh start.
import * as grpc from '@grpc/grpc-js';
import { ADS_STREAM_PATH, decodeDiscoveryResponse, encodeDiscoveryRequest, type AnyMsg, type DiscoveryRequestMsg, type DiscoveryResponseMsg } from '@rls/rls-proto';
import { mathRandom, type RandomSource } from '@rls/engine';
import type { Logger } from '../logger.js';
import { backoffDelayMs, realScheduler, type BackoffPolicy, type Scheduler } from './xds-backoff.js';

export interface XdsTlsOptions {
  /** PEM CA that the management server's certificate must chain to; system roots when absent. */
  ca?: Buffer | undefined;
  /** PEM client certificate chain and key, when the server asks for one. */
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
  /** Name to verify in the server certificate instead of the host of the URL. */
  serverName?: string | undefined;
}

export interface XdsUpdate {
  readonly versionInfo: string;
  readonly nonce: string;
  readonly typeUrl: string;
  readonly resources: readonly AnyMsg[];
}

/** Applies one update: undefined to ACK it, or the error text to NACK it. */
export type XdsUpdateHandler = (update: XdsUpdate) => string | undefined;

export interface AdsClientOptions {
  /** gRPC target, e.g. `localhost:18000`. */
  serverUrl: string;
  typeUrl: string;
  nodeId: string;
  /** Node metadata; values are sent as Struct strings. */
  nodeMetadata: Readonly<Record<string, string>>;
  /** gRPC metadata sent when the stream opens (e.g. authorization). */
  headers: Readonly<Record<string, string>>;
  /** TLS to the server; cleartext when absent. */
  tls?: XdsTlsOptions | undefined;
  /** Largest accepted response message, bytes; 0 keeps grpc-js's default (4 MiB). */
  maxReceiveBytes: number;
  /** Bound on one connection attempt (dial until the channel is ready), ms. */
  connectTimeoutMs: number;
  backoff: BackoffPolicy;
  onUpdate: XdsUpdateHandler;
  logger: Logger;
  scheduler?: Scheduler | undefined;
  random?: RandomSource | undefined;
}

export type AdsClientState = 'idle' | 'connecting' | 'streaming' | 'waiting' | 'stopped';

/** google.rpc.Code INVALID_ARGUMENT: the NACK's error_detail code. */
const NACK_CODE = 3;

export class AdsClient {
  private readonly opts: AdsClientOptions;
  private readonly scheduler: Scheduler;
  private readonly random: RandomSource;
  private readonly credentials: grpc.ChannelCredentials;
  private readonly channelOptions: grpc.ChannelOptions;
  private client: grpc.Client | undefined;
  private call: grpc.ClientDuplexStream<DiscoveryRequestMsg, DiscoveryResponseMsg> | undefined;
  private timer: unknown;
  private failures = 0;
  private ackedVersion = '';
  private lastNonce = '';
  private current: AdsClientState = 'idle';
  private attemptCount = 0;

  constructor(opts: AdsClientOptions) {
    this.opts = opts;
    this.scheduler = opts.scheduler ?? realScheduler;
    this.random = opts.random ?? mathRandom;
    const tls = opts.tls;
    this.credentials = tls === undefined ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null);
    const channelOptions: grpc.ChannelOptions = {};
    if (opts.maxReceiveBytes > 0) channelOptions['grpc.max_receive_message_length'] = opts.maxReceiveBytes;
    if (tls?.serverName !== undefined && tls.serverName !== '') channelOptions['grpc.ssl_target_name_override'] = tls.serverName;
    this.channelOptions = channelOptions;
  }

  get state(): AdsClientState {
    return this.current;
  }

  /** Version of the last acknowledged update ('' before the first). */
  get lastAckedVersion(): string {
    return this.ackedVersion;
  }

  /** Connection attempts made so far. */
  get attempts(): number {
    return this.attemptCount;
  }

  start(): void {
    if (this.current !== 'idle') return;
    this.dial();
  }

  /** Closes the stream and the connection and cancels any pending retry. */
  stop(): void {
    if (this.current === 'stopped') return;
    this.current = 'stopped';
    if (this.timer !== undefined) this.scheduler.clearTimeout(this.timer);
    this.timer = undefined;
    this.teardown();
  }

  private dial(): void {
    if (this.current === 'stopped') return;
    this.current = 'connecting';
    this.attemptCount++;
    const client = new grpc.Client(this.opts.serverUrl, this.credentials, this.channelOptions);
    this.client = client;
    const channel = client.getChannel();
    const deadline = Date.now() + this.opts.connectTimeoutMs;
    const check = (): void => {
      if (this.client !== client) return;
      const st = channel.getConnectivityState(true);
      if (st === grpc.connectivityState.READY) {
        this.openStream(client);
        return;
      }
      if (st === grpc.connectivityState.TRANSIENT_FAILURE || st === grpc.connectivityState.SHUTDOWN) {
        this.failed('cannot connect to the management server');
        return;
      }
      channel.watchConnectivityState(st, deadline, (err?: Error) => {
        if (err !== undefined) {
          if (this.client === client) this.failed(`no connection to the management server within ${this.opts.connectTimeoutMs} ms`);
          return;
        }
        check();
      });
    };
    check();
  }

  private openStream(client: grpc.Client): void {
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(this.opts.headers)) md.add(k, v);
    const call = client.makeBidiStreamRequest<DiscoveryRequestMsg, DiscoveryResponseMsg>(ADS_STREAM_PATH, encodeDiscoveryRequest, decodeDiscoveryResponse, md);
    this.call = call;
    this.current = 'streaming';
    call.on('data', (res: DiscoveryResponseMsg) => {
      if (this.call === call) this.onResponse(res);
    });
    // 'status' always follows the end of a call; 'error' only needs a listener so it is not thrown.
    call.on('error', () => undefined);
    call.on('status', (st: grpc.StatusObject) => {
      if (this.call !== call) return;
      this.failed(st.code === grpc.status.OK ? 'management server closed the stream' : `stream failed: ${grpc.status[st.code]}: ${st.details}`);
    });
    this.opts.logger.info({ server: this.opts.serverUrl, version: this.ackedVersion }, 'xDS stream opened');
    this.send({ versionInfo: this.ackedVersion, responseNonce: this.lastNonce });
  }

  private onResponse(res: DiscoveryResponseMsg): void {
    // The connection works: the next failure starts the backoff from the beginning.
    this.failures = 0;
    this.lastNonce = res.nonce;
    let nack: string | undefined;
    if (res.typeUrl !== this.opts.typeUrl) {
      nack = `unexpected type_url ${JSON.stringify(res.typeUrl)}, subscribed to ${this.opts.typeUrl}`;
    } else {
      try {
        nack = this.opts.onUpdate({ versionInfo: res.versionInfo, nonce: res.nonce, typeUrl: res.typeUrl, resources: res.resources });
      } catch (err) {
        nack = err instanceof Error ? err.message : String(err);
      }
    }
    if (nack === undefined) {
      this.ackedVersion = res.versionInfo;
      this.send({ versionInfo: res.versionInfo, responseNonce: res.nonce });
    } else {
      this.opts.logger.warn({ version: res.versionInfo, err: nack }, 'xDS update rejected (NACK)');
      this.send({ versionInfo: this.ackedVersion, responseNonce: res.nonce, errorDetail: { code: NACK_CODE, message: nack } });
    }
  }

  private send(fields: Pick<DiscoveryRequestMsg, 'versionInfo' | 'responseNonce' | 'errorDetail'>): void {
    const metadata: Record<string, string> = { ...this.opts.nodeMetadata };
    const req: DiscoveryRequestMsg = {
      versionInfo: fields.versionInfo,
      node: { id: this.opts.nodeId, metadata },
      resourceNames: [],
      typeUrl: this.opts.typeUrl,
      responseNonce: fields.responseNonce,
    };
    if (fields.errorDetail !== undefined) req.errorDetail = fields.errorDetail;
    try {
      this.call?.write(req);
    } catch (err) {
      this.opts.logger.debug({ err }, 'xDS request write failed');
    }
  }

  private failed(why: string): void {
    if (this.current === 'stopped') return;
    this.teardown();
    const delay = backoffDelayMs(this.opts.backoff, this.failures, this.random);
    this.failures++;
    this.current = 'waiting';
    this.opts.logger.warn({ server: this.opts.serverUrl, err: why, retryInMs: delay }, 'xDS connection lost; last rules stay active');
    this.timer = this.scheduler.setTimeout(() => {
      this.timer = undefined;
      this.dial();
    }, delay);
  }

  private teardown(): void {
    const call = this.call;
    const client = this.client;
    this.call = undefined;
    this.client = undefined;
    try {
      call?.cancel();
    } catch {
      // already ended
    }
    client?.close();
  }
}
