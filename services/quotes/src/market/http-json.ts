import type { Clock } from '../clock.js';
import { parseRetryAfter, withRetry, type FailureClass, type RetryPolicy, type UpstreamCounters } from './retry.js';

/** An HTTP answer that was not usable; status 0 means no answer at all. */
export class HttpProblem extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'HttpProblem';
  }
}

export interface HttpGetter {
  /** GET `url`, retried with backoff; `parse` turns the body into a value or throws (a malformed payload is retried too). */
  get<T>(upstream: string, url: string, parse: (body: string) => T): Promise<T>;
}

export interface HttpGetterDeps {
  timeoutMs: number;
  retry: RetryPolicy;
  clock: Clock;
  counters: UpstreamCounters;
  onFailure?: (upstream: string, failure: FailureClass, attempt: number, waitMs: number | undefined, err: unknown) => void;
  fetchImpl?: typeof fetch;
}

function classify(err: unknown): FailureClass {
  if (err instanceof HttpProblem) {
    if (err.status === 429) return { retryable: true, reason: 'rate-limited', ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }) };
    if (err.status === 418) return { retryable: true, reason: 'banned', ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }) };
    if (err.status >= 500) return { retryable: true, reason: `http-${err.status}` };
    if (err.status === 0) return { retryable: true, reason: 'malformed' };
    return { retryable: false, reason: `http-${err.status}` };
  }
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return { retryable: true, reason: 'timeout' };
  return { retryable: true, reason: 'network' };
}

/** Plain HTTP GETs for the FX and metadata sources: timeout, status checks, retries, counters. */
export function httpGetter(deps: HttpGetterDeps): HttpGetter {
  const doFetch = deps.fetchImpl ?? fetch;
  return {
    get<T>(upstream: string, url: string, parse: (body: string) => T): Promise<T> {
      return withRetry(
        upstream,
        async () => {
          deps.counters.add(`${upstream}.requests`);
          const res = await doFetch(url, { signal: AbortSignal.timeout(deps.timeoutMs), headers: { accept: 'application/json, application/xml;q=0.9, */*;q=0.5' } });
          const body = await res.text();
          if (!res.ok) throw new HttpProblem(`HTTP ${res.status} from ${upstream}`, res.status, parseRetryAfter(res.headers.get('retry-after'), deps.clock.now()));
          try {
            return parse(body);
          } catch (err) {
            throw new HttpProblem(`malformed payload from ${upstream}: ${(err as Error).message}`, 0);
          }
        },
        classify,
        deps.retry,
        {
          onFailure: (failure, attempt, waitMs, err) => {
            deps.counters.add(`${upstream}.failures`);
            deps.counters.add(`${upstream}.${failure.reason}`);
            deps.onFailure?.(upstream, failure, attempt, waitMs, err);
          },
        },
      );
    },
  };
}
