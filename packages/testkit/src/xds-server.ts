// A small xDS management server for tests: Aggregated Discovery Service (State of the World) on
// loopback, built on @grpc/grpc-js with messages coded by protobufjs from the .proto files the
// caller points it at (an implementation independent of the service's own client code). It
// records every DiscoveryRequest with the stream's metadata, answers new streams with the current
// snapshot when their version differs (as go-control-plane does), pushes new versions, bad
// versions and empty lists to every open stream, and can drop the streams.
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
export const RLS_CONFIG_TYPE_URL = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig';

/** A RateLimitConfig in protobufjs object form (snake_case fields, units by name). */
export interface RlsConfigResource {
  name: string;
  domain: string;
  descriptors?: RlsConfigDescriptor[];
}
export interface RlsConfigDescriptor {
  key: string;
  value?: string;
  rate_limit?: { unit?: string; requests_per_unit?: number; unlimited?: boolean; name?: string; replaces?: { name: string }[] };
  descriptors?: RlsConfigDescriptor[];
  shadow_mode?: boolean;
  detailed_metric?: boolean;
  quota_mode?: boolean;
}

/** A resource as sent: a type URL and the encoded message bytes. */
export interface RawResource {
  typeUrl: string;
  value: Uint8Array;
}

export interface RecordedRequest {
  /** Stream number, from 1, in order of opening. */
  readonly stream: number;
  readonly versionInfo: string;
  readonly responseNonce: string;
  readonly typeUrl: string;
  readonly resourceNames: readonly string[];
  readonly nodeId: string;
  readonly nodeMetadata: Readonly<Record<string, unknown>>;
  readonly errorDetail: { code: number; message: string } | undefined;
  /** gRPC metadata of the stream (lower-case keys, first value). */
  readonly headers: Readonly<Record<string, string>>;
  /** Date.now() when it arrived. */
  readonly at: number;
}

export interface XdsServerTls {
  key: Buffer;
  cert: Buffer;
  /** CA for client certificates; with `requireClientCert` the server demands one. */
  ca?: Buffer;
  requireClientCert?: boolean;
}

export interface XdsServerOptions {
  /** Directory holding envoy/service/discovery/v3/*.proto and ratelimit/config/ratelimit/v3/rls_conf.proto. */
  protoDir: string;
  /** Port to bind on 127.0.0.1 (0 = any free port). */
  port?: number;
  tls?: XdsServerTls;
}

export interface XdsManagementServer {
  /** `127.0.0.1:<port>`. */
  readonly address: string;
  readonly port: number;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Streams currently open. */
  openStreams(): number;
  /** Streams opened so far. */
  streamsOpened(): number;
  /** Sets the snapshot and sends it to every open stream; returns the nonce used. */
  push(version: string, resources: readonly RlsConfigResource[]): string;
  /** Same with resources already encoded (e.g. a wrong type URL or garbage bytes). */
  pushRaw(version: string, resources: readonly RawResource[]): string;
  /** Encodes a RateLimitConfig with this server's codec. */
  encode(resource: RlsConfigResource): Uint8Array;
  /** Ends every open stream with UNAVAILABLE (the connection stays up). */
  dropStreams(): void;
  /** Resolves with the first request (from index `from`) that matches. */
  waitForRequest(match: (r: RecordedRequest) => boolean, opts?: { from?: number; timeoutMs?: number }): Promise<RecordedRequest>;
  stop(): Promise<void>;
}

interface Codec {
  request: protobuf.Type;
  response: protobuf.Type;
  config: protobuf.Type;
}

function loadCodec(protoDir: string): Codec {
  const dir = protoDir.endsWith('/') ? protoDir : `${protoDir}/`;
  const root = new protobuf.Root();
  root.resolvePath = (_origin: string, target: string): string => (target.startsWith('google/protobuf/') ? target : `${dir}${target}`);
  root.loadSync(['envoy/service/discovery/v3/discovery.proto', 'ratelimit/config/ratelimit/v3/rls_conf.proto'], { keepCase: true });
  root.resolveAll();
  return {
    request: root.lookupType('envoy.service.discovery.v3.DiscoveryRequest'),
    response: root.lookupType('envoy.service.discovery.v3.DiscoveryResponse'),
    config: root.lookupType('ratelimit.config.ratelimit.v3.RateLimitConfig'),
  };
}

interface PbValue {
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
}

interface Snapshot {
  version: string;
  resources: readonly RawResource[];
}

export async function startXdsServer(opts: XdsServerOptions): Promise<XdsManagementServer> {
  const codec = loadCodec(opts.protoDir);
  const requests: RecordedRequest[] = [];
  const waiters: { match: (r: RecordedRequest) => boolean; from: number; resolve: (r: RecordedRequest) => void }[] = [];
  const open = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
  let opened = 0;
  let nonceSeq = 0;
  let snapshot: Snapshot | undefined;

  const send = (call: grpc.ServerDuplexStream<Buffer, Buffer>, snap: Snapshot): string => {
    const nonce = String(++nonceSeq);
    const msg = codec.response.fromObject({
      version_info: snap.version,
      type_url: RLS_CONFIG_TYPE_URL,
      nonce,
      resources: snap.resources.map((r) => ({ type_url: r.typeUrl, value: r.value })),
    });
    call.write(Buffer.from(codec.response.encode(msg).finish()));
    return nonce;
  };

  const record = (r: RecordedRequest): void => {
    requests.push(r);
    const index = requests.length - 1;
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      if (index >= w.from && w.match(r)) {
        waiters.splice(i, 1);
        w.resolve(r);
      }
    }
  };

  const handler = (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
    const stream = ++opened;
    open.add(call);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(call.metadata.getMap())) headers[k] = typeof v === 'string' ? v : v.toString();
    let first = true;
    call.on('data', (bytes: Buffer) => {
      const pb = codec.request.toObject(codec.request.decode(bytes), { defaults: true, arrays: true }) as {
        version_info: string;
        response_nonce: string;
        type_url: string;
        resource_names: string[];
        node?: { id?: string; metadata?: { fields?: Record<string, PbValue> } } | null;
        error_detail?: { code?: number; message?: string } | null;
      };
      const meta: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(pb.node?.metadata?.fields ?? {})) meta[k] = v.stringValue ?? v.numberValue ?? v.boolValue ?? null;
      record({
        stream,
        versionInfo: pb.version_info,
        responseNonce: pb.response_nonce,
        typeUrl: pb.type_url,
        resourceNames: pb.resource_names,
        nodeId: pb.node?.id ?? '',
        nodeMetadata: meta,
        errorDetail: pb.error_detail === null || pb.error_detail === undefined ? undefined : { code: pb.error_detail.code ?? 0, message: pb.error_detail.message ?? '' },
        headers,
        at: Date.now(),
      });
      if (first) {
        first = false;
        if (snapshot !== undefined && snapshot.version !== pb.version_info) send(call, snapshot);
      }
    });
    call.on('error', () => undefined);
    const done = (): void => {
      open.delete(call);
    };
    call.on('end', () => {
      done();
      call.end();
    });
    call.on('close', done);
    call.on('cancelled', done);
  };

  const server = new grpc.Server();
  const identity = (b: Buffer): Buffer => b;
  server.addService(
    {
      StreamAggregatedResources: {
        path: ADS_PATH,
        requestStream: true,
        responseStream: true,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    { StreamAggregatedResources: handler as grpc.handleBidiStreamingCall<Buffer, Buffer> },
  );
  const creds =
    opts.tls === undefined
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(opts.tls.ca ?? null, [{ private_key: opts.tls.key, cert_chain: opts.tls.cert }], opts.tls.requireClientCert === true);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${opts.port ?? 0}`, creds, (err, p) => (err !== null ? reject(err) : resolve(p)));
  });

  const encode = (r: RlsConfigResource): Uint8Array => codec.config.encode(codec.config.fromObject(r)).finish();
  const pushRaw = (version: string, resources: readonly RawResource[]): string => {
    snapshot = { version, resources };
    let nonce = '';
    for (const call of open) nonce = send(call, snapshot);
    return nonce;
  };

  return {
    address: `127.0.0.1:${port}`,
    port,
    requests,
    openStreams: () => open.size,
    streamsOpened: () => opened,
    encode,
    pushRaw,
    push: (version, resources) => pushRaw(version, resources.map((r) => ({ typeUrl: RLS_CONFIG_TYPE_URL, value: encode(r) }))),
    dropStreams: () => {
      // grpc-js ends a server stream with a status when 'error' is emitted on it.
      for (const call of open) call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'dropped by the test' });
      open.clear();
    },
    waitForRequest: (match, o = {}) => {
      const from = o.from ?? 0;
      for (let i = from; i < requests.length; i++) if (match(requests[i]!)) return Promise.resolve(requests[i]!);
      return new Promise((resolve, reject) => {
        const w = { match, from, resolve: (r: RecordedRequest) => { clearTimeout(t); resolve(r); } };
        const t = setTimeout(() => {
          const i = waiters.indexOf(w);
          if (i >= 0) waiters.splice(i, 1);
          reject(new Error(`xDS test server: no matching request within ${o.timeoutMs ?? 10_000} ms (got ${requests.length})`));
        }, o.timeoutMs ?? 10_000);
        waiters.push(w);
      });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        open.clear();
        resolve();
      }),
  };
}
