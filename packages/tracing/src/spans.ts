// Span helpers both services' tracing wrappers use.
import { SpanStatusCode, type Span } from '@opentelemetry/api';

/** Ends `span` when `work` settles; a rejection marks the span as an error with its message and is passed on. */
export function endSpanWith<T>(span: Span, work: Promise<T>): Promise<T> {
  return work.then(
    (v) => {
      span.end();
      return v;
    },
    (err: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      span.end();
      throw err;
    },
  );
}

/**
 * Runs `call` inside `span`'s lifetime: a value answered at once ends the span at once, a promise
 * ends it when it settles (endSpanWith); a throw or a rejection marks the span as an error and is
 * passed on as it came (thrown stays thrown, rejected stays rejected).
 */
export function endSpanAround<T>(span: Span, call: () => T | Promise<T>): T | Promise<T> {
  let out: T | Promise<T>;
  try {
    out = call();
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    span.end();
    throw err;
  }
  if (out instanceof Promise) return endSpanWith(span, out);
  span.end();
  return out;
}
