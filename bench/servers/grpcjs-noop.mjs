// Comparison server: @grpc/grpc-js answering ShouldRateLimit with a constant OK and no store —
// the ceiling of the grpc-js stack. Usage: node grpcjs-noop.mjs PORT
import grpc from '@grpc/grpc-js';
import { loadRls, SERVICE_PATH } from './proto.mjs';

const { Req, Res } = loadRls();
const port = Number(process.argv[2]);
const okBytes = Buffer.from(Res.encode(Res.create({ overallCode: 1, statuses: [{ code: 1 }] })).finish());
const server = new grpc.Server();
server.addService(
  {
    ShouldRateLimit: {
      path: SERVICE_PATH,
      requestStream: false,
      responseStream: false,
      requestDeserialize: (b) => Req.decode(b),
      responseSerialize: (v) => v,
    },
  },
  { ShouldRateLimit: (_call, cb) => cb(null, okBytes) },
);
server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  console.log('listening', port);
});
