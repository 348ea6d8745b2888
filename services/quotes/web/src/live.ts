import type { QuoteCoin } from './api.js';

/**
 * Live prices from the dashboard's stream (Server-Sent Events on the session). The stream is open
 * only while the tab is visible: hidden, it is closed (no requests at all), and shown again it
 * reopens with the last event id, so only what changed meanwhile is sent. Opening costs one API
 * request of the user's plan, and an open stream one more per charge interval (a minute by default).
 */
export class LivePrices {
  private source: EventSource | undefined;
  private lastId = '';
  private coins: string[] = [];
  private currency = 'USD';
  private stopped = false;
  private readonly onVisibility = (): void => this.sync();

  constructor(
    private readonly onQuotes: (coins: QuoteCoin[]) => void,
    private readonly onState: (state: 'live' | 'paused' | 'reconnecting' | 'closed', detail?: string) => void,
  ) {
    document.addEventListener('visibilitychange', this.onVisibility);
  }

  /** Follows these coins in this currency (reopens the stream when they changed). */
  follow(coins: readonly string[], currency: string): void {
    const same = coins.length === this.coins.length && coins.every((c, i) => c === this.coins[i]) && currency === this.currency;
    this.coins = [...coins];
    if (currency !== this.currency) this.lastId = '';
    this.currency = currency;
    if (same && this.source !== undefined) return;
    const first = this.source === undefined && this.timer === undefined;
    this.close();
    // Typing in the search box or paging quickly reopens once, not per keystroke (each open is
    // one request of the plan).
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = first ? undefined : setTimeout(() => {
      this.timer = undefined;
      this.sync();
    }, 400);
    if (first) this.sync();
  }

  private timer: ReturnType<typeof setTimeout> | undefined;

  private sync(): void {
    if (this.stopped) return;
    if (document.visibilityState === 'hidden') {
      if (this.source !== undefined) {
        this.close();
        this.onState('paused');
      }
      return;
    }
    if (this.source !== undefined || this.coins.length === 0) return;
    const last = this.lastId === '' ? '' : `&lastEventId=${encodeURIComponent(this.lastId)}`;
    const es = new EventSource(`/dashboard/api/market/stream?coin=${this.coins.map(encodeURIComponent).join(',')}&currency=${encodeURIComponent(this.currency)}${last}`);
    this.source = es;
    es.addEventListener('open', () => this.onState('live'));
    es.addEventListener('quote', (ev) => {
      const m = ev as MessageEvent<string>;
      if (m.lastEventId !== '') this.lastId = m.lastEventId;
      this.onQuotes((JSON.parse(m.data) as { coins: QuoteCoin[] }).coins);
    });
    es.addEventListener('error', (ev) => {
      const data = (ev as MessageEvent<string | undefined>).data;
      if (typeof data === 'string') {
        // The server ended the stream (quota, limits): do not hammer it.
        this.close();
        this.onState('closed', (JSON.parse(data) as { message?: string }).message);
        return;
      }
      if (es.readyState === EventSource.CLOSED) {
        this.close();
        this.onState('closed', 'Live prices stopped; reload the page to retry.');
      } else this.onState('reconnecting');
    });
  }

  private close(): void {
    this.source?.close();
    this.source = undefined;
  }

  /** Leaving the page: closes the stream for good. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.close();
    document.removeEventListener('visibilitychange', this.onVisibility);
  }
}
