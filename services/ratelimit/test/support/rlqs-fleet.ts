// Drives simulated Envoy instances (testkit's SimulatedEnvoy, each on its own grpc-js client,
// so its own HTTP/2 connection) against RLQS hosts on one fake clock: requests at each instance's
// offered rate, the instances' report timers, and each replica's balancer tick at its own offset
// within the second. After every step that put messages on the wire it waits, bounded, until the
// hosts have received every report sent and the instances every response sent, so a run is
// deterministic however slow the machine.
import * as grpc from '@grpc/grpc-js';
import { loadQuotaRules, type QuotaBalancer, type QuotaRuleSet } from '@rls/engine';
import { grpcSimStream, SimulatedEnvoy, waitFor, type FakeClock, type SimBucketEntry, type SimBucketSettings, type SimStrategy } from '@rls/testkit';
import { HAND_WRITTEN_SIM_CODEC, type RlqsHost } from './rlqs-grpc-js-host.js';

/** The fleet tests' quota: domain `edge`, bucket `{name: api}`, QUOTA a second with BURST. */
export const QUOTA = 100;
export const BURST = 20;
export const RULES: QuotaRuleSet = loadQuotaRules(
  [{ name: 'edge.yaml', content: `domain: edge\nquota_buckets:\n  - bucket_id: { name: api }\n    quota: { unit: second, requests_per_unit: ${QUOTA}, burst: ${BURST} }\n` }],
  { mergeDomainConfig: false },
);
export const API = [{ key: 'name', value: 'api' }];

/** Requests a second an assignment grants (NaN unless a token bucket). */
export function rateOf(s: SimStrategy | undefined): number {
  return s?.kind === 'token_bucket' ? (s.tokenBucket.tokensPerFill ?? 1) / s.tokenBucket.fillInterval! : NaN;
}

export interface FleetReplica {
  balancer: QuotaBalancer;
  host: RlqsHost;
  /** Tick at this many ms past each whole second. */
  tickOffsetMs: number;
}

export interface FleetEnvoy {
  readonly sim: SimulatedEnvoy;
  readonly client: grpc.Client;
  /** Offered load, requests per second (changed by the test to shift demand). */
  rate: number;
  /** Fraction of a request carried to the next step. */
  carry: number;
}

export class RlqsFleet {
  readonly envoys: FleetEnvoy[] = [];
  /** Requests admitted per whole second of the fake clock (all instances). */
  readonly admittedPerSecond = new Map<number, number>();
  /** Offsets that forget messages lost with a killed stream. */
  private lostReports = 0;
  private lostResponses = 0;
  /** Counts of hosts replaced by `replace`. */
  private retired = { received: 0, sent: 0 };

  constructor(
    private readonly clock: FakeClock,
    readonly replicas: FleetReplica[],
    private readonly bucket: SimBucketEntry[],
    private readonly domain = 'edge',
  ) {}

  add(replica: number, rate: number, settings: Partial<SimBucketSettings> = {}): FleetEnvoy {
    const client = new grpc.Client(this.replicas[replica]!.host.address, grpc.credentials.createInsecure());
    const sim = new SimulatedEnvoy({
      domain: this.domain,
      clock: this.clock,
      settings: () => ({ reportingIntervalMs: 1000, ...settings }),
      open: grpcSimStream(client, HAND_WRITTEN_SIM_CODEC),
    });
    const e: FleetEnvoy = { sim, client, rate, carry: 0 };
    this.envoys.push(e);
    return e;
  }

  /** Waits until every message on the wire has arrived. */
  async settle(): Promise<void> {
    await waitFor(
      () => {
        const sentReports = this.envoys.reduce((n, e) => n + e.sim.counters.reportsSent, 0) - this.lostReports;
        const received = this.received();
        const sentActions = this.sentActions() - this.lostResponses;
        const responses = this.envoys.reduce((n, e) => n + e.sim.counters.responses, 0);
        return received >= sentReports && responses >= sentActions;
      },
      { timeoutMs: 10_000, intervalMs: 2, what: 'RLQS messages to arrive' },
    );
  }

  private received(): number {
    return this.replicas.reduce((n, r) => n + r.host.counts.received, this.retired.received);
  }

  private sentActions(): number {
    return this.replicas.reduce((n, r) => n + r.host.counts.sent, this.retired.sent);
  }

  /**
   * Puts `next` in place of replica `index` (a restarted process). Call once the old host's
   * streams are broken: messages that were in flight on them are lost, not late.
   */
  replace(index: number, next: FleetReplica): void {
    const old = this.replicas[index]!;
    this.retired.received += old.host.counts.received;
    this.retired.sent += old.host.counts.sent;
    this.replicas[index] = next;
    this.lostReports = this.envoys.reduce((n, e) => n + e.sim.counters.reportsSent, 0) - this.received();
    this.lostResponses = this.sentActions() - this.envoys.reduce((n, e) => n + e.sim.counters.responses, 0);
  }

  /** Runs `ms` of fake time in steps of `stepMs` (a divisor of 1000). */
  async run(ms: number, stepMs = 100): Promise<void> {
    for (let t = 0; t < ms; t += stepMs) {
      this.clock.advance(stepMs);
      const second = Math.floor(this.clock.now() / 1000);
      const reportsBefore = this.envoys.reduce((n, e) => n + e.sim.counters.reportsSent, 0);
      for (const e of this.envoys) {
        const want = (e.rate * stepMs) / 1000 + e.carry;
        const n = Math.floor(want);
        e.carry = want - n;
        let ok = 0;
        for (let i = 0; i < n; i++) if (e.sim.request(this.bucket)) ok++;
        e.sim.advance();
        this.admittedPerSecond.set(second, (this.admittedPerSecond.get(second) ?? 0) + ok);
      }
      if (this.envoys.reduce((n, e) => n + e.sim.counters.reportsSent, 0) !== reportsBefore) await this.settle();
      const within = this.clock.now() % 1000;
      for (const r of this.replicas) {
        if (within === r.tickOffsetMs) {
          await r.balancer.tick();
          await this.settle();
        }
      }
    }
  }

  /** Admitted requests in the whole seconds [from, to) of the fake clock. */
  admittedBetween(fromSecond: number, toSecond: number): number {
    let n = 0;
    for (let s = fromSecond; s < toSecond; s++) n += this.admittedPerSecond.get(s) ?? 0;
    return n;
  }

  close(): void {
    for (const e of this.envoys) {
      e.sim.close();
      e.client.close();
    }
  }
}
