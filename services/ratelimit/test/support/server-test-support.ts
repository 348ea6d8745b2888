// Shared pieces of the transport tests: a controllable health source, a scripted service
// function, an independent grpc-js client built from our .proto files by @grpc/proto-loader,
// and a self-signed certificate made by openssl.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_DIR, PROTO_FILES } from '@rls/rls-proto';
import { RateLimitError, StoreError, type MaybePromise, type RateLimitRequest, type RateLimitResponse } from '@rls/engine';
import type { CallContext } from '../../src/server/grpc-server.js';
import type { HealthSource } from '../../src/server/health-source.js';

export class TestHealth implements HealthSource {
  private healthy: boolean;
  private readonly listeners: Array<() => void> = [];
  constructor(healthy = true) {
    this.healthy = healthy;
  }
  isHealthy(): boolean {
    return this.healthy;
  }
  onChange(cb: () => void): void {
    this.listeners.push(cb);
  }
  set(healthy: boolean): void {
    this.healthy = healthy;
    for (const l of this.listeners) l();
  }
}

/** Domain prefix of a scripted call that answers (or fails) through a promise instead of at once. */
export const LATER = 'later.';

/**
 * A scripted ShouldRateLimit: the domain picks the behaviour. It answers at once (failures thrown),
 * as the engine on the memory store does; a domain prefixed with LATER gets the same answer or
 * failure through a promise (resolved or rejected), as over a network store. Every request it sees
 * and every abort it observes is recorded for assertions.
 */
export function scriptedService(): {
  fn: (req: RateLimitRequest, ctx: CallContext) => MaybePromise<RateLimitResponse>;
  seen: RateLimitRequest[];
  aborted: string[];
} {
  const seen: RateLimitRequest[] = [];
  const aborted: string[] = [];
  const decide = (req: RateLimitRequest, ctx: CallContext): MaybePromise<RateLimitResponse> => {
    switch (req.domain) {
      case '':
        throw new RateLimitError('invalid_request', 'rate limit domain must not be empty');
      case 'noconfig':
        throw new RateLimitError('no_config', 'no rate limit configuration loaded');
      case 'store':
        throw new StoreError('connect ECONNREFUSED 127.0.0.1:6379 – 100% down');
      case 'bug':
        throw new TypeError('cannot read properties of undefined');
      case 'hang':
        return new Promise<RateLimitResponse>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            aborted.push(req.domain);
            reject(new Error('aborted'));
          });
        });
      case 'slow':
        return new Promise((r) => setTimeout(r, 300)).then(() => answer(req));
      case 'empty':
        return { overallCode: 0, statuses: [], responseHeadersToAdd: [] };
      default:
        return answer(req);
    }
  };
  const fn = (req: RateLimitRequest, ctx: CallContext): MaybePromise<RateLimitResponse> => {
    seen.push(req);
    if (!req.domain.startsWith(LATER)) return decide(req, ctx);
    const unprefixed = { ...req, domain: req.domain.slice(LATER.length) };
    return Promise.resolve().then(() => decide(unprefixed, ctx));
  };
  return { fn, seen, aborted };
}

function answer(req: RateLimitRequest): RateLimitResponse {
  if (req.descriptors.length === 0) throw new RateLimitError('invalid_request', 'rate limit descriptor list must not be empty');
  const over = req.domain === 'over';
  return {
    overallCode: over ? 2 : 1,
    statuses: req.descriptors.map((_d, i) => ({
      code: over ? 2 : 1,
      currentLimit: { requestsPerUnit: 20, unit: i === 1 ? 7 : 2, name: i === 1 ? 'weekly' : '' },
      limitRemaining: over ? 0 : 19,
      durationUntilReset: 37,
    })),
    responseHeadersToAdd: [{ key: 'RateLimit-Limit', value: '20' }],
    ...(req.domain === 'meta' ? { dynamicMetadata: { shadow: true, n: 1.5, list: ['a', null] } } : {}),
  };
}

export interface GrpcJsStubs {
  rls: grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  health: grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  close(): void;
}

type Ctor = new (address: string, creds: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => GrpcJsStubs['rls'];

let cached: { Rls: Ctor; Health: Ctor } | undefined;

function constructors(): { Rls: Ctor; Health: Ctor } {
  if (cached !== undefined) return cached;
  const def = protoLoader.loadSync([PROTO_FILES.rls, PROTO_FILES.health], {
    includeDirs: [PROTO_DIR],
    keepCase: false,
    enums: String,
    longs: Number,
    defaults: false,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: Ctor } } } };
    grpc: { health: { v1: { Health: Ctor } } };
  };
  cached = { Rls: pkg.envoy.service.ratelimit.v3.RateLimitService, Health: pkg.grpc.health.v1.Health };
  return cached;
}

/** grpc-js stubs generated from our .proto files (protobufjs encoding, not our codec). */
export function grpcJsStubs(address: string, creds = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}): GrpcJsStubs {
  const { Rls, Health } = constructors();
  const rls = new Rls(address, creds, options);
  const health = new Health(address, creds, options);
  return {
    rls,
    health,
    close() {
      rls.close();
      health.close();
    },
  };
}

export function unaryCall<T>(client: GrpcJsStubs['rls'], method: string, req: unknown, opts: grpc.CallOptions = { deadline: Date.now() + 5000 }): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = client[method];
    if (fn === undefined) throw new Error(`no method ${method}`);
    fn.call(client, req, opts, (err: grpc.ServiceError | null, res: T) => (err !== null ? reject(err) : resolve(res)));
  });
}

/** Generic unary call on an arbitrary path with raw bytes in and out. */
export function rawUnary(client: grpc.Client, path: string, body: Buffer, opts: grpc.CallOptions = { deadline: Date.now() + 5000 }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, body, new grpc.Metadata(), opts, (err, res) =>
      err !== null ? reject(err) : resolve(res ?? Buffer.alloc(0)),
    );
  });
}

/** A self-signed certificate for `localhost` / 127.0.0.1, made with openssl in `dir`. */
export function selfSignedCert(dir: string, name = 'server'): { key: Buffer; cert: Buffer } {
  const keyPath = join(dir, `${name}.key`);
  const certPath = join(dir, `${name}.crt`);
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { stdio: 'ignore' });
  return { key: readFileSync(keyPath), cert: readFileSync(certPath) };
}

