// What the transports need to know about service health: the aggregate state and a change
// notification (for grpc.health.v1 Watch). The health components themselves live elsewhere.
import { ServingStatus } from '@rls/rls-proto';
import type { HealthSource } from './grpc-server-types.js';

export type { HealthSource } from './grpc-server-types.js';

/** The gRPC health service name that mirrors the aggregate state (upstream registers "ratelimit"). */
export const RATELIMIT_HEALTH_SERVICE = 'ratelimit';

/**
 * Serving status of a health service name, or undefined for names the server does not know.
 * "" is always SERVING: upstream's grpc-go health server pre-registers it and never changes it.
 */
export function servingStatusOf(service: string, health: HealthSource, serviceName = RATELIMIT_HEALTH_SERVICE): number | undefined {
  if (service === '') return ServingStatus.SERVING;
  if (service === serviceName) return health.isHealthy() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  return undefined;
}
