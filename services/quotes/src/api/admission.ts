import type { Account } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';
import { isPromise, type MaybePromise } from '../maybe-promise.js';

/**
 * Runs every limiter in order for an authenticated account, appending the response headers each
 * one adds to `headers` (name, value pairs, in order). Limiters that can decide at once
 * without waiting answer at once: the result is undefined when every one of them did, else a
 * promise for the rest (awaited in order from the first limiter that returned one). A refused request still shows where the caller stands with the limiters
 * not reached (a 429 carries the monthly quota headers): their `peek` headers are appended before
 * the refusal is rethrown (as a rejected promise), and a failing peek never hides it.
 */
export function admitAll(account: Account, limiters: readonly RequestLimiter[], headers: string[]): Promise<void> | undefined {
  for (let i = 0; i < limiters.length; i++) {
    let added: MaybePromise<Readonly<Record<string, string>>>;
    try {
      added = limiters[i]!.admit(account);
    } catch (err) {
      return refuse(account, limiters, i, headers, err);
    }
    if (isPromise(added)) return admitRest(account, limiters, i, headers, added);
    for (const k in added) headers.push(k, added[k]!);
  }
  return undefined;
}

/** The limiters from `from` on, the first of which answered `first`. */
async function admitRest(account: Account, limiters: readonly RequestLimiter[], from: number, headers: string[], first: Promise<Readonly<Record<string, string>>>): Promise<void> {
  for (let i = from; i < limiters.length; i++) {
    let added: Readonly<Record<string, string>>;
    try {
      added = await (i === from ? first : limiters[i]!.admit(account));
    } catch (err) {
      return await refuse(account, limiters, i, headers, err);
    }
    for (const k in added) headers.push(k, added[k]!);
  }
}

async function refuse(account: Account, limiters: readonly RequestLimiter[], refusedBy: number, headers: string[], err: unknown): Promise<never> {
  for (const later of limiters.slice(refusedBy + 1)) {
    const peeked = await later.peek?.(account).catch(() => undefined);
    for (const k in peeked) headers.push(k, peeked[k]!);
  }
  throw err;
}
