/**
 * A step's answer: the value itself when the step could decide without waiting (a cache hit, a
 * count in memory, the embedded engine), else a promise. Callers await only when they got a
 * promise (`isPromise`), so a request whose every step decides at once stays synchronous; there
 * is one method per step, never a synchronous twin.
 */
export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return value instanceof Promise;
}

