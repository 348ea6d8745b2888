// One process's RLQS pieces for transport tests: a QuotaBalancer on the memory share store with a
// fake clock and the `edge` rules (bucket `name: api`, 20 per second), and the RlqsService that serves
// it; each test overrides what it is about.
import { DEFAULT_BALANCER_TUNING, loadQuotaRules, MemoryShareStore, QuotaBalancer, StatsStore, type QuotaRuleSet } from '@rls/engine';
import { DEFAULT_RLQS_REPORT_LIMITS } from '@rls/rls-proto';
import { FakeClock } from '@rls/testkit';
import { RlqsService, type RlqsServiceOptions } from '../../src/server/rlqs-calls.js';

export const EDGE_API_RULES: QuotaRuleSet = loadQuotaRules(
  [{ name: 'edge.yaml', content: 'domain: edge\nquota_buckets:\n  - bucket_id: { name: api }\n    quota: { unit: second, requests_per_unit: 20 }\n' }],
  { mergeDomainConfig: false },
);

export interface RlqsTestService {
  readonly clock: FakeClock;
  readonly balancer: QuotaBalancer;
  readonly rlqs: RlqsService;
}

export function rlqsTestService(
  over: Partial<RlqsServiceOptions> = {},
  balancerOver: Partial<ConstructorParameters<typeof QuotaBalancer>[0]> = {},
): RlqsTestService {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const balancer = new QuotaBalancer({
    ...DEFAULT_BALANCER_TUNING,
    replicaId: 'r',
    clock,
    store: new MemoryShareStore(),
    rules: () => EDGE_API_RULES,
    stats: new StatsStore(),
    keyPrefix: '',
    ...balancerOver,
  });
  const rlqs = new RlqsService({
    balancer,
    clock,
    reportLimits: DEFAULT_RLQS_REPORT_LIMITS,
    maxStreamsPerConnection: 4,
    maxReportsPerSecond: 20,
    sendBufferBytes: 1024 * 1024,
    firstReportTimeoutMs: 10_000,
    // Ticks come from new watches and from the test.
    tickMs: 3_600_000,
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    ...over,
  });
  return { clock, balancer, rlqs };
}
