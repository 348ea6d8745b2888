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
