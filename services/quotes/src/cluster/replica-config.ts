import type { Settings } from '../settings.js';
import { parseDatabaseUrl } from '../store/database-url.js';

/**
 * Configurations that would run several replicas wrongly, refused at start-up (each message
 * names the settings to change). On PostgreSQL several replicas may share the database, so the
 * embedded rate limiter, whose burst counters live in each process, would admit N times each
 * limit; SQLite and `memory:` are one process, so roles other than `all` make no sense there.
 */
export function replicaConfigProblems(s: Readonly<Settings>): string[] {
  const kind = parseDatabaseUrl(s.databaseUrl, s.dataDir)?.kind;
  const problems: string[] = [];
  if (kind !== 'postgres') {
    if (s.role !== 'all') {
      problems.push(
        `QUOTES_ROLE=${s.role} needs PostgreSQL (DATABASE_URL=postgres://...), where several replicas share one database; with ${kind === 'memory' ? '`memory:`' : 'SQLite'} the service is one process: use QUOTES_ROLE=all (the default)`,
      );
    }
    return problems;
  }
  if (s.singleReplica && s.role !== 'all') problems.push(`QUOTES_SINGLE_REPLICA=true declares one replica, which must then be QUOTES_ROLE=all (not ${s.role})`);
  if (s.rateLimitEnabled && s.rateLimitGrpcAddr === undefined && !s.singleReplica) {
    problems.push(
      'DATABASE_URL is PostgreSQL, so several replicas may share it, but RATELIMIT_GRPC_ADDR is unset: the embedded rate limiter counts burst limits in each process, so N replicas would admit N times each limit. ' +
        'Set RATELIMIT_GRPC_ADDR to a ratelimit service (host:port of its gRPC listener, on Redis) loaded with the shipped rule file services/quotes/ratelimit/quotes.yaml (domain RATELIMIT_DOMAIN=quotes); ' +
        'or QUOTES_SINGLE_REPLICA=true when exactly one replica runs; or RATELIMIT_ENABLED=false to run without burst limits',
    );
  }
  return problems;
}
