// A raw HTTP/2 attacker connection for bench/hostile.mjs on top of the testkit's frame client
// (packages/testkit/src/h2-raw.ts, loaded from dist/): it follows the server's SETTINGS and
// flow-control windows (an attack that stays within the protocol is the one a server cannot
// simply reject), honours socket back-pressure, and records how the connection ended.
import {
  connectH2,
  encodeFrame,
  FrameFlag,
  FrameType,
  h2ErrorName,
  decodeSettings,
  SettingId,
} from '../../packages/testkit/dist/src/h2-raw.js';
import { setTimeout as delay } from 'node:timers/promises';

const DEFAULT_WINDOW = 65535;

export class AttackConn {
  constructor(client) {
    this.client = client;
    this.socket = client.socket;
    this.connWindow = DEFAULT_WINDOW;
    this.initialStreamWindow = DEFAULT_WINDOW;
    this.maxFrame = 16384;
    this.maxStreams = Infinity;
    this.streamWindow = new Map();
    this.resets = new Map();
    this.resetStreams = new Set();
    this.responses = 0;
    /** Streams that got their final status (HEADERS with END_STREAM) or RST_STREAM, and the grpc-status counts. */
    this.finished = 0;
    this.statuses = new Map();
    this.framesIn = 0;
    this.bytesOut = 0;
    this.closedAtMs = undefined;
    this.startedAt = Date.now();
    this.wakers = [];
    this.pump();
  }

  get closed() {
    return this.client.isSocketClosed;
  }

  get goaway() {
    return this.client.lastGoaway;
  }

  /** Stops sending once the server has said GOAWAY or closed the socket. */
  get ended() {
    return this.closed || this.goaway !== undefined;
  }

  async pump() {
    for (;;) {
      let f;
      try {
        // Long bound: the pump lives as long as the socket; close() ends it with null.
        f = await this.client.nextFrame(3_600_000);
      } catch {
        f = null;
      }
      if (f === null) {
        if (!this.closingByUs) this.closedAtMs ??= Date.now() - this.startedAt;
        this.wake();
        return;
      }
      this.framesIn++;
      // The testkit client keeps every frame for diagnostics; an attack receives hundreds of
      // thousands, so keep only the tail.
      if (this.client.received.length > 2000) this.client.received.splice(0, this.client.received.length - 100);
      switch (f.type) {
        case FrameType.SETTINGS:
          if ((f.flags & FrameFlag.ACK) === 0) {
            for (const [id, v] of decodeSettings(f.payload)) {
              if (id === SettingId.INITIAL_WINDOW_SIZE) {
                const delta = v - this.initialStreamWindow;
                this.initialStreamWindow = v;
                for (const [sid, w] of this.streamWindow) this.streamWindow.set(sid, w + delta);
              } else if (id === SettingId.MAX_FRAME_SIZE) this.maxFrame = v;
              else if (id === SettingId.MAX_CONCURRENT_STREAMS) this.maxStreams = v;
            }
            this.gotSettings = true;
          }
          break;
        case FrameType.WINDOW_UPDATE: {
          const inc = f.payload.readUInt32BE(0) & 0x7fffffff;
          if (f.streamId === 0) this.connWindow += inc;
          else if (this.streamWindow.has(f.streamId)) this.streamWindow.set(f.streamId, this.streamWindow.get(f.streamId) + inc);
          break;
        }
        case FrameType.RST_STREAM: {
          const name = h2ErrorName(f.payload.readUInt32BE(0));
          this.resets.set(name, (this.resets.get(name) ?? 0) + 1);
          this.resetStreams.add(f.streamId);
          this.finished++;
          break;
        }
        case FrameType.HEADERS:
          this.responses++;
          if ((f.flags & FrameFlag.END_STREAM) !== 0) {
            this.finished++;
            const status = f.fields?.find(([k]) => k === 'grpc-status')?.[1] ?? '?';
            this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
          }
          break;
        default:
          break;
      }
      this.wake();
    }
  }

  wake() {
    const w = this.wakers;
    this.wakers = [];
    for (const fn of w) fn();
  }

  /** Resolves on the next frame received or socket close, or after `ms`. */
  async change(ms) {
    if (this.closed) return;
    let timer;
    await new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
      this.wakers.push(resolve);
    });
    clearTimeout(timer);
  }

  async waitSettings(deadline) {
    while (!this.gotSettings && !this.ended && Date.now() < deadline) await this.change(Math.min(200, deadline - Date.now()));
  }

  /** Writes bytes; waits for 'drain' (bounded by the deadline) when the socket buffer is full. */
  async write(bytes, deadline) {
    if (this.socket.destroyed || this.closed) return false;
    this.bytesOut += bytes.length;
    if (this.socket.write(bytes)) return true;
    while (this.socket.writableNeedDrain && !this.socket.destroyed && Date.now() < deadline) {
      await Promise.race([new Promise((r) => this.socket.once('drain', r)), delay(Math.max(1, Math.min(200, deadline - Date.now())))]);
    }
    return !this.socket.destroyed;
  }

  openStream(id) {
    this.streamWindow.set(id, this.initialStreamWindow);
  }

  /** One line: how the server ended (or did not end) this connection. */
  outcome() {
    const parts = [];
    const g = this.goaway;
    if (g) parts.push(`GOAWAY ${h2ErrorName(g.errorCode)}${g.debug ? ` "${g.debug.slice(0, 60)}"` : ''}`);
    if (this.closedAtMs !== undefined) parts.push(`closed by server after ${((this.closedAtMs ?? 0) / 1000).toFixed(1)} s`);
    else if (!g) parts.push('left open by server (no GOAWAY)');
    if (this.resets.size > 0) parts.push(`RST_STREAM ${[...this.resets].map(([k, v]) => `${k}×${v}`).join(' ')}`);
    return parts.join('; ');
  }

  async close() {
    this.closingByUs = true;
    await this.client.close();
  }
}

export async function attackConn(port) {
  const client = await connectH2({ port, connectTimeoutMs: 5000 });
  return new AttackConn(client);
}

/** A frame header alone (9 bytes) announcing `length` payload bytes, for payloads written apart. */
export function frameHeader(type, flags, streamId, length) {
  return encodeFrame(type, flags, streamId, Buffer.alloc(0), length);
}

export { encodeFrame, FrameFlag, FrameType };
