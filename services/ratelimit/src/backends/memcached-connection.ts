// One connection to one memcached node: commands of every caller in an event-loop turn go out in
// one socket write, replies are matched to callers in order (memcached answers in order), a reply
// overdue by the timeout breaks the connection (every caller queued on it fails), and a broken
// connection reconnects with jittered exponential backoff. While it waits to reconnect, commands
// fail at once instead of queueing, so a dead node costs callers nothing but a failed lookup.
// A connection is ready once memcached answered `version` on it.
import { createConnection, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions as TlsOptions } from 'node:tls';
import { backoffDelayMs } from '@rls/backoff';
import { StoreError, type RandomSource } from '@rls/engine';
import { LineReply, VERSION_COMMAND, type ReplyParser } from './memcached-protocol.js';

export interface McConnectionEvents {
  onReady(conn: McConnection): void;
  /** A connection that was ready stopped being ready. */
  onDown(conn: McConnection, err: StoreError): void;
}

export interface McConnectionOptions {
  host: string;
  port: number;
  /** TLS options (certificates, CA, hostname check); plain TCP when undefined. */
  tls?: TlsOptions | undefined;
  timeoutMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  random: RandomSource;
  now: () => number;
  events: McConnectionEvents;
}

export type McConnectionState = 'connecting' | 'ready' | 'waiting' | 'closed';

export class McConnection {
  state: McConnectionState = 'waiting';
  lastError: StoreError | undefined;
  private sock: Socket | undefined;
  private queue: ReplyParser[] = [];
  private head = 0;
  private recv: Buffer = Buffer.alloc(0);
  private out = '';
  private flushScheduled = false;
  private watchdog: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private readonly flushBound = (): void => this.flush();

  constructor(private readonly opts: McConnectionOptions) {}

  get address(): string {
    return `${this.opts.host}:${this.opts.port}`;
  }

  connect(): void {
    if (this.state === 'closed') return;
    this.state = 'connecting';
    this.reconnectTimer = undefined;
    const { host, port } = this.opts;
    const sock = this.opts.tls !== undefined ? tlsConnect({ host, port, servername: host, ...this.opts.tls }) : createConnection({ host, port });
    this.sock = sock;
    sock.setNoDelay(true);
    const connectTimer = setTimeout(() => sock.destroy(new Error(`connect timeout after ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
    sock.once(this.opts.tls !== undefined ? 'secureConnect' : 'connect', () => {
      clearTimeout(connectTimer);
      // The handshake goes first; commands queued while connecting follow it in the same write.
      const handshake = new LineReply((err, line) => {
        if (err === undefined && line.startsWith('VERSION')) this.markReady();
        else this.drop(err ?? new StoreError(`memcached handshake: unexpected ${JSON.stringify(line)}`));
      });
      handshake.deadline = this.opts.now() + this.opts.timeoutMs;
      this.queue.splice(this.head, 0, handshake);
      this.out = VERSION_COMMAND + this.out;
      this.flush();
      this.armWatchdog();
    });
    sock.on('data', (d: Buffer) => this.onData(d));
    sock.on('error', (err: Error) => {
      clearTimeout(connectTimer);
      this.lastError = new StoreError(`memcached ${this.address}: ${err.message}`, { cause: err });
    });
    sock.on('close', () => {
      clearTimeout(connectTimer);
      if (this.sock === sock) this.drop(this.lastError ?? new StoreError(`memcached ${this.address}: connection closed`));
    });
  }

  /** Queues a command; its parser settles with the reply, or fails at once when the node is down. */
  send(command: string, parser: ReplyParser): void {
    if (this.state === 'waiting' || this.state === 'closed') {
      parser.fail(this.state === 'closed' ? new StoreError('memcached store closed') : (this.lastError ?? new StoreError(`memcached ${this.address} unavailable`)));
      return;
    }
    parser.deadline = this.opts.now() + this.opts.timeoutMs;
    this.queue.push(parser);
    this.out += command;
    if (this.state === 'ready' && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushBound);
    }
    if (this.watchdog === undefined) this.armWatchdog();
  }

  /** Replies still expected. */
  get pending(): number {
    return this.queue.length - this.head;
  }

  /** Stops reconnecting, writes what is queued, waits (bounded by the timeout) for the replies, then closes. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const wasReady = this.state === 'ready';
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    const sock = this.sock;
    if (sock !== undefined && wasReady) {
      this.flush();
      if (this.pending > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.opts.timeoutMs);
          this.onDrained = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
    }
    this.state = 'closed';
    this.stopWatchdog();
    this.sock = undefined;
    this.failAll(new StoreError('memcached store closed'));
    if (sock !== undefined) {
      const closed = new Promise<void>((resolve) => sock.once('close', () => resolve()));
      const hard = setTimeout(() => sock.destroy(), this.opts.timeoutMs);
      sock.end();
      await closed;
      clearTimeout(hard);
    }
    if (wasReady) this.opts.events.onDown(this, new StoreError('memcached store closed'));
  }

  private onDrained: (() => void) | undefined;

  private markReady(): void {
    if (this.state !== 'connecting') return;
    this.state = 'ready';
    this.attempt = 0;
    this.lastError = undefined;
    this.opts.events.onReady(this);
    this.flush();
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.out.length === 0 || this.sock === undefined || (this.state !== 'ready' && this.state !== 'connecting')) return;
    this.sock.write(this.out);
    this.out = '';
  }

  private onData(d: Buffer): void {
    this.recv = this.recv.length === 0 ? d : Buffer.concat([this.recv, d]);
    let pos = 0;
    try {
      while (pos < this.recv.length) {
        const p = this.queue[this.head];
        if (p === undefined) throw new StoreError(`memcached ${this.address}: reply without a request`);
        const end = p.parse(this.recv, pos);
        // A parser's callback may have broken or closed the connection (failed handshake).
        if (this.state === 'waiting' || this.state === 'closed') return;
        if (end < 0) break;
        pos = end;
        this.head++;
      }
    } catch (err) {
      this.drop(err instanceof StoreError ? err : new StoreError(String(err)));
      return;
    }
    this.recv = pos >= this.recv.length ? Buffer.alloc(0) : this.recv.subarray(pos);
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (this.pending === 0) {
      this.queue.length = 0;
      this.head = 0;
      this.stopWatchdog();
      this.onDrained?.();
      this.onDrained = undefined;
    } else {
      this.armWatchdog();
    }
  }

  private armWatchdog(): void {
    this.stopWatchdog();
    const oldest = this.queue[this.head];
    if (oldest === undefined) return;
    const delay = Math.max(0, oldest.deadline - this.opts.now());
    this.watchdog = setTimeout(() => {
      this.watchdog = undefined;
      const h = this.queue[this.head];
      if (h === undefined) return;
      if (this.opts.now() >= h.deadline) this.drop(new StoreError(`memcached ${this.address}: no reply within ${this.opts.timeoutMs} ms`));
      else this.armWatchdog();
    }, delay + 1);
  }

  private stopWatchdog(): void {
    if (this.watchdog !== undefined) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  /** Breaks the connection: fails every caller, schedules a reconnect. */
  private drop(err: StoreError): void {
    if (this.state === 'closed' || this.state === 'waiting') return;
    const wasReady = this.state === 'ready';
    this.lastError = err;
    this.state = 'waiting';
    const sock = this.sock;
    this.sock = undefined;
    sock?.destroy();
    this.out = '';
    this.recv = Buffer.alloc(0);
    this.stopWatchdog();
    this.failAll(err);
    this.onDrained?.();
    this.onDrained = undefined;
    if (wasReady) this.opts.events.onDown(this, err);
    // Equal jitter, in [base/2, base), so the connections to a node do not reconnect in lockstep.
    const delay = backoffDelayMs({ initialMs: this.opts.backoffMinMs, maxMs: this.opts.backoffMaxMs, jitter: 'equal' }, this.attempt, this.opts.random);
    this.attempt = Math.min(this.attempt + 1, 30);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
    this.reconnectTimer.unref();
  }

  private failAll(err: StoreError): void {
    const q = this.queue;
    const from = this.head;
    this.queue = [];
    this.head = 0;
    for (let i = from; i < q.length; i++) q[i]?.fail(err);
  }
}
