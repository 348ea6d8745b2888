// Encoded answers to requests decided from local state alone (the engine's LocalDecision), for
// the rest of their second. Over-limit traffic is typically one client repeating one request
// (same descriptors, same bytes) far above its limit; once its keys are in the local over-limit
// cache, each of those requests would be decoded, matched, keyed and encoded again only to
// produce the same bytes. This wrapper around the byte-level decision lets the request's bytes
// find the response's bytes, after the decision's `repeat()` has confirmed it still holds (same
// rules, same second, keys still remembered) and counted its stats, so statistics, the local
// cache's hit counts and the answer are exactly what the full path gives. The composition root
// decides whether to use it; neither the engine nor the dispatcher knows it exists.
//
// Bounded: entries belong to the current second only (duration_until_reset changes every
// second), at most `maxEntries` are kept per second, and at most `maxBytes` of request and answer
// bytes: the key is the client's request, up to the 4 MiB message limit, so a count alone would
// let 10,000 over-limit requests of up to 4 MiB each be held every second.
import type { LocalDecision } from '@rls/engine';
import { equalBytes } from './h2/bytes.js';
import type { EncodedAnswer, EncodedShouldRateLimitFn, EncodedShouldRateLimitWrapper } from './grpc-server-types.js';

interface Entry {
  readonly payload: Buffer;
  readonly answer: EncodedAnswer;
  readonly decision: LocalDecision;
}

export const DEFAULT_MEMO_ENTRIES = 10_000;
/** Request plus answer bytes remembered per second: ample for Envoy's few-hundred-byte requests. */
export const DEFAULT_MEMO_BYTES = 16 * 1024 * 1024;

/** FNV-1a over the bytes: the map key (collisions are settled by comparing the bytes). */
function hashBytes(b: Buffer): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h;
}

export class LocalAnswerMemo {
  private second = -1;
  private readonly entries = new Map<number, Entry>();
  private bytes = 0;

  constructor(
    private readonly maxEntries = DEFAULT_MEMO_ENTRIES,
    private readonly maxBytes = DEFAULT_MEMO_BYTES,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Request and answer bytes remembered for the current second. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** The wrapper: answers remembered requests itself, asks `next` for the others and remembers what qualifies. */
  readonly wrap: EncodedShouldRateLimitWrapper = (next: EncodedShouldRateLimitFn): EncodedShouldRateLimitFn => {
    return (payload, ctx) => {
      const remembered = this.lookup(payload);
      if (remembered !== undefined) return remembered;
      const answer = next(payload, ctx);
      if (answer instanceof Promise) return answer.then((a) => this.offer(payload, a));
      return this.offer(payload, answer);
    };
  };

  private lookup(payload: Buffer): EncodedAnswer | undefined {
    if (this.entries.size === 0) return undefined;
    const hash = hashBytes(payload);
    const e = this.entries.get(hash);
    if (e === undefined || !equalBytes(e.payload, payload)) return undefined;
    // repeat() checks the second, the rules and the keys, and counts the stats when it holds.
    if (!e.decision.repeat()) {
      this.entries.delete(hash);
      return undefined;
    }
    return e.answer;
  }

  private offer(payload: Buffer, answer: EncodedAnswer): EncodedAnswer {
    const decision = answer.response.localDecision;
    if (decision === undefined || decision.second < this.second) return answer;
    if (decision.second > this.second) {
      this.entries.clear();
      this.bytes = 0;
      this.second = decision.second;
    }
    const cost = payload.length + answer.body.length;
    if (this.entries.size >= this.maxEntries || this.bytes + cost > this.maxBytes) return answer;
    const hash = hashBytes(payload);
    if (!this.entries.has(hash)) {
      this.entries.set(hash, { payload: Buffer.from(payload), answer, decision });
      this.bytes += cost;
    }
    return answer;
  }
}
