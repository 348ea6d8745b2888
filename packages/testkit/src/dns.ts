// A small authoritative DNS server on a loopback UDP port, for tests of SRV discovery: it answers
// SRV (and A) questions from records the test sets and may change at any time; unknown names get
// NXDOMAIN. Only what resolvers ask for a plain lookup is implemented (one question, no EDNS
// options honoured, no truncation).
import { createSocket, type Socket } from 'node:dgram';

export interface SrvRecord {
  priority?: number;
  weight?: number;
  port: number;
  target: string;
}

export interface DnsServer {
  host: string;
  port: number;
  /** `host:port`, the form `dns.Resolver#setServers` takes. */
  address: string;
  /** Replaces the SRV records of `name` (an empty list answers NOERROR with no records). */
  setSrv(name: string, records: readonly SrvRecord[]): void;
  /** Removes `name`; questions for it get NXDOMAIN. */
  remove(name: string): void;
  /** Replaces the IPv4 addresses of `name`. */
  setA(name: string, addresses: readonly string[]): void;
  /** Questions received so far, as `TYPE name`. */
  queries(): string[];
  stop(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_SRV = 33;

const norm = (name: string): string => name.toLowerCase().replace(/\.$/, '');

function encodeName(name: string): Buffer {
  const parts = norm(name).split('.').filter((p) => p.length > 0);
  const bufs = parts.map((p) => {
    const b = Buffer.from(p, 'ascii');
    return Buffer.concat([Buffer.from([b.length]), b]);
  });
  return Buffer.concat([...bufs, Buffer.from([0])]);
}

/** Reads the question name (no compression in questions); returns it and the offset after it. */
function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let pos = offset;
  for (;;) {
    const len = msg[pos];
    if (len === undefined) throw new Error('truncated name');
    pos++;
    if (len === 0) break;
    labels.push(msg.toString('ascii', pos, pos + len));
    pos += len;
  }
  return { name: labels.join('.'), end: pos };
}

function record(type: number, ttl: number, rdata: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xc00c, 0); // pointer to the question's name
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(1, 4); // IN
  head.writeUInt32BE(ttl, 6);
  head.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([head, rdata]);
}

export async function startDnsServer(opts: { host?: string; port?: number } = {}): Promise<DnsServer> {
  const host = opts.host ?? '127.0.0.1';
  const srv = new Map<string, SrvRecord[]>();
  const a = new Map<string, string[]>();
  const seen: string[] = [];
  const sock: Socket = createSocket('udp4');

  sock.on('message', (msg, rinfo) => {
    try {
      if (msg.length < 12) return;
      const id = msg.readUInt16BE(0);
      const flags = msg.readUInt16BE(2);
      const q = readName(msg, 12);
      const qtype = msg.readUInt16BE(q.end);
      const question = msg.subarray(12, q.end + 4);
      const name = norm(q.name);
      seen.push(`${qtype === TYPE_SRV ? 'SRV' : qtype === TYPE_A ? 'A' : String(qtype)} ${name}`);
      const answers: Buffer[] = [];
      const known = srv.has(name) || a.has(name);
      if (qtype === TYPE_SRV) {
        for (const r of srv.get(name) ?? []) {
          const fixed = Buffer.alloc(6);
          fixed.writeUInt16BE(r.priority ?? 10, 0);
          fixed.writeUInt16BE(r.weight ?? 10, 2);
          fixed.writeUInt16BE(r.port, 4);
          answers.push(record(TYPE_SRV, 5, Buffer.concat([fixed, encodeName(r.target)])));
        }
      } else if (qtype === TYPE_A) {
        for (const ip of a.get(name) ?? []) answers.push(record(TYPE_A, 5, Buffer.from(ip.split('.').map(Number))));
      }
      const head = Buffer.alloc(12);
      head.writeUInt16BE(id, 0);
      // QR=1, opcode copied, AA=1, RD copied, RA=1, rcode NXDOMAIN for unknown names.
      head.writeUInt16BE(0x8000 | (flags & 0x7900) | 0x0400 | 0x0080 | (known ? 0 : 3), 2);
      head.writeUInt16BE(1, 4);
      head.writeUInt16BE(answers.length, 6);
      sock.send(Buffer.concat([head, question, ...answers]), rinfo.port, rinfo.address);
    } catch {
      // A malformed question is dropped, as a real server would.
    }
  });
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(opts.port ?? 0, host, () => {
      sock.off('error', reject);
      resolve();
    });
  });
  const port = sock.address().port;
  return {
    host,
    port,
    address: `${host}:${port}`,
    setSrv: (name, records) => void srv.set(norm(name), [...records]),
    remove: (name) => {
      srv.delete(norm(name));
      a.delete(norm(name));
    },
    setA: (name, addresses) => void a.set(norm(name), [...addresses]),
    queries: () => [...seen],
    stop: () => new Promise<void>((resolve) => sock.close(() => resolve())),
  };
}
