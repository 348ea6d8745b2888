// Redis Cluster key → slot mapping (CRC16/XMODEM of the key, or of its hash tag, mod 16384) and
// the parsing of CLUSTER SLOTS and of MOVED/ASK redirections.
import { RespErrorReply, type RespReply } from './resp-parser.js';

export const SLOT_COUNT = 16384;

const TABLE = ((): Uint16Array => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    t[i] = crc;
  }
  return t;
})();

/** CRC16 (XMODEM: poly 0x1021, init 0), the checksum Redis Cluster uses. */
export function crc16(bytes: Uint8Array, from = 0, to = bytes.length): number {
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ (bytes[i] as number)) & 0xff] as number);
  return crc;
}

/** The slot of a key: only the part inside the first non-empty `{...}` counts when there is one. */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes, open + 1, close) % SLOT_COUNT;
  }
  return crc16(bytes) % SLOT_COUNT;
}

export interface SlotRange {
  start: number;
  end: number;
  /** `host:port` of the master serving the range. */
  master: string;
}

function addressOf(node: RespReply, fallbackHost: string): string | undefined {
  if (!Array.isArray(node)) return undefined;
  const [host, port] = node;
  if (typeof port !== 'number') return undefined;
  // An empty or '?' host means "the address you reached me on" (cluster-preferred-endpoint-type unknown-endpoint).
  const h = typeof host === 'string' && host !== '' && host !== '?' ? host : fallbackHost;
  return h.includes(':') ? `[${h}]:${port}` : `${h}:${port}`;
}

/** Parses a CLUSTER SLOTS reply; `fallbackHost` is the host the reply came from. */
export function parseClusterSlots(reply: RespReply, fallbackHost: string): SlotRange[] {
  if (reply instanceof RespErrorReply) throw new Error(reply.message);
  if (!Array.isArray(reply)) throw new Error('unexpected CLUSTER SLOTS reply');
  const out: SlotRange[] = [];
  for (const r of reply) {
    if (!Array.isArray(r) || typeof r[0] !== 'number' || typeof r[1] !== 'number') continue;
    const master = addressOf(r[2] ?? null, fallbackHost);
    if (master !== undefined) out.push({ start: r[0], end: r[1], master });
  }
  return out;
}

export interface Redirect {
  kind: 'MOVED' | 'ASK';
  slot: number;
  address: string;
}

/** `MOVED 3999 127.0.0.1:6381` / `ASK 3999 127.0.0.1:6381` → redirect; anything else → undefined. */
export function parseRedirect(reply: RespReply): Redirect | undefined {
  if (!(reply instanceof RespErrorReply)) return undefined;
  const m = /^(MOVED|ASK) (\d+) (\S+)$/.exec(reply.message);
  if (m === null) return undefined;
  return { kind: m[1] as 'MOVED' | 'ASK', slot: Number(m[2]), address: m[3] as string };
}
