// RESP encoding of the few commands the counter store sends, and the reply handlers that turn
// their replies into results. Commands are built as strings: the connection joins a turn's
// commands and writes them once, so a per-command Buffer would only add copies.
import { createHash } from 'node:crypto';
import { SATURATED_COUNT, StoreError, saturate, type BucketParams, type CounterOp, type OpResult } from '@rls/engine';
import { expiryHash, type ExpiryMemo } from './expiry-memo.js';
import type { ReplyHandler } from './resp-connection.js';
import { RespErrorReply, type RespReply } from './resp-parser.js';

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(parts: readonly string[]): string {
  let s = `*${parts.length}\r\n`;
  for (const p of parts) s += `$${Buffer.byteLength(p)}\r\n${p}\r\n`;
  return s;
}

/** A handshake command: its argument strings, or a command already encoded (AUTH, whose password lives only in Buffers). */
export type HandshakeCommand = readonly string[] | Buffer;

/** The handshake commands and a closing PING, encoded as one Buffer (no string ever holds a password). */
export function encodeHandshake(commands: readonly HandshakeCommand[]): Buffer {
  return Buffer.concat([...commands.map((c) => (Buffer.isBuffer(c) ? c : Buffer.from(encodeCommand(c)))), Buffer.from(encodeCommand(['PING']))]);
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

// ---------------------------------------------------------------------------------------------
// `increment` with `expireOnCreate` ops (keys in our own windowed format; expiry-memo.ts): INCRBY
// for every op, EXPIRE only for ops whose key the memo does not know to have its TTL. Upstream-
// format ops in the same call keep INCRBY + EXPIRE. When INCRBY of a key sent without EXPIRE
// answers exactly the addend, the key was (re)created without a TTL: its EXPIRE follows in a
// second round trip before the call resolves.
// ---------------------------------------------------------------------------------------------

/** True when some op may skip its EXPIRE (the plain path is kept for the others). */
export function anyExpireOnCreate(ops: readonly CounterOp[]): boolean {
  for (let i = 0; i < ops.length; i++) if ((ops[i] as CounterOp).expireOnCreate === true) return true;
  return false;
}

/** What one `increment` call sends: per op, its key hash (0: not expireOnCreate) and whether EXPIRE goes with INCRBY. */
export class IncrementPlan {
  readonly hashes: number[];
  readonly withExpire: boolean[];
  /** Replies the call's commands produce. */
  readonly replies: number;

  constructor(
    readonly ops: readonly CounterOp[],
    memo: ExpiryMemo,
  ) {
    const n = ops.length;
    this.hashes = new Array<number>(n);
    this.withExpire = new Array<boolean>(n);
    let replies = 0;
    for (let i = 0; i < n; i++) {
      const op = ops[i] as CounterOp;
      const h = op.expireOnCreate === true ? expiryHash(op.key) : 0;
      const expire = h === 0 || !memo.has(h);
      this.hashes[i] = h;
      this.withExpire[i] = expire;
      replies += expire ? 2 : 1;
    }
    this.replies = replies;
  }

  /** The commands joined (single Redis and Sentinel: one write). */
  text(): string {
    let s = '';
    const ops = this.ops;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as CounterOp;
      const keyHeader = `$${Buffer.byteLength(op.key)}\r\n${op.key}\r\n`;
      const addend = String(op.addend);
      s += `*3\r\n$6\r\nINCRBY\r\n${keyHeader}$${addend.length}\r\n${addend}\r\n`;
      if (this.withExpire[i] === true) {
        const ttl = String(op.expireSeconds);
        s += `*3\r\n$6\r\nEXPIRE\r\n${keyHeader}$${ttl.length}\r\n${ttl}\r\n`;
      }
    }
    return s;
  }

  /** The commands one by one with their keys (cluster: routed per slot), in reply order. */
  commands(): KeyedCommand[] {
    const out: KeyedCommand[] = [];
    const ops = this.ops;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as CounterOp;
      out.push({ key: op.key, text: encodeCommand(['INCRBY', op.key, String(op.addend)]) });
      if (this.withExpire[i] === true) out.push({ key: op.key, text: encodeCommand(['EXPIRE', op.key, String(op.expireSeconds)]) });
    }
    return out;
  }
}

/** The EXPIRE commands of the ops at `indexes` (keys INCRBY created without a TTL). */
export function expireCommands(ops: readonly CounterOp[], indexes: readonly number[]): KeyedCommand[] {
  return indexes.map((i) => {
    const op = ops[i] as CounterOp;
    return { key: op.key, text: encodeCommand(['EXPIRE', op.key, String(op.expireSeconds)]) };
  });
}

/**
 * Decodes the replies of an IncrementPlan as they arrive (or from an array, replies fed in order):
 * the INCRBY values as `IncrementReplies` gives them, EXPIRE answers recorded in the memo, and the
 * ops whose key INCRBY created without a TTL (`fresh`). Settles once every reply has arrived: with
 * the first error, or with the values and `fresh` (undefined when none).
 */
export class IncrementPlanReplies implements ReplyHandler {
  deadline = 0;
  private got = 0;
  private op = 0;
  /** The next reply is the current op's EXPIRE. */
  private expectExpire = false;
  private error: string | undefined;
  private fresh: number[] | undefined;
  private readonly values: number[];

  constructor(
    private readonly plan: IncrementPlan,
    private readonly memo: ExpiryMemo,
    private readonly resolve: (values: number[], fresh: number[] | undefined) => void,
    private readonly reject: (err: StoreError) => void,
  ) {
    this.values = new Array<number>(plan.ops.length);
  }

  accept(reply: RespReply): boolean {
    this.got++;
    const i = this.op;
    const plan = this.plan;
    if (this.expectExpire) {
      if (typeof reply !== 'number') this.error ??= describe(reply);
      else if (reply === 1 && plan.hashes[i] !== 0) this.memo.add(plan.hashes[i] as number);
      this.expectExpire = false;
      this.op++;
    } else {
      if (typeof reply === 'number') {
        this.values[i] = reply < SATURATED_COUNT ? reply : SATURATED_COUNT;
        // Exactly the addend: the key did not exist (or held 0) and was sent without EXPIRE.
        if (plan.withExpire[i] !== true && reply === (plan.ops[i] as CounterOp).addend) (this.fresh ??= []).push(i);
      } else if (isIncrOverflow(reply)) {
        this.values[i] = SATURATED_COUNT;
      } else {
        this.error ??= describe(reply);
      }
      if (plan.withExpire[i] === true) this.expectExpire = true;
      else this.op++;
    }
    if (this.got < plan.replies) return false;
    if (this.error !== undefined) this.reject(new StoreError(`redis error: ${this.error}`));
    else this.resolve(this.values, this.fresh);
    return true;
  }

  fail(err: StoreError): void {
    this.reject(err);
  }
}

/** Replies to `expireCommands`: recorded in the memo; the first error rejects once all arrived. */
export class ExpireReplies implements ReplyHandler {
  deadline = 0;
  private got = 0;
  private error: string | undefined;
  constructor(
    private readonly hashes: readonly number[],
    private readonly memo: ExpiryMemo,
    private readonly resolve: () => void,
    private readonly reject: (err: StoreError) => void,
  ) {}

  accept(reply: RespReply): boolean {
    const i = this.got++;
    if (typeof reply !== 'number') this.error ??= describe(reply);
    else if (reply === 1) this.memo.add(this.hashes[i] as number);
    if (this.got < this.hashes.length) return false;
    if (this.error !== undefined) this.reject(new StoreError(`redis error: ${this.error}`));
    else this.resolve();
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

/**
 * Redis stores that send raw commands routed by their key, one reply per command in order (error
 * replies as values): single mode on its pool, Sentinel to the current master, Cluster to the key's
 * slot owner following MOVED/ASK. The RLQS quota shares run their scripts through it.
 */
export interface KeyedCommandSender {
  sendKeyed(commands: readonly KeyedCommand[]): Promise<RespReply[]>;
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

// ---------------------------------------------------------------------------------------------
// CounterStore.execute: fixed window, sliding window and token bucket ops in one pipeline.
//
//   fixed_window    INCRBY key addend, EXPIRE key ttl                  (2 replies)
//   sliding_window  INCRBY key addend, EXPIRE key ttl, GET previousKey (3 replies; the two keys
//                   need not share a cluster slot: no command spans them)
//   token_bucket    EVALSHA <sha> 1 key nowUs costUs toleranceUs fullNext fullTtlMs (1 reply)
//
// The token bucket is GCRA (counter-store.ts, BucketParams) run by the Lua script below, atomic
// per key. It never assumes the caller and Redis share a clock: `nowUs` comes from the caller.
// Redis's Lua 5.1 numbers are doubles: every value stays an exact integer below 2^53 (a TAT near
// 1.8e15 µs). The script is shaped by what costs Redis CPU (measured: docs/ratelimit.md,
// "Algorithms on each store"): number→string conversions (`%.0f`, or Redis's `%.17g` for a number
// passed to redis.call, 0.4–0.7 µs each), string→number ones (0.2 µs), and each redis.call
// (0.4 µs, a write ~1 µs). So:
// - The caller sends what does not depend on the stored TAT as ready strings: costUs, and for a
//   full bucket (missing key, or a TAT not after now) the next TAT and its TTL in ms (`fullNext`,
//   empty when even a full bucket refuses: then the script only reads). Nothing else is formatted.
// - `INCRBY key costUs` first: Redis adds in integers and answers the new TAT, old = new − cost.
//   Old not after now: a full bucket, `SET key fullNext PX fullTtlMs` (reply 0). Otherwise
//   admitted: `PEXPIRE key ceil((new − now) / 1000)` (`%d`, exact below 2^63, where Lua's own
//   number→string keeps 14 digits); refused: `DECRBY key costUs` puts the value back (its TTL
//   untouched). Atomic like the whole script; the hot paths cost two commands and no GET.
// - A value INCRBY refuses (not a canonical integer, e.g. "1.7e15" or garbage), or a sum past
//   2^53 − 1 (undone with DECRBY), takes the general path: GET, tonumber, and a SET with `%d`.
// - The reply is one integer: 0 admitted at fullNext; n > 0 admitted, n the new TAT; −1 − TAT
//   refused (the key unchanged). No table, one number to parse.
// A stored value that is not a number reads as a saturated (full) bucket and is left alone, as an
// unreadable counter reads saturated (tonumber is the check; a digit pattern costs more). A TAT
// above 2^53 − 1 is stored and answered as 2^53 − 1 (SATURATED_COUNT), like a counter, so Redis's
// integer reply (a C long long cast) never sees an out-of-range double; the TTL is capped at
// 2^50 ms for the same reason (PX must not overflow Redis's clock arithmetic).
// ---------------------------------------------------------------------------------------------

/**
 * GCRA on one key. KEYS[1] = TAT key; ARGV = nowUs, costUs (emissionUs × addend), toleranceUs,
 * fullNext ('' when a full bucket refuses), fullTtlMs. Reply: 0 | next TAT > 0 | −1 − TAT (refused).
 */
export const BUCKET_SCRIPT = `local cost = ARGV[2]
if ARGV[4] ~= '' then
  local r = redis.pcall('INCRBY', KEYS[1], cost)
  if type(r) == 'number' then
    if r <= 9007199254740991 then
      local now = tonumber(ARGV[1])
      local old = r - tonumber(cost)
      if old <= now then
        redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
        return 0
      end
      local used = r - now
      if used > tonumber(ARGV[3]) then
        redis.call('DECRBY', KEYS[1], cost)
        return -1 - old
      end
      redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil(used / 1000)))
      return r
    end
    redis.call('DECRBY', KEYS[1], cost)
  end
end
local now = tonumber(ARGV[1])
local raw = redis.call('GET', KEYS[1])
if raw then
  local tat = tonumber(raw)
  if tat == nil or tat ~= tat then return -9007199254740992 end
  if tat > now then
    local nxt = tat + tonumber(cost)
    if nxt - now > tonumber(ARGV[3]) then
      if tat > 9007199254740991 then return -9007199254740992 end
      return -1 - tat
    end
    local ttl = math.ceil((nxt - now) / 1000)
    if ttl > 1125899906842624 then ttl = 1125899906842624 end
    if nxt > 9007199254740991 then nxt = 9007199254740991 end
    redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', string.format('%d', ttl))
    return nxt
  end
end
if ARGV[4] == '' then return -1 - now end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
return 0
`;

/** SHA-1 of BUCKET_SCRIPT, the name EVALSHA calls it by. */
export const BUCKET_SCRIPT_SHA = createHash('sha1').update(BUCKET_SCRIPT).digest('hex');

/** Replies one op's commands produce (see the table above). */
export function opReplyCount(op: CounterOp): number {
  return op.bucket !== undefined ? 1 : op.previousKey !== undefined ? 3 : 2;
}

/** One command of an op with the key it routes by (cluster slot). */
export interface KeyedCommand {
  key: string;
  text: string;
}

/**
 * The commands of one op, in reply order. `viaEval` sends the script body (EVAL) instead of its
 * hash: the fallback after NOSCRIPT, which also puts the script back into Redis's cache.
 */
export function opCommands(op: CounterOp, viaEval = false): KeyedCommand[] {
  if (op.bucket !== undefined) return [{ key: op.key, text: encodeBucketCall(op, viaEval) }];
  const out = [
    { key: op.key, text: encodeCommand(['INCRBY', op.key, String(op.addend)]) },
    { key: op.key, text: encodeCommand(['EXPIRE', op.key, String(op.expireSeconds)]) },
  ];
  if (op.previousKey !== undefined) out.push({ key: op.previousKey, text: encodeCommand(['GET', op.previousKey]) });
  return out;
}

const bulk = (s: string): string => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
// The fixed head of the call: 9 parts, command, script (hash or body), one key.
const EVALSHA_HEAD = `*9\r\n${bulk('EVALSHA')}${bulk(BUCKET_SCRIPT_SHA)}${bulk('1')}`;
const EVAL_HEAD = `*9\r\n${bulk('EVAL')}${bulk(BUCKET_SCRIPT)}${bulk('1')}`;
/** ASCII text (numbers) as a bulk string: length = string length. */
const ascii = (t: string): string => `$${t.length}\r\n${t}\r\n`;
const EMPTY_BULK = '$0\r\n\r\n';
const MAX_TTL_MS = 2 ** 50;

/**
 * What a full bucket (no TAT after now) does, computed as the script would in doubles: the next
 * TAT (capped at SATURATED_COUNT), or undefined when even a full bucket refuses.
 */
function fullBucketNext(b: BucketParams, addend: number): number | undefined {
  const nxt = b.nowUs + b.emissionUs * addend;
  if (nxt - b.nowUs > b.toleranceUs) return undefined;
  return nxt < SATURATED_COUNT ? nxt : SATURATED_COUNT;
}

// The arguments after the key for the last parameters seen: under load, consecutive calls for one
// rule share them (the clock has whole-ms resolution), so most calls skip five number→string conversions.
let lastNow = -1;
let lastEmission = -1;
let lastTolerance = -1;
let lastAddend = -1;
let lastTail = '';

/** `EVALSHA <sha> 1 key nowUs costUs toleranceUs fullNext fullTtlMs` (or EVAL with the body); throws StoreError on bad parameters. */
export function encodeBucketCall(op: CounterOp, viaEval = false): string {
  checkBucketOp(op);
  const b = op.bucket as BucketParams;
  const head = (viaEval ? EVAL_HEAD : EVALSHA_HEAD) + bulk(op.key);
  if (b.nowUs === lastNow && b.emissionUs === lastEmission && b.toleranceUs === lastTolerance && op.addend === lastAddend) return head + lastTail;
  const cost = b.emissionUs * op.addend;
  const nxt = b.nowUs + cost;
  let full = EMPTY_BULK;
  let ttl = '1';
  if (!(nxt - b.nowUs > b.toleranceUs)) {
    full = ascii(String(nxt < SATURATED_COUNT ? nxt : SATURATED_COUNT));
    ttl = String(Math.min(MAX_TTL_MS, Math.max(1, Math.ceil((nxt - b.nowUs) / 1000))));
  }
  // String(cost) may use exponent notation past 1e21: then INCRBY refuses it and the script's
  // general path reads it with tonumber, which gives back the same double.
  const tail = ascii(String(b.nowUs)) + ascii(String(cost)) + ascii(String(b.toleranceUs)) + full + ascii(ttl);
  lastNow = b.nowUs;
  lastEmission = b.emissionUs;
  lastTolerance = b.toleranceUs;
  lastAddend = op.addend;
  lastTail = tail;
  return head + tail;
}

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

/** Refuses bucket parameters the script cannot take as exact integers (nothing is sent for the call). */
function checkBucketOp(op: CounterOp): void {
  const b = op.bucket as BucketParams;
  if (!isCount(op.addend) || !isCount(b.nowUs) || !isCount(b.toleranceUs) || !Number.isSafeInteger(b.emissionUs) || b.emissionUs < 1) {
    throw new StoreError(`redis: invalid token bucket op for ${op.key} (addend ${op.addend}, nowUs ${b.nowUs}, emissionUs ${b.emissionUs}, toleranceUs ${b.toleranceUs})`);
  }
}

/** The script's integer reply as an op result (see BUCKET_SCRIPT). */
function bucketResult(op: CounterOp, reply: number): OpResult {
  if (reply < 0) return { value: saturate(-1 - reply), admitted: false };
  if (reply > 0) return { value: saturate(reply), admitted: true };
  const full = fullBucketNext(op.bucket as BucketParams, op.addend);
  // 0 is only answered when the caller sent fullNext, i.e. when `full` is defined.
  if (full === undefined) throw new StoreError(`redis error: bucket script answered 0 for ${op.key}, which a full bucket refuses`);
  return { value: full, admitted: true };
}

/** The commands of every op, joined (single Redis and Sentinel: one write). */
export function encodeExecute(ops: readonly CounterOp[], viaEval = false): { text: string; replies: number } {
  let text = '';
  let replies = 0;
  for (const op of ops) {
    if (op.bucket === undefined) {
      // The fixed-window part as the hot path encodes it; only the sliding GET is extra.
      text += encodeIncrements([op]);
      if (op.previousKey !== undefined) text += encodeCommand(['GET', op.previousKey]);
    } else {
      text += encodeBucketCall(op, viaEval);
    }
    replies += opReplyCount(op);
  }
  return { text, replies };
}

/** The script is missing from Redis's cache (SCRIPT FLUSH, a restarted or failed-over node). */
export function isNoScript(reply: RespReply): boolean {
  return reply instanceof RespErrorReply && reply.message.startsWith('NOSCRIPT');
}

/** Marks an op whose EVALSHA found no script: it did not run and must be sent again with EVAL. */
export const NOSCRIPT = Symbol('NOSCRIPT');

function storeError(reply: RespReply): StoreError {
  return new StoreError(`redis error: ${describe(reply)}`);
}

/** A counter value read by GET: missing is 0, anything not a whole number reads saturated. */
function previousCount(reply: RespReply): number {
  if (reply === null) return 0;
  if (typeof reply === 'string') return /^\d{1,20}$/.test(reply) ? saturate(Number(reply)) : SATURATED_COUNT;
  throw storeError(reply);
}

/**
 * One op's result from its replies starting at `at` (opReplyCount(op) of them). Throws StoreError
 * on an error reply (INCRBY's overflow reads saturated, as in `increment`); NOSCRIPT when the
 * bucket script was not cached.
 */
export function opResult(op: CounterOp, replies: readonly RespReply[], at: number): OpResult | typeof NOSCRIPT {
  const first = replies[at] ?? null;
  if (op.bucket !== undefined) {
    if (isNoScript(first)) return NOSCRIPT;
    if (typeof first === 'number') return bucketResult(op, first);
    throw storeError(first);
  }
  let value: number;
  if (typeof first === 'number') value = saturate(first);
  else if (isIncrOverflow(first)) value = SATURATED_COUNT;
  else throw storeError(first);
  const expire = replies[at + 1] ?? null;
  if (typeof expire !== 'number') throw storeError(expire);
  if (op.previousKey === undefined) return { value };
  return { value, previous: previousCount(replies[at + 2] ?? null) };
}

/**
 * Decodes the replies of `encodeExecute(ops)` op by op as they arrive (single Redis and Sentinel,
 * one connection, replies in op order), without collecting them first. Resolves with the results
 * and the indexes of the ops that met NOSCRIPT (their slots in `out` unset), or rejects with the
 * first error once every reply has arrived (the connection stays aligned).
 */
export class ExecuteReplies implements ReplyHandler {
  deadline = 0;
  private got = 0;
  private op = 0;
  /** Replies of the current op so far (fixed and sliding ops have 2 or 3). */
  private readonly pending: RespReply[] = [];
  private missing: number[] | undefined;
  private error: StoreError | undefined;
  readonly out: OpResult[];

  constructor(
    private readonly ops: readonly CounterOp[],
    private readonly expected: number,
    private readonly resolve: (out: OpResult[], missing: number[] | undefined) => void,
    private readonly reject: (err: StoreError) => void,
  ) {
    this.out = new Array<OpResult>(ops.length);
  }

  accept(reply: RespReply): boolean {
    this.got++;
    const op = this.ops[this.op] as CounterOp;
    const pending = this.pending;
    pending.push(reply);
    if (pending.length === opReplyCount(op)) {
      if (this.error === undefined) {
        try {
          const r = opResult(op, pending, 0);
          if (r === NOSCRIPT) (this.missing ??= []).push(this.op);
          else this.out[this.op] = r;
        } catch (err) {
          this.error = err instanceof StoreError ? err : new StoreError(String(err));
        }
      }
      pending.length = 0;
      this.op++;
    }
    if (this.got < this.expected) return false;
    if (this.error !== undefined) this.reject(this.error);
    else this.resolve(this.out, this.missing);
    return true;
  }

  fail(err: StoreError): void {
    this.reject(err);
  }
}

/**
 * Results of `ops` from their concatenated replies; the indexes of the ops that met NOSCRIPT are
 * returned for a second pass (their slots in `out` stay unset).
 */
export function opResults(ops: readonly CounterOp[], replies: readonly RespReply[], out: OpResult[]): number[] | undefined {
  let at = 0;
  let missing: number[] | undefined;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as CounterOp;
    const r = opResult(op, replies, at);
    at += opReplyCount(op);
    if (r === NOSCRIPT) (missing ??= []).push(i);
    else out[i] = r;
  }
  return missing;
}
