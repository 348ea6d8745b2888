/**
 * A step's answer: the value itself when the step could decide without waiting (a cache hit, a
 * count in memory, the embedded engine), else a promise. Callers await only when they got a
 * promise (`isPromise`), so a request whose every step decides at once stays synchronous; there
 * is one method per step, never a synchronous twin. A failure is thrown or rejected as the answer
 * came. One definition for both services: the engine's (packages/engine/src/maybe-promise.ts).
 */
export { isPromise, type MaybePromise } from '@rls/engine';
