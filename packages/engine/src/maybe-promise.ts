// A step's answer, on the engine's ground floor (it imports nothing): the value itself when the
// step decided without waiting (the memory store, a request answered from the local over-limit
// cache), else a promise (a network store). There is one method per step, never a synchronous twin:
// a caller awaits only when it got a promise (`isPromise`), so a request whose every step answers at
// once stays synchronous, as hono's dispatch does.
//
// Errors surface the way the answer came: a step that answers at once throws; a step that waits
// rejects. A MaybePromise method may therefore do either, and every caller handles both (a `try`
// around the call and a rejection handler on the promise; `await` inside a `try` does both).

export type MaybePromise<T> = T | Promise<T>;

/** True when `value` is a promise (the step is waiting); false for a value decided at once. */
export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return value instanceof Promise;
}
