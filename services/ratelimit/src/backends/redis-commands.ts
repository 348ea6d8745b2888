// RESP encoding of the few commands the counter store sends, and the reply handlers that turn
// their replies into results. Commands are built as strings: the connection joins a turn's
// commands and writes them once, so a per-command Buffer would only add copies.
import { SATURATED_COUNT, StoreError, saturate, type CounterOp } from '@rls/engine';
import type { ReplyHandler } from './resp-connection.js';
import { RespErrorReply, type RespReply } from './resp-parser.js';

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(parts: readonly string[]): string {
  let s = `*${parts.length}\r\n`;
  for (const p of parts) s += `$${Buffer.byteLength(p)}\r\n${p}\r\n`;
  return s;
}

/** `INCRBY key addend` + `EXPIRE key seconds` for every op, in op order. */
export function encodeIncrements(ops: readonly CounterOp[]): string {
  let s = '';
  for (const op of ops) {
    const key = op.key;
    const keyHeader = `$${Buffer.byteLength(key)}\r\n${key}\r\n`;
    const addend = String(op.addend);
    const ttl = String(op.expireSeconds);
    s +=
      `*3\r\n$6\r\nINCRBY\r\n${keyHeader}$${addend.length}\r\n${addend}\r\n` +
      `*3\r\n$6\r\nEXPIRE\r\n${keyHeader}$${ttl.length}\r\n${ttl}\r\n`;
  }
  return s;
}

/**
 * INCRBY's reply when the counter would pass 2^63-1. The counter is then as high as Redis counts:
 * it answers saturated (over every limit) instead of failing the request, and stays there until
 * its EXPIRE (sent next, still applied) lets it go.
 */
export function isIncrOverflow(reply: RespReply): boolean {
  return reply instanceof RespErrorReply && reply.message.includes('increment or decrement would overflow');
}

function describe(reply: RespReply): string {
  return reply instanceof RespErrorReply ? reply.message : `unexpected reply ${JSON.stringify(reply)}`;
}

/** Collects the INCRBY results of `encodeIncrements` (EXPIRE replies are only checked for errors). */
export class IncrementReplies implements ReplyHandler {
  deadline = 0;
  private got = 0;
  private error: string | undefined;
  private readonly expected: number;
  private readonly values: number[];

  constructor(
    count: number,
    private readonly resolve: (values: number[]) => void,
    private readonly reject: (err: StoreError) => void,
  ) {
    this.expected = count * 2;
    this.values = new Array<number>(count);
  }

  accept(reply: RespReply): boolean {
    const i = this.got++;
    if (typeof reply === 'number') {
      // Past 2^53 the parsed integer is no longer exact; any such count is saturated.
      if ((i & 1) === 0) this.values[i >> 1] = reply < SATURATED_COUNT ? reply : SATURATED_COUNT;
    } else if ((i & 1) === 0 && isIncrOverflow(reply)) {
      this.values[i >> 1] = SATURATED_COUNT;
    } else if (this.error === undefined) {
      this.error = describe(reply);
    }
    if (this.got < this.expected) return false;
    if (this.error !== undefined) this.reject(new StoreError(`redis error: ${this.error}`));
    else this.resolve(this.values);
    return true;
  }

  fail(err: StoreError): void {
    this.reject(err);
  }
}

function toCount(v: RespReply): number {
  if (v === null) return 0;
  if (typeof v === 'string') {
    const n = Number(v);
    if (Number.isInteger(n)) return saturate(n);
  }
  throw new StoreError(`redis error: ${describe(v)} is not a counter`);
}

/** Turns one MGET reply into counts (missing keys are 0). */
export class MgetReply implements ReplyHandler {
  deadline = 0;
  constructor(
    private readonly resolve: (values: number[]) => void,
    private readonly reject: (err: StoreError) => void,
  ) {}

  accept(reply: RespReply): boolean {
    if (!Array.isArray(reply)) {
      this.reject(new StoreError(`redis error: ${describe(reply)}`));
      return true;
    }
    try {
      this.resolve(reply.map(toCount));
    } catch (err) {
      this.reject(err as StoreError);
    }
    return true;
  }

  fail(err: StoreError): void {
    this.reject(err);
  }
}

/** Replies to the connection handshake (optional AUTH, then PING, and whatever the mode adds). */
export class HandshakeReplies implements ReplyHandler {
  deadline = 0;
  private readonly replies: RespReply[] = [];
  private error: string | undefined;
  constructor(
    private readonly expected: number,
    private readonly done: (err: StoreError | undefined) => void,
    /** Checks the replies once all arrived; returns why the connection must not be used. */
    private readonly validate?: (replies: readonly RespReply[]) => string | undefined,
  ) {}

  accept(reply: RespReply): boolean {
    this.replies.push(reply);
    if (reply instanceof RespErrorReply && this.error === undefined) this.error = reply.message;
    if (this.replies.length < this.expected) return false;
    const why = this.error ?? this.validate?.(this.replies);
    this.done(why === undefined ? undefined : new StoreError(`redis handshake failed: ${why}`));
    return true;
  }

  fail(): void {
    // The connection reports its own failure; nothing waits on the handshake.
  }
}

/** Hands every reply of `count` commands, in order, to `resolve` (error replies as values). */
export class RawReplies implements ReplyHandler {
  deadline = 0;
  private readonly replies: RespReply[] = [];
  constructor(
    private readonly count: number,
    private readonly resolve: (replies: RespReply[]) => void,
    private readonly reject: (err: StoreError) => void,
  ) {}

  accept(reply: RespReply): boolean {
    this.replies.push(reply);
    if (this.replies.length < this.count) return false;
    this.resolve(this.replies);
    return true;
  }

  fail(err: StoreError): void {
    this.reject(err);
  }
}
