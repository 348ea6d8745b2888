// Test glue until phase 2 puts RLQS on the lean HTTP/2 transport: a @grpc/grpc-js server whose
// StreamRateLimitQuotas handler feeds a QuotaBalancer, with the hand-written codecs on both sides
// of the wire. It counts the messages it received and sent so a test driving simulated Envoys on
// a fake clock can wait until the network has delivered everything before the next step.
import * as grpc from '@grpc/grpc-js';
import { RateLimitError, type QuotaBalancer } from '@rls/engine';
import {
  decodeRateLimitQuotaResponse,
  decodeRateLimitQuotaUsageReports,
  encodeRateLimitQuotaResponse,
  encodeRateLimitQuotaUsageReports,
  STREAM_RATE_LIMIT_QUOTAS_PATH,
  type RateLimitQuotaResponseMsg,
  type RateLimitQuotaUsageReportsMsg,
} from '@rls/rls-proto';
import type { SimCodec } from '@rls/testkit';

export interface RlqsHost {
  readonly address: string;
  /** Report messages received, action messages sent, streams opened. */
  readonly counts: { received: number; sent: number; streams: number };
  /** Runs `onWatch` after a report that watched new buckets (the transport may tick early). */
  onWatch: (() => void) | undefined;
  stop(): Promise<void>;
  /** Drops every stream at once, as a crashed process would. */
  kill(): void;
}

/** The hand-written codec in the simulator's shape (the types are structurally the same). */
export const HAND_WRITTEN_SIM_CODEC: SimCodec = {
  encodeReports: (m) => encodeRateLimitQuotaUsageReports(m),
  decodeResponse: (b) => decodeRateLimitQuotaResponse(b),
};

const serviceDefinition: grpc.ServiceDefinition = {
  StreamRateLimitQuotas: {
    path: STREAM_RATE_LIMIT_QUOTAS_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: (m: RateLimitQuotaUsageReportsMsg) => encodeRateLimitQuotaUsageReports(m),
    requestDeserialize: (b: Buffer) => decodeRateLimitQuotaUsageReports(b),
    responseSerialize: (m: RateLimitQuotaResponseMsg) => encodeRateLimitQuotaResponse(m),
    responseDeserialize: (b: Buffer) => decodeRateLimitQuotaResponse(b),
  },
};

function statusOf(err: unknown): grpc.status {
  if (err instanceof RateLimitError) return err.code === 'resource_exhausted' ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.INVALID_ARGUMENT;
  return grpc.status.INTERNAL;
}

export async function hostRlqs(balancer: QuotaBalancer, port = 0): Promise<RlqsHost> {
  const server = new grpc.Server();
  const counts = { received: 0, sent: 0, streams: 0 };
  const calls = new Set<grpc.ServerDuplexStream<RateLimitQuotaUsageReportsMsg, RateLimitQuotaResponseMsg>>();
  const host: RlqsHost = {
    address: '',
    counts,
    onWatch: undefined,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const c of calls) c.end();
        server.tryShutdown(() => resolve());
      }),
    kill: () => server.forceShutdown(),
  };
  server.addService(serviceDefinition, {
    StreamRateLimitQuotas: (call: grpc.ServerDuplexStream<RateLimitQuotaUsageReportsMsg, RateLimitQuotaResponseMsg>) => {
      calls.add(call);
      counts.streams++;
      let stream: ReturnType<QuotaBalancer['openStream']>;
      try {
        stream = balancer.openStream((m) => {
          counts.sent++;
          call.write(m);
        });
      } catch (err) {
        call.emit('error', { code: statusOf(err), details: (err as Error).message });
        return;
      }
      const done = (): void => {
        calls.delete(call);
        balancer.closeStream(stream);
      };
      call.on('data', (m: RateLimitQuotaUsageReportsMsg) => {
        counts.received++;
        try {
          if (balancer.report(stream, m) > 0) host.onWatch?.();
        } catch (err) {
          done();
          call.emit('error', { code: statusOf(err), details: (err as Error).message });
        }
      });
      call.on('end', () => {
        done();
        call.end();
      });
      call.on('error', done);
      call.on('cancelled', done);
    },
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err !== null ? reject(err) : resolve(p))),
  );
  return Object.assign(host, { address: `127.0.0.1:${bound}` });
}
