import type { ServerResponse } from 'node:http';
import type { Origin, OriginJson } from '../origin.js';

/**
 * One (coin, currency) quote as the streams see it: shared by every stream that asks for it,
 * whatever origin (Host) each stream's client used.
 */
export interface QuotePair {
  readonly key: string;
  readonly coin: string;
  /**
   * The coin's record as in `/api/v2/crypto`'s `coins`, for every origin (a new object whenever
   * it changes); null while unavailable.
   */
  json: OriginJson | null;
  /** Snapshot version at which `json` last changed. */
  changedVersion: number;
  /** Snapshot version from which this pair has been followed without a gap. */
  trackedSince: number;
  /** Streams currently following it; 0 starts its expiry. */
  subscribers: number;
  /** Clock time at which the last subscriber left. */
  idleSince: number;
}

/** Bounds of one stream (see stream-settings.ts). */
export interface SseBounds {
  bufferBytes: number;
  stallMs: number;
}

export type CloseReason = 'client' | 'stalled' | 'lifetime' | 'charge-refused' | 'revoked' | 'plan-changed' | 'shutdown';

/** An SSE comment or event as text; `data` must be one line (JSON text is). */
export function sseEvent(event: string, data: string, id?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`;
}

/**
 * One open Server-Sent Events response. Writes are bounded: while more than `bufferBytes` are
 * waiting in the socket (a client that does not read), updates are not queued but merged into
 * `pending` (the latest JSON per coin, at most one entry per coin of the stream); they go out
 * as one event once the client has read enough. A stream stuck like this for `stallMs` is
 * closed. So a slow client holds at most `bufferBytes` plus one event, whatever the update rate.
 */
export class SseStream {
  /** Latest record sent per coin (the shared objects of the pairs, not copies). */
  private readonly sent = new Map<string, OriginJson>();
  /** Updates not yet written, latest per coin. */
  private readonly pending = new Map<string, OriginJson>();
  private pendingId = '';
  private pendingAt = '';
  /** Clock time since which writes have been held back (undefined: flowing). */
  blockedSince: number | undefined;
  closed = false;
  /** Updates merged into a later event instead of being written on their own. */
  coalesced = 0;
  /** Quote events written. */
  eventsSent = 0;
  nextHeartbeatAt: number;
  nextChargeAt: number;
  readonly closeAt: number;
  charging = false;
  /** The token-change version at which this stream's token and plan were last confirmed (NaN: not yet). */
  accessVersion = NaN;

  constructor(
    readonly res: ServerResponse,
    readonly tokenKey: string,
    /** The plan the stream was opened under; a token on another plan now must reconnect. */
    readonly planId: string,
    /** The origin of this client's icon URLs, put into the shared records as they are written. */
    readonly origin: Origin,
    readonly pairs: readonly QuotePair[],
    private readonly bounds: SseBounds,
    times: { now: number; heartbeatMs: number; chargeMs: number; lifetimeMs: number },
    private readonly onClose: (s: SseStream, reason: CloseReason) => void,
  ) {
    this.nextHeartbeatAt = times.now + times.heartbeatMs;
    this.nextChargeAt = times.now + times.chargeMs;
    this.closeAt = times.now + times.lifetimeMs;
    res.on('close', () => this.close('client'));
    res.on('drain', () => this.flush(undefined));
  }

  /** Bytes handed to the socket and not yet sent (node's buffer for this response). */
  buffered(): number {
    return this.res.writableLength;
  }

  /** Queues the pairs whose JSON differs from what this client has, and writes them when it can. */
  update(id: string, requestedAt: string, now: number): void {
    if (this.closed) return;
    let changed = false;
    for (const p of this.pairs) {
      const j = p.json;
      if (j === null) continue;
      if ((this.pending.get(p.coin) ?? this.sent.get(p.coin)) === j) continue;
      if (this.pending.has(p.coin)) this.coalesced++;
      this.pending.set(p.coin, j);
      changed = true;
    }
    if (!changed) return;
    this.pendingId = id;
    this.pendingAt = requestedAt;
    this.flush(now);
  }

  /** Marks coins as already known to the client (a resumed stream), so only later changes go out. */
  assumeKnown(coin: string, json: OriginJson): void {
    this.sent.set(coin, json);
  }

  /** Writes the pending updates as one event unless the client is behind. */
  flush(now: number | undefined): void {
    if (this.closed || this.pending.size === 0) return;
    if (this.res.writableLength > this.bounds.bufferBytes) {
      if (now !== undefined) this.blockedSince ??= now;
      return;
    }
    let body = '';
    for (const [coin, json] of this.pending) {
      const text = json.textFor(this.origin);
      body += body === '' ? text : `,${text}`;
      this.sent.set(coin, json);
    }
    this.pending.clear();
    this.blockedSince = undefined;
    this.eventsSent++;
    this.res.write(sseEvent('quote', `{"coins":[${body}],"requestedAt":"${this.pendingAt}"}`, this.pendingId));
  }

  /** Raw text (the opening lines, a comment); skipped while the client is behind. */
  writeRaw(text: string): boolean {
    if (this.closed || this.res.writableLength > this.bounds.bufferBytes) return false;
    this.res.write(text);
    return true;
  }

  /** Whether the client has been behind for longer than the stall bound. */
  stalled(now: number): boolean {
    if (this.blockedSince === undefined) {
      // Behind without a pending update (heartbeats only): count from now.
      if (this.res.writableLength > this.bounds.bufferBytes) this.blockedSince = now;
      return false;
    }
    if (this.res.writableLength <= this.bounds.bufferBytes) {
      this.blockedSince = undefined;
      return false;
    }
    return now - this.blockedSince >= this.bounds.stallMs;
  }

  /** Ends the response (a last event first, when given and it fits) and reports the reason once. */
  close(reason: CloseReason, lastEvent?: string): void {
    if (this.closed) return;
    this.closed = true;
    this.pending.clear();
    if (reason === 'stalled' || reason === 'client') this.res.destroy();
    else this.res.end(lastEvent !== undefined && this.res.writableLength <= this.bounds.bufferBytes ? lastEvent : undefined);
    this.onClose(this, reason);
  }
}
