// The process-wide budget of request bytes (GRPC_PROCESS_BUFFER): what all gRPC connections
// together hold in incomplete messages plus the flow-control window they granted beyond HTTP/2's
// fixed initial 64 KiB. A connection takes from it before it widens its window and gives back
// what it no longer needs, so max connections × per-connection budget is never the process's
// worst case. One instance per gRPC server; plain arithmetic, no allocation.
export class ReceiveBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Takes up to `n` bytes; returns how many were granted (0 when the budget is used up). */
  take(n: number): number {
    const got = Math.min(n, this.limit - this.used);
    if (got <= 0) return 0;
    this.used += got;
    return got;
  }

  give(n: number): void {
    this.used -= n;
    if (this.used < 0) this.used = 0;
  }

  get inUse(): number {
    return this.used;
  }
}

/** A clock read by connections without calling Date.now per frame: the server's sweep updates it. */
export interface CoarseClock {
  now: number;
}
