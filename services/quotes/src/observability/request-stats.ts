// The per-request part of the quotes metrics: requests by (route, method, status class) and their
// latency histogram, kept in plain typed arrays and written out at scrape time. prom-client's own
// Counter/Histogram hash a label object on every call (about 1.2 µs of CPU per request for the
// pair, bench/quotes-metrics-hook.mjs); here a request costs two Map lookups, a few array
// increments and a bucket search. The families are registered on a prom-client Registry as
// metrics that only answer `get()`, so the exposition is prom-client's.
import type { Registry } from 'prom-client';

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** Upper bounds (seconds) of the latency histogram's buckets. */
export const LATENCY_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  route: string;
  method: string;
  /** Requests per status class (index: status / 100). */
  counts: Float64Array;
  /** Observations per bucket (not cumulative); the last is +Inf. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

interface Sample {
  labels: Record<string, string>;
  value: number;
  metricName?: string;
}

export class RequestStats {
  private readonly byRoute = new Map<string, Map<string, Series>>();
  private readonly all: Series[] = [];

  private seriesOf(route: string, method: string): Series {
    let methods = this.byRoute.get(route);
    if (methods === undefined) {
      methods = new Map<string, Series>();
      this.byRoute.set(route, methods);
    }
    let s = methods.get(method);
    if (s === undefined) {
      s = { route, method, counts: new Float64Array(STATUS_CLASSES.length), buckets: new Float64Array(LATENCY_BUCKETS.length + 1), sum: 0, count: 0 };
      methods.set(method, s);
      this.all.push(s);
    }
    return s;
  }

  /** One answered request; `route` and `method` must come from bounded sets (the caller's job). */
  record(route: string, method: string, status: number, seconds: number): void {
    const s = this.seriesOf(route, method);
    const cls = Math.floor(status / 100);
    s.counts[cls >= 0 && cls < STATUS_CLASSES.length ? cls : 0]! += 1;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    s.buckets[i]! += 1;
    s.sum += seconds;
    s.count += 1;
  }

  /** `n` requests answered elsewhere (the fast path): counted, not timed. `statusClass` is status / 100. */
  add(route: string, method: string, statusClass: number, n: number): void {
    if (n > 0) this.seriesOf(route, method).counts[statusClass]! += n;
  }

  /** Registers `requestsName` (counter) and `durationName` (histogram) on `registry`. */
  register(registry: Registry, requestsName: string, requestsHelp: string, durationName: string, durationHelp: string, beforeScrape: () => void): void {
    const requests = {
      name: requestsName,
      help: requestsHelp,
      type: 'counter',
      aggregator: 'sum',
      get: () => {
        beforeScrape();
        const values: Sample[] = [];
        for (const s of this.all) {
          s.counts.forEach((n, i) => {
            if (n > 0) values.push({ labels: { route: s.route, method: s.method, status_class: STATUS_CLASSES[i]! }, value: n });
          });
        }
        return { name: requestsName, help: requestsHelp, type: 'counter', aggregator: 'sum', values };
      },
      reset: () => undefined,
    };
    const duration = {
      name: durationName,
      help: durationHelp,
      type: 'histogram',
      aggregator: 'sum',
      get: () => {
        const values: Sample[] = [];
        for (const s of this.all) {
          if (s.count === 0) continue;
          const labels = { route: s.route, method: s.method };
          let acc = 0;
          for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
            acc += s.buckets[i]!;
            values.push({ labels: { ...labels, le: String(LATENCY_BUCKETS[i]) }, value: acc, metricName: `${durationName}_bucket` });
          }
          values.push({ labels: { ...labels, le: '+Inf' }, value: s.count, metricName: `${durationName}_bucket` });
          values.push({ labels, value: s.sum, metricName: `${durationName}_sum` });
          values.push({ labels, value: s.count, metricName: `${durationName}_count` });
        }
        return { name: durationName, help: durationHelp, type: 'histogram', aggregator: 'sum', values };
      },
      reset: () => undefined,
    };
    // prom-client accepts any object with a name and `get()` (its Registry only reads those).
    registry.registerMetric(requests as unknown as Parameters<Registry['registerMetric']>[0]);
    registry.registerMetric(duration as unknown as Parameters<Registry['registerMetric']>[0]);
  }
}
