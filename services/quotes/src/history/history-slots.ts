import { QuotesError } from '../errors.js';

/**
 * Bounds how many large history answers are produced at once (QUOTES_HISTORY_CONCURRENCY) and how
 * many wait for a turn (QUOTES_HISTORY_QUEUE). An answer in production holds its series and a
 * chunk or two in socket buffers; a waiting one holds only its request. Past the queue, requests
 * are refused with 503 and Retry-After, so a burst of heavy requests (the pro plan admits 50 a
 * second) costs bounded memory however long it lasts.
 */
export class HistorySlots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(
    readonly maxActive: number,
    readonly maxWaiting: number,
  ) {}

  get inUse(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with the release function once a slot is free (first come, first served). */
  async acquire(): Promise<() => void> {
    if (this.active < this.maxActive) this.active++;
    else {
      if (this.waiting.length >= this.maxWaiting) throw new QuotesError('HISTORY_BUSY', { limit: this.maxActive + this.maxWaiting, retryAfterSeconds: 1 });
      // The slot is handed over by the releasing request, so `active` never drops in between.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.active--;
    };
  }
}
