import type { Account } from '../accounts/account-service.js';
import type { RequestLimiter } from '../accounts/request-limiter.js';

/**
 * Runs every limiter in order for an authenticated account, appending the response headers each
 * one adds to `headers` (name, value pairs, in order). Limiters that can decide at once
 * (`admitNow`) are asked synchronously: the result is undefined when every one of them did, else
 * a promise for the rest. A refused request still shows where the caller stands with the limiters
 * not reached (a 429 carries the monthly quota headers): their `peek` headers are appended before
 * the refusal is rethrown (as a rejected promise), and a failing peek never hides it.
 */
export function admitAll(account: Account, limiters: readonly RequestLimiter[], headers: string[]): Promise<void> | undefined {
  for (let i = 0; i < limiters.length; i++) {
    let added: Readonly<Record<string, string>> | undefined;
    try {
      added = limiters[i]!.admitNow?.(account);
    } catch (err) {
      return refuse(account, limiters, i, headers, err);
    }
    if (added === undefined) return admitRest(account, limiters, i, headers);
    for (const k in added) headers.push(k, added[k]!);
  }
  return undefined;
}

async function admitRest(account: Account, limiters: readonly RequestLimiter[], from: number, headers: string[]): Promise<void> {
  for (let i = from; i < limiters.length; i++) {
    let added: Readonly<Record<string, string>>;
    try {
      added = await limiters[i]!.admit(account);
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
