// Comparison server: our gRPC server answering a constant OK without touching a store — the
// ceiling of the stack the service runs on. Usage: node lean-noop.mjs PORT
import { createGrpcServer } from '../../services/ratelimit/dist/src/server/grpc-server.js';

const port = Number(process.argv[2]);
const response = { overallCode: 1, statuses: [{ code: 1, limitRemaining: 0 }], responseHeadersToAdd: [] };
const server = createGrpcServer({
  shouldRateLimit: async () => response,
  health: { isHealthy: () => true, onChange: () => {} },
});
await server.listen('127.0.0.1', port);
console.log('listening', port);
