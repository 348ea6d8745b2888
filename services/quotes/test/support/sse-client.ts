// A minimal Server-Sent Events client over a raw TCP socket, for the stream tests (integration and
// e2e): it records events and comments as they arrive and can stop reading (a slow consumer) on
// demand.
import { connect, type Server, type Socket } from 'node:net';

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

export class SseClient {
  status = 0;
  headers: Record<string, string> = {};
  /** The body of a non-200 answer. */
  body = '';
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  retry: number | undefined;
  ended = false;
  private buf = '';
  private headDone = false;
  private chunked = false;
  private raw = '';

  private constructor(private readonly socket: Socket) {}

  /** Opens `path` on 127.0.0.1:`port`; resolves once the response head has arrived. */
  static open(port: number, path: string, headers: Record<string, string> = {}): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const c = new SseClient(socket);
      const lines = [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Accept: text/event-stream', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''];
      socket.on('connect', () => socket.write(lines.join('\r\n')));
      socket.on('error', reject);
      socket.on('end', () => {
        c.ended = true;
        if (!c.headDone) reject(new Error(`connection closed before a response: ${c.raw}`));
      });
      socket.on('close', () => (c.ended = true));
      socket.on('data', (chunk: Buffer) => {
        c.raw += chunk.toString('latin1');
        if (!c.headDone) {
          const end = c.raw.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = c.raw.slice(0, end).split('\r\n');
          c.status = Number(head[0]?.split(' ')[1]);
          for (const l of head.slice(1)) {
            const i = l.indexOf(':');
            c.headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
          }
          c.chunked = /chunked/i.test(c.headers['transfer-encoding'] ?? '');
          c.headDone = true;
          c.raw = c.raw.slice(end + 4);
          resolve(c);
        }
        c.consume();
      });
    });
  }

  /** Decodes chunked framing, then SSE blocks. */
  private consume(): void {
    let text = '';
    if (this.chunked) {
      for (;;) {
        const nl = this.raw.indexOf('\r\n');
        if (nl < 0) break;
        const size = parseInt(this.raw.slice(0, nl), 16);
        if (this.raw.length < nl + 2 + size + 2) break;
        text += this.raw.slice(nl + 2, nl + 2 + size);
        this.raw = this.raw.slice(nl + 2 + size + 2);
        if (size === 0) this.ended = true;
      }
    } else {
      text = this.raw;
      this.raw = '';
    }
    text = Buffer.from(text, 'latin1').toString('utf8');
    if (this.status !== 200) {
      this.body += text;
      return;
    }
    this.buf += text;
    for (;;) {
      const end = this.buf.indexOf('\n\n');
      if (end < 0) break;
      const block = this.buf.slice(0, end);
      this.buf = this.buf.slice(end + 2);
      const ev: SseEvent = { id: undefined, event: 'message', data: '' };
      let hasData = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
        else if (line.startsWith('id: ')) ev.id = line.slice(4);
        else if (line.startsWith('event: ')) ev.event = line.slice(7);
        else if (line.startsWith('retry: ')) this.retry = Number(line.slice(7));
        else if (line.startsWith('data: ')) {
          ev.data += line.slice(6);
          hasData = true;
        }
      }
      if (hasData) this.events.push(ev);
    }
  }

  quoteEvents(): Array<{ id: string | undefined; coins: Array<Record<string, unknown>>; requestedAt: string }> {
    return this.events.filter((e) => e.event === 'quote').map((e) => ({ id: e.id, ...(JSON.parse(e.data) as { coins: Array<Record<string, unknown>>; requestedAt: string }) }));
  }

  /** Stops reading: the server's writes pile up in the kernel buffers, then in its own. */
  pause(): void {
    this.socket.pause();
  }

  close(): void {
    this.socket.destroy();
  }
}

export function portOf(address: ReturnType<Server['address']>): number {
  return typeof address === 'object' && address !== null ? address.port : 0;
}
