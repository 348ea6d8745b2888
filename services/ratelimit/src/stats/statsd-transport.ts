// Moves statsd lines to a statsd server over UDP or TCP. Rules it keeps, because statistics must
// never hurt the service: no call throws, nothing waits on the network, memory is bounded.
// - Lines written in one tick are batched: UDP packets up to `maxPacketBytes`, TCP one write.
// - UDP: send errors (no listener, unreachable) are logged at debug and the packet is dropped.
// - TCP: connects in the background; while disconnected, lines queue up to `maxQueuedBytes` and
//   the rest are dropped (counted, logged once per outage); a lost connection is re-dialled after
//   `reconnectDelayMs`, and the queue is sent when it is back.
// hot-shots is not used: its TCP transport re-creates a socket only for a few error codes and not
// within a second of the last attempt, so a statsd that is down at start-up is never reached.
import dgram from 'node:dgram';
import net from 'node:net';
import type { Logger } from '../logger.js';

export interface StatsdTransport {
  /** Queues one line (no newline). Never throws. */
  write(line: string): void;
  /** Sends everything queued now instead of at the end of the tick. */
  flush(): void;
  /** Sends what is queued (bounded wait on TCP) and closes the socket. */
  close(): Promise<void>;
  /** TCP: whether the connection is up now; UDP has no connection and says true. */
  connected(): boolean;
}

export interface StatsdTransportOptions {
  host: string;
  port: number;
  protocol: 'udp' | 'tcp';
  logger: Logger;
  /** UDP payload bound (bytes); 1432 keeps a packet within a 1500-byte MTU. */
  maxPacketBytes?: number;
  /** TCP: bytes kept while disconnected or while the socket is backed up. */
  maxQueuedBytes?: number;
  /** TCP: delay before re-dialling after a failure (ms). */
  reconnectDelayMs?: number;
  /** Bound on close() waiting for TCP data to drain (ms). */
  closeTimeoutMs?: number;
}

export function createStatsdTransport(opts: StatsdTransportOptions): StatsdTransport {
  return opts.protocol === 'udp' ? new UdpTransport(opts) : new TcpTransport(opts);
}

abstract class BatchingTransport implements StatsdTransport {
  protected batch: string[] = [];
  protected batchBytes = 0;
  private scheduled = false;
  protected closed = false;

  write(line: string): void {
    if (this.closed) return;
    this.batch.push(line);
    this.batchBytes += Buffer.byteLength(line) + 1;
    this.onQueued();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }

  protected onQueued(): void {}

  abstract flush(): void;
  abstract connected(): boolean;
  abstract close(): Promise<void>;
}

class UdpTransport extends BatchingTransport {
  private readonly socket: dgram.Socket;
  private readonly maxPacket: number;
  constructor(private readonly opts: StatsdTransportOptions) {
    super();
    this.maxPacket = opts.maxPacketBytes ?? 1432;
    this.socket = dgram.createSocket(net.isIPv6(opts.host) ? 'udp6' : 'udp4');
    this.socket.on('error', (err) => opts.logger.warn({ err: err.message }, 'statsd udp socket error'));
    this.socket.unref();
  }

  protected override onQueued(): void {
    if (this.batchBytes >= this.maxPacket) this.flush();
  }

  flush(): void {
    if (this.batch.length === 0) return;
    let packet = '';
    for (const line of this.batch) {
      if (packet !== '' && Buffer.byteLength(packet) + 1 + Buffer.byteLength(line) > this.maxPacket) {
        this.send(packet);
        packet = '';
      }
      packet = packet === '' ? line : `${packet}\n${line}`;
    }
    if (packet !== '') this.send(packet);
    this.batch = [];
    this.batchBytes = 0;
  }

  connected(): boolean {
    return !this.closed;
  }

  private send(packet: string): void {
    try {
      this.socket.send(packet, this.opts.port, this.opts.host, (err) => {
        if (err) this.opts.logger.debug({ err: err.message }, 'statsd udp send failed; dropped');
      });
    } catch (err) {
      this.opts.logger.debug({ err: err instanceof Error ? err.message : String(err) }, 'statsd udp send failed; dropped');
    }
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.flush();
    this.closed = true;
    // dgram sends are queued in libuv; closing right away can still lose the last packet, so
    // close after the pending send callbacks have run.
    return new Promise((resolve) => {
      setImmediate(() => {
        try {
          this.socket.close(() => resolve());
        } catch {
          resolve();
        }
      });
    });
  }
}

class TcpTransport extends BatchingTransport {
  private socket: net.Socket | undefined;
  private isUp = false;
  private queue: string[] = [];
  private queueBytes = 0;
  private dropped = 0;
  private outageLogged = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly maxQueued: number;

  constructor(private readonly opts: StatsdTransportOptions) {
    super();
    this.maxQueued = opts.maxQueuedBytes ?? 1024 * 1024;
    this.dial();
  }

  private dial(): void {
    this.reconnectTimer = undefined;
    if (this.closed) return;
    const socket = net.connect({ host: this.opts.host, port: this.opts.port });
    socket.setNoDelay(true);
    socket.unref();
    this.socket = socket;
    socket.on('connect', () => {
      this.isUp = true;
      if (this.outageLogged || this.dropped > 0) {
        this.opts.logger.info({ dropped: this.dropped }, 'statsd tcp connection restored');
      }
      this.outageLogged = false;
      this.dropped = 0;
      this.drainQueue();
    });
    socket.on('drain', () => this.drainQueue());
    socket.on('error', (err) => {
      if (!this.outageLogged) {
        this.outageLogged = true;
        this.opts.logger.warn({ err: err.message, host: this.opts.host, port: this.opts.port }, 'statsd tcp connection failed; stats are queued (bounded) and the connection retried');
      } else {
        this.opts.logger.debug({ err: err.message }, 'statsd tcp error');
      }
    });
    socket.on('close', () => {
      this.isUp = false;
      if (this.socket === socket) this.socket = undefined;
      if (this.closed) return;
      this.reconnectTimer = setTimeout(() => this.dial(), this.opts.reconnectDelayMs ?? 1000);
      this.reconnectTimer.unref();
    });
  }

  connected(): boolean {
    return this.isUp;
  }

  flush(): void {
    if (this.batch.length === 0) return;
    for (const line of this.batch) this.enqueue(line);
    this.batch = [];
    this.batchBytes = 0;
    this.drainQueue();
  }

  private enqueue(line: string): void {
    const bytes = Buffer.byteLength(line) + 1;
    if (this.queueBytes + bytes > this.maxQueued) {
      this.dropped += 1;
      return;
    }
    this.queue.push(line);
    this.queueBytes += bytes;
  }

  private drainQueue(): void {
    const socket = this.socket;
    if (!this.isUp || socket === undefined || this.queue.length === 0) return;
    // Respect back-pressure: a statsd that reads slowly must not grow our memory without bound.
    if (socket.writableNeedDrain) return;
    const chunk = this.queue.join('\n') + '\n';
    this.queue = [];
    this.queueBytes = 0;
    socket.write(chunk);
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.flush();
    this.closed = true;
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    const socket = this.socket;
    if (socket === undefined) return Promise.resolve();
    if (!this.isUp) {
      socket.destroy();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => socket.destroy(), this.opts.closeTimeoutMs ?? 1000);
      timer.unref();
      socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      if (this.queue.length > 0) socket.write(this.queue.join('\n') + '\n');
      socket.end();
    });
  }
}
