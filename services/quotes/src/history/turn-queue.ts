/**
 * Hands out event-loop turns to history work, one step per turn, first come first served. A
 * heavy request awaits `next()` between its steps (a chunk read from the database, a chunk of
 * JSON written); since only one step runs per turn and I/O is polled between turns, however many
 * heavy requests run at once, a cheap request waits for at most about one step.
 */
export class TurnQueue {
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;

  /** Resolves at the start of a later event-loop turn (after pending I/O callbacks ran). */
  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.run);
      }
    });
  }

  /** Steps waiting for a turn. */
  get pending(): number {
    return this.waiting.length;
  }

  private readonly run = (): void => {
    const resume = this.waiting.shift();
    // Scheduled from inside the check phase, the next run comes after the next poll for I/O.
    if (this.waiting.length > 0) setImmediate(this.run);
    else this.scheduled = false;
    resume?.();
  };
}
