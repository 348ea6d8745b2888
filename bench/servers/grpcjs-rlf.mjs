// Comparison server: what a Node user would build instead — @grpc/grpc-js + protobufjs codecs +
// rate-limiter-flexible's RateLimiterRedis on ioredis, one limiter per descriptor key, fixed window.
// Usage: node grpcjs-rlf.mjs PORT REDIS_HOST:PORT
import grpc from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { loadRls, SERVICE_PATH } from './proto.mjs';

const { Req, Res } = loadRls();
const port = Number(process.argv[2]);
const [rhost, rport] = process.argv[3].split(':');
const redis = new Redis({ host: rhost, port: Number(rport), enableOfflineQueue: true, maxRetriesPerRequest: 1 });
const limiter = new RateLimiterRedis({ storeClient: redis, points: 4_000_000_000, duration: 3600, keyPrefix: 'rlf' });

async function decide(req) {
  const statuses = await Promise.all(
    req.descriptors.map(async (d) => {
      const key = `${req.domain}_${d.entries.map((e) => `${e.key}_${e.value}`).join('_')}`;
      try {
        const r = await limiter.consume(key, req.hitsAddend || 1);
        return { code: 1, currentLimit: { requestsPerUnit: 4_000_000_000, unit: 3 }, limitRemaining: Math.min(r.remainingPoints, 4294967295), durationUntilReset: { seconds: Math.ceil(r.msBeforeNext / 1000) } };
      } catch (r) {
        if (r instanceof Error) throw r;
        return { code: 2, currentLimit: { requestsPerUnit: 4_000_000_000, unit: 3 }, limitRemaining: 0 };
      }
    }),
  );
  return { overallCode: statuses.some((s) => s.code === 2) ? 2 : 1, statuses };
}

const server = new grpc.Server();
server.addService(
  {
    ShouldRateLimit: {
      path: SERVICE_PATH,
      requestStream: false,
      responseStream: false,
      requestDeserialize: (b) => Req.decode(b),
      responseSerialize: (v) => Buffer.from(Res.encode(Res.create(v)).finish()),
    },
  },
  {
    ShouldRateLimit: (call, cb) => {
      decide(call.request).then((r) => cb(null, r), (e) => cb({ code: grpc.status.UNAVAILABLE, details: String(e) }));
    },
  },
);
server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  console.log('listening', port);
});
