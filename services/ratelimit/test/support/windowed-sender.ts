// A raw HTTP/2 sender that stays within the flow-control windows the server granted, as a real,
// patient attacker would (sending beyond them just ends in FLOW_CONTROL_ERROR). Used by the
// hostile-client tests to push many streams' request bytes as fast as the server lets them in.
import { FrameType, FrameFlag, H2TimeoutError, SettingId, type H2RawClient } from '@rls/testkit';

export class WindowedSender {
  private seen = 0;
  private conn = 65_535;
  private streamInitial = 65_535;
  private readonly streams = new Map<number, number>();
  private readonly reset = new Set<number>();

  constructor(private readonly c: H2RawClient) {}

  private absorb(): void {
    const frames = this.c.received;
    for (; this.seen < frames.length; this.seen++) {
      const f = frames[this.seen]!;
      if (f.type === FrameType.SETTINGS && (f.flags & FrameFlag.ACK) === 0) {
        for (let i = 0; i + 6 <= f.payload.length; i += 6) {
          if (f.payload.readUInt16BE(i) !== SettingId.INITIAL_WINDOW_SIZE) continue;
          const v = f.payload.readUInt32BE(i + 2);
          for (const [id, w] of this.streams) this.streams.set(id, w + v - this.streamInitial);
          this.streamInitial = v;
        }
      } else if (f.type === FrameType.WINDOW_UPDATE && f.payload.length === 4) {
        const inc = f.payload.readUInt32BE(0) & 0x7fffffff;
        if (f.streamId === 0) this.conn += inc;
        else this.streams.set(f.streamId, this.window(f.streamId) + inc);
      } else if (f.type === FrameType.RST_STREAM || (f.type === FrameType.HEADERS && (f.flags & FrameFlag.END_STREAM) !== 0)) {
        // Reset, or answered with a final status: nothing more to send on it.
        this.reset.add(f.streamId);
      }
    }
  }

  private window(id: number): number {
    return this.streams.get(id) ?? this.streamInitial;
  }

  /**
   * Round-robin over `plan` (stream id -> bytes still to send) in frames of at most 16 KiB until
   * everything is sent, the connection closes, or no window arrives for `stallMs`. Returns the
   * bytes sent.
   */
  async pump(plan: Map<number, Buffer>, endStream: boolean, stallMs: number): Promise<number> {
    let sent = 0;
    for (;;) {
      this.absorb();
      let progressed = false;
      for (const [id, rest] of plan) {
        if (this.reset.has(id) || rest.length === 0) continue;
        const n = Math.min(16_384, rest.length, this.conn, this.window(id));
        if (n <= 0) continue;
        const last = n === rest.length;
        this.c.data(id, rest.subarray(0, n), { endStream: endStream && last });
        plan.set(id, rest.subarray(n));
        this.conn -= n;
        this.streams.set(id, this.window(id) - n);
        sent += n;
        progressed = true;
      }
      if (this.c.isSocketClosed) return sent;
      if ([...plan.entries()].every(([id, rest]) => rest.length === 0 || this.reset.has(id))) return sent;
      if (progressed) {
        // Let the socket drain and the server's WINDOW_UPDATEs arrive.
        await new Promise((r) => setImmediate(r));
        continue;
      }
      try {
        await this.c.nextFrame(stallMs);
      } catch (err) {
        if (err instanceof H2TimeoutError) return sent; // stalled: the server grants no more
        throw err;
      }
    }
  }
}
