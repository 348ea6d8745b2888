// The logger of servers built without one (tests): logs are dropped. The TransportLogger type
// lives in the leaf grpc-server-types.ts.
import type { TransportLogger } from './grpc-server-types.js';

export type { TransportLogger } from './grpc-server-types.js';

function noop(): void {}

export const silentLogger: TransportLogger = { debug: noop, info: noop, warn: noop, error: noop };
