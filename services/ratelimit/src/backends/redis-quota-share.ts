// The QuotaShareStore on Redis: one hash per bucket (field = instance id, value = "demand grant
// held heldUntil expiresAt" as integers), changed only by two Lua scripts that port the ledger
// functions of packages/engine/src/quota/share-ledger.ts line by line, so every replica's
// exchange and reservation for a bucket is atomic. Each script touches one key, so Redis Cluster
// routes it by that key; the scripts are called by hash (EVALSHA) and sent again with their body
// when Redis answers NOSCRIPT (a flushed cache, a restart, a failover), as the counter store does.
// The commands of one batch go out in one pipelined round trip per node, through the counter store's
// KeyedCommandSender (single, Sentinel or Cluster).
import { createHash } from 'node:crypto';
import {
  StoreError,
  type ExchangeBatch,
  type InstanceShare,
  type QuotaShareStore,
  type ReserveBatch,
  type ShareTiming,
} from '@rls/engine';
import { encodeCommand, type KeyedCommandSender } from './redis-commands.js';
import { RespErrorReply, type RespReply } from './resp-parser.js';

// Lua numbers are doubles: every value stays an integer below 2^53 (capacities are at most
// 2^32 × 10^6, times are ms since the epoch), and '%.0f' prints them without an exponent.
const PARSE = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local function fmt(n) return string.format('%.0f', n) end
local function reserved(v) if v[4] > now and v[3] > v[2] then return v[3] end return v[2] end
local raw = redis.call('HGETALL', key)
local e = {}
local total = 0
for i = 1, #raw, 2 do
  local d, g, h, hu, x = string.match(raw[i + 1], '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
  if d == nil or tonumber(x) <= now then
    redis.call('HDEL', key, raw[i])
  else
    local v = { tonumber(d), tonumber(g), tonumber(h), tonumber(hu), tonumber(x) }
    e[raw[i]] = v
    total = total + reserved(v)
  end
end
local function entry(f)
  local v = e[f]
  if v == nil then v = { 0, 0, 0, 0, 0 }; e[f] = v end
  v[5] = now + ttl
  return v
end
local function store(f, v)
  redis.call('HSET', key, f, fmt(v[1]) .. ' ' .. fmt(v[2]) .. ' ' .. fmt(v[3]) .. ' ' .. fmt(v[4]) .. ' ' .. fmt(v[5]))
end
local function expire()
  local last = 0
  for _, v in pairs(e) do if v[5] > last then last = v[5] end end
  if last > now then redis.call('PEXPIRE', key, fmt(last - now)) end
end
`;

/** ARGV: now, ttl, then instance/demand pairs. Returns instance, "demand grant" pairs of every live entry. */
export const EXCHANGE_SCRIPT = `${PARSE}
for i = 3, #ARGV, 2 do
  local v = entry(ARGV[i])
  v[1] = tonumber(ARGV[i + 1])
  store(ARGV[i], v)
end
expire()
local out = {}
for f, v in pairs(e) do
  out[#out + 1] = f
  out[#out + 1] = fmt(v[1]) .. ' ' .. fmt(v[2])
end
return out
`;

/** ARGV: now, ttl, hold, capacity, then instance/want pairs. Returns the granted values in request order. */
export const RESERVE_SCRIPT = `${PARSE}
local hold = tonumber(ARGV[3])
local capacity = tonumber(ARGV[4])
local n = (#ARGV - 4) / 2
local out = {}
local lowered = {}
for j = 1, n do
  local f = ARGV[3 + 2 * j]
  local want = tonumber(ARGV[4 + 2 * j])
  local v = entry(f)
  out[j] = 0
  if want < v[2] then
    local before = reserved(v)
    v[3] = before
    v[4] = now + hold
    v[2] = want
    total = total + reserved(v) - before
    out[j] = want
    lowered[j] = true
  end
end
for j = 1, n do
  local f = ARGV[3 + 2 * j]
  local want = tonumber(ARGV[4 + 2 * j])
  local v = e[f]
  if not lowered[j] and want >= v[2] then
    local before = reserved(v)
    local room = capacity - total
    if room < 0 then room = 0 end
    local limit = before + room
    local g = want
    if limit < g then g = limit end
    if g > v[2] then v[2] = g end
    total = total + reserved(v) - before
    out[j] = v[2]
  end
end
for j = 1, n do
  local f = ARGV[3 + 2 * j]
  store(f, e[f])
  out[j] = fmt(out[j])
end
expire()
return out
`;

const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex');
const EXCHANGE_SHA = sha1(EXCHANGE_SCRIPT);
const RESERVE_SHA = sha1(RESERVE_SCRIPT);

export interface RedisQuotaShareOptions {
  /**
   * Sends the scripts, each routed by its one key (a bucket's record): the Redis counter store the
   * quotas share (single: its pool; Sentinel: the current master; Cluster: the key's slot owner).
   */
  readonly sender: KeyedCommandSender;
}

interface ScriptCall {
  readonly key: string;
  readonly script: string;
  readonly sha: string;
  readonly args: readonly string[];
}

function encodeCall(c: ScriptCall, viaEval: boolean): string {
  return encodeCommand([viaEval ? 'EVAL' : 'EVALSHA', viaEval ? c.script : c.sha, '1', c.key, ...c.args]);
}

const isNoScript = (r: RespReply): boolean => r instanceof RespErrorReply && r.message.startsWith('NOSCRIPT');

/** Runs every call by hash, resending the NOSCRIPT ones (a flushed cache, a new master or node) with their body once. */
async function runCalls(sender: KeyedCommandSender, calls: readonly ScriptCall[]): Promise<RespReply[]> {
  const out = await sender.sendKeyed(calls.map((c) => ({ key: c.key, text: encodeCall(c, false) })));
  const missing: number[] = [];
  out.forEach((r, i) => {
    if (isNoScript(r)) missing.push(i);
  });
  if (missing.length > 0) {
    const again = await sender.sendKeyed(missing.map((i) => ({ key: calls[i]!.key, text: encodeCall(calls[i]!, true) })));
    missing.forEach((i, j) => (out[i] = again[j]!));
  }
  for (const r of out) if (r instanceof RespErrorReply) throw new StoreError(`redis error: ${r.message}`);
  return out;
}

function integerOf(s: string | undefined): number {
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < 0) throw new StoreError(`redis error: quota share record holds ${JSON.stringify(s)}, not a count`);
  return n;
}

function parseExchange(reply: RespReply): InstanceShare[] {
  if (!Array.isArray(reply) || reply.length % 2 !== 0) throw new StoreError(`redis error: unexpected exchange reply ${JSON.stringify(reply)}`);
  const out: InstanceShare[] = [];
  for (let i = 0; i < reply.length; i += 2) {
    const instance = reply[i];
    const value = reply[i + 1];
    if (typeof instance !== 'string' || typeof value !== 'string') throw new StoreError('redis error: unexpected exchange reply entry');
    const sp = value.indexOf(' ');
    out.push({ instance, demand: integerOf(value.slice(0, sp)), grant: integerOf(value.slice(sp + 1)) });
  }
  return out.sort((a, b) => (a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0));
}

function parseReserve(reply: RespReply, expected: number): number[] {
  if (!Array.isArray(reply) || reply.length !== expected) throw new StoreError(`redis error: unexpected reserve reply ${JSON.stringify(reply)}`);
  return reply.map((r) => integerOf(typeof r === 'string' ? r : typeof r === 'number' ? String(r) : undefined));
}

const int = (n: number): string => {
  if (!Number.isSafeInteger(n) || n < 0) throw new StoreError(`quota share value must be a non-negative safe integer, got ${n}`);
  return String(n);
};

export class RedisQuotaShareStore implements QuotaShareStore {
  readonly kind = 'redis';
  constructor(private readonly opts: RedisQuotaShareOptions) {}

  async exchange(batch: readonly ExchangeBatch[], timing: ShareTiming): Promise<InstanceShare[][]> {
    if (batch.length === 0) return [];
    const head = [int(timing.nowMs), int(timing.entryTtlMs)];
    const calls = batch.map((b) => ({
      key: b.bucket,
      script: EXCHANGE_SCRIPT,
      sha: EXCHANGE_SHA,
      args: [...head, ...b.updates.flatMap((u) => [u.instance, int(u.demand)])],
    }));
    const replies = await runCalls(this.opts.sender, calls);
    return replies.map(parseExchange);
  }

  async reserve(batch: readonly ReserveBatch[], timing: ShareTiming & { readonly holdMs: number }): Promise<number[][]> {
    if (batch.length === 0) return [];
    const head = [int(timing.nowMs), int(timing.entryTtlMs), int(timing.holdMs)];
    const calls = batch.map((b) => ({
      key: b.bucket,
      script: RESERVE_SCRIPT,
      sha: RESERVE_SHA,
      args: [...head, int(b.capacity), ...b.requests.flatMap((r) => [r.instance, int(r.want)])],
    }));
    const replies = await runCalls(this.opts.sender, calls);
    return replies.map((r, i) => parseReserve(r, batch[i]!.requests.length));
  }

  async release(bucket: string, instances: readonly string[]): Promise<void> {
    if (instances.length === 0) return;
    const [reply] = await this.opts.sender.sendKeyed([{ key: bucket, text: encodeCommand(['HDEL', bucket, ...instances]) }]);
    if (reply instanceof RespErrorReply) throw new StoreError(`redis error: ${reply.message}`);
  }

  /** The connections belong to the counter store that sends for it; it closes them. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}
