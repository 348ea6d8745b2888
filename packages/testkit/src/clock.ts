/** A clock that only moves when told to; shaped like the services' injected `Clock`. */
export class FakeClock {
  private ms: number;
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.ms = startMs;
  }
  now(): number {
    return this.ms;
  }
  nowSeconds(): number {
    return Math.floor(this.ms / 1000);
  }
  set(ms: number): void {
    this.ms = ms;
  }
  setSeconds(s: number): void {
    this.ms = s * 1000;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
