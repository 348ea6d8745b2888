import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** One accepted WebSocket connection (server side): text frames in and out, pings answered. */
export interface FakeWsConnection {
  path: string;
  send(text: string): void;
  close(): void;
  readonly closed: boolean;
}

function frame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  let head: Buffer;
  if (len < 126) head = Buffer.from([0x80 | opcode, len]);
  else if (len < 65536) {
    head = Buffer.alloc(4);
    head[0] = 0x80 | opcode;
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head = Buffer.alloc(10);
    head[0] = 0x80 | opcode;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([head, payload]);
}

/**
 * Completes the RFC 6455 handshake on an HTTP upgrade and decodes client frames (always masked).
 * Just enough protocol for exchange stream fakes: no extensions, no fragmentation beyond FIN frames.
 */
export function acceptWebSocket(req: IncomingMessage, socket: Duplex, onText: (conn: FakeWsConnection, text: string) => void): FakeWsConnection {
  const key = String(req.headers['sec-websocket-key'] ?? '');
  const accept = createHash('sha1').update(key + GUID).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  let closed = false;
  const conn: FakeWsConnection = {
    path: req.url ?? '/',
    send(text: string) {
      if (!closed) socket.write(frame(1, Buffer.from(text)));
    },
    close() {
      if (closed) return;
      closed = true;
      socket.end(frame(8, Buffer.alloc(0)));
    },
    get closed() {
      return closed;
    },
  };
  let buf = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      if (buf.length < 2) return;
      const opcode = buf[0]! & 0x0f;
      const masked = (buf[1]! & 0x80) !== 0;
      let len = buf[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      const maskLen = masked ? 4 : 0;
      if (buf.length < off + maskLen + len) return;
      const mask = buf.subarray(off, off + maskLen);
      const payload = Buffer.from(buf.subarray(off + maskLen, off + maskLen + len));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ mask[i % 4]!;
      buf = buf.subarray(off + maskLen + len);
      if (opcode === 1) onText(conn, payload.toString('utf8'));
      else if (opcode === 9) socket.write(frame(10, payload));
      else if (opcode === 8) {
        if (!closed) {
          closed = true;
          socket.end(frame(8, Buffer.alloc(0)));
        }
        return;
      }
    }
  });
  socket.on('close', () => (closed = true));
  socket.on('error', () => (closed = true));
  return conn;
}
