// Encoded answers to requests decided entirely from the local over-limit cache, for the rest of
// their second. Over-limit traffic is typically one client repeating one request (same
// descriptors, same bytes) far above its limit; once its keys are in the local cache, each of
// those requests would be decoded, matched, keyed and encoded again only to produce the same
// bytes. Here the request's bytes find the response's bytes, after the service has confirmed the
// decision still holds (same rules, same second, keys still remembered) and counted its stats,
// so statistics, the local cache's hit counts and the answer are exactly what the full path gives.
//
// Bounded: entries belong to the current second only (duration_until_reset changes every
// second) and at most `maxEntries` are kept per second.
import type { RateLimitResponse } from '../domain.js';
import { equalBytes } from './h2/bytes.js';
import type { LocalAnswer, ServiceResponse } from '../service.js';

/** What the gRPC dispatcher asks of a memo of encoded answers. */
export interface AnswerMemo {
  /** The encoded response (5 bytes of gRPC prefix included) for `payload`, stats already counted; or undefined. */
  lookup(payload: Buffer): Buffer | undefined;
  /** After a full decision: remembers `body` for `payload` when the decision qualifies. */
  offer(payload: Buffer, res: RateLimitResponse, body: Buffer): void;
}

/** The service side: the clock and the check-and-count of a remembered decision. */
export interface LocalAnswerSource {
  nowMs(): number;
  replayLocalAnswer(answer: LocalAnswer, nowMs: number): boolean;
}

interface Entry {
  readonly payload: Buffer;
  readonly body: Buffer;
  readonly answer: LocalAnswer;
}

export const DEFAULT_MEMO_ENTRIES = 10_000;

/** FNV-1a over the bytes: the map key (collisions are settled by comparing the bytes). */
function hashBytes(b: Buffer): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h;
}

export class LocalAnswerMemo implements AnswerMemo {
  private second = -1;
  private readonly entries = new Map<number, Entry>();

  constructor(
    private readonly source: LocalAnswerSource,
    private readonly maxEntries = DEFAULT_MEMO_ENTRIES,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  lookup(payload: Buffer): Buffer | undefined {
    if (this.entries.size === 0) return undefined;
    const nowMs = this.source.nowMs();
    if (Math.floor(nowMs / 1000) !== this.second) {
      this.entries.clear();
      return undefined;
    }
    const hash = hashBytes(payload);
    const e = this.entries.get(hash);
    if (e === undefined || !equalBytes(e.payload, payload)) return undefined;
    if (!this.source.replayLocalAnswer(e.answer, nowMs)) {
      this.entries.delete(hash);
      return undefined;
    }
    return e.body;
  }

  offer(payload: Buffer, res: ServiceResponse, body: Buffer): void {
    const answer = res.localAnswer;
    if (answer === undefined || answer.nowSeconds < this.second) return;
    if (answer.nowSeconds > this.second) {
      this.entries.clear();
      this.second = answer.nowSeconds;
    }
    if (this.entries.size >= this.maxEntries) return;
    const hash = hashBytes(payload);
    if (this.entries.has(hash)) return;
    this.entries.set(hash, { payload: Buffer.from(payload), body, answer });
  }
}
