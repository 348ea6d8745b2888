import { account, isVisitor, marketBoard, type MarketBoard, type MarketCoin, type QuoteCoin } from './api.js';
import { announce, h } from './dom.js';
import { formatCompact, formatPercent, formatPrice } from './format.js';
import { LivePrices } from './live.js';
import { sparkline } from './sparkline.js';

export const CURRENCIES = ['USD', 'BRL', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'DKK', 'NOK', 'SEK'];
const CURRENCY_KEY = 'quotes.currency';

type SortKey = 'rank' | 'name' | 'price' | 'h1' | 'h24' | 'd7' | 'cap' | 'volume';

interface Column {
  key: SortKey;
  label: string;
  /** Hidden on narrow screens (CSS class), so no column is ever cut. */
  wide?: boolean;
  value: (c: MarketCoin) => number | string | null;
}

const change = (c: MarketCoin, k: '1h' | '24h' | '7d'): number | null => c[`price_change_percentage_${k}_in_currency`] ?? (k === '24h' ? c.price_change_percentage_24h : null);

const COLUMNS: readonly Column[] = [
  { key: 'rank', label: '#', value: (c) => c.market_cap_rank ?? Number.MAX_SAFE_INTEGER },
  { key: 'name', label: 'Coin', value: (c) => c.name.toLowerCase() },
  { key: 'price', label: 'Price', value: (c) => c.current_price },
  { key: 'h1', label: '1h', wide: true, value: (c) => change(c, '1h') },
  { key: 'h24', label: '24h', value: (c) => change(c, '24h') },
  { key: 'd7', label: '7d', wide: true, value: (c) => change(c, '7d') },
  { key: 'cap', label: 'Market cap', wide: true, value: (c) => c.market_cap },
  { key: 'volume', label: 'Volume (24h)', wide: true, value: (c) => c.total_volume },
];

export function preferredCurrency(): string {
  const c = localStorage.getItem(CURRENCY_KEY);
  return c !== null && CURRENCIES.includes(c) ? c : 'USD';
}

let live: LivePrices | undefined;
let poll: ReturnType<typeof setInterval> | undefined;

/** Rows per page, as CoinGecko's market table. */
const PAGE_ROWS = 100;
/** How often a visitor's page (no stream) asks for the board again while it is visible. */
const VISITOR_POLL_MS = 5000;

/** Stops the live prices when leaving the page. */
export function leaveMarket(): void {
  live?.stop();
  live = undefined;
  if (poll !== undefined) clearInterval(poll);
  poll = undefined;
}

/** The header above the table: /api/v3/global's totals in the page's currency. */
function globalHeader(board: MarketBoard): HTMLElement {
  const g = board.global;
  const item = (id: string, label: string, value: string, extra?: HTMLElement): HTMLElement => h('div', { class: 'global-item', id }, h('span', { class: 'muted' }, label), h('strong', {}, value), extra);
  const change = h('span', { class: g.marketCapChange24h >= 0 ? 'up' : 'down' }, ` ${formatPercent(g.marketCapChange24h)}`);
  return h(
    'section',
    { class: 'global', id: 'global-header', 'aria-label': 'Market totals' },
    item('global-cap', 'Market cap', `${formatCompact(g.totalMarketCap)} ${board.currency}`, change),
    item('global-volume', '24h volume', `${formatCompact(g.totalVolume)} ${board.currency}`),
    item('global-dominance', 'BTC dominance', g.btcDominance === null ? '—' : `${g.btcDominance.toFixed(1)}%`),
    item('global-coins', 'Coins', String(g.coins)),
  );
}

function pctCell(v: number | null, wide: boolean): HTMLTableCellElement {
  return h('td', { class: `${v === null ? '' : v >= 0 ? 'up' : 'down'}${wide ? ' wide' : ''}` }, formatPercent(v));
}

/**
 * The market page, in CoinGecko's manner: the ranked board (icons, price, 1h/24h/7d change,
 * market cap, volume, 7-day sparkline) with sorting, search and paging, fetched once on the
 * session (one API request of the plan), then kept live by the stream for the coins on screen.
 */
export async function renderMarket(main: HTMLElement, isCurrent: () => boolean = () => true): Promise<void> {
  leaveMarket();
  const visitor = isVisitor();
  if (!visitor) {
    const info = await account();
    if (!isCurrent()) return;
    if (!info.plan.crypto) {
      main.replaceChildren(h('h1', {}, 'Market'), h('p', { class: 'card' }, `Your plan (${info.plan.name}) does not include cryptocurrency data.`));
      return;
    }
  }
  let currency = preferredCurrency();
  // The first board of a fresh server reads a week of hourly candles per coin: say so meanwhile.
  main.replaceChildren(h('h1', {}, 'Market'), h('p', { class: 'card muted', id: 'market-loading', 'aria-live': 'polite' }, 'Loading the market…'));
  let board = await marketBoard(currency);
  if (!isCurrent()) return;
  // The stream follows the rows on screen (the server lets the market page follow a whole page).
  const pageSize = PAGE_ROWS;
  const header = h('div', { id: 'global-wrap' }, globalHeader(board));
  let sortKey: SortKey = 'rank';
  let ascending = true;
  let page = 0;
  let query = '';
  let liveCount = 0;

  const search = h('input', { id: 'market-search', type: 'search', placeholder: 'Name or symbol', autocomplete: 'off' });
  const curSel = h('select', { id: 'market-currency' }, ...CURRENCIES.map((c) => h('option', { value: c, selected: c === currency }, c)));
  const liveState = h('p', { id: 'live-state', class: 'muted', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const headRow = h('tr');
  const table = h('table', { id: 'market', 'data-live-updates': '0' }, h('caption', { class: 'sr-only' }, 'Coins ranked by market cap'), h('thead', {}, headRow), tbody);
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const count = h('p', { id: 'market-count', class: 'muted' });

  const rows = (): MarketCoin[] => {
    const q = query.trim().toLowerCase();
    const list = q === '' ? board.coins : board.coins.filter((c) => c.name.toLowerCase().includes(q) || c.symbol.includes(q) || c.id.includes(q));
    const col = COLUMNS.find((c) => c.key === sortKey)!;
    const sorted = [...list].sort((a, b) => {
      const x = col.value(a);
      const y = col.value(b);
      // Unknown values always last, whichever the direction.
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
      const d = typeof x === 'string' || typeof y === 'string' ? String(x).localeCompare(String(y)) : x - y;
      return ascending ? d : -d;
    });
    return sorted;
  };

  const drawHead = (): void => {
    headRow.replaceChildren(
      ...COLUMNS.map((col) => {
        const active = col.key === sortKey;
        const b = h('button', { type: 'button', class: 'sort', 'data-sort': col.key }, col.label, h('span', { 'aria-hidden': 'true' }, active ? (ascending ? ' ▲' : ' ▼') : ''));
        b.addEventListener('click', () => {
          if (sortKey === col.key) ascending = !ascending;
          else {
            sortKey = col.key;
            // Names read A→Z, ranks 1→n; figures largest first, as CoinGecko.
            ascending = col.key === 'rank' || col.key === 'name';
          }
          page = 0;
          draw();
          headRow.querySelector<HTMLButtonElement>(`button[data-sort="${col.key}"]`)?.focus();
        });
        return h('th', { scope: 'col', class: col.wide === true ? 'wide' : undefined, 'aria-sort': active ? (ascending ? 'ascending' : 'descending') : undefined }, b);
      }),
      h('th', { scope: 'col', class: 'wide spark-col' }, 'Last 7 days'),
    );
  };

  const rowOf = (c: MarketCoin): HTMLTableRowElement => {
    const sym = c.symbol.toUpperCase();
    const link = h('a', { href: `#/coin/${sym}`, class: 'coin' }, h('img', { src: c.image, alt: '', width: '24', height: '24', loading: 'lazy' }), h('span', { class: 'coin-name' }, c.name), h('span', { class: 'sym' }, sym));
    const spark = c.sparkline_in_7d?.price ?? [];
    return h(
      'tr',
      { 'data-coin': sym },
      h('td', { class: 'rank' }, c.market_cap_rank === null ? '—' : String(c.market_cap_rank)),
      h('td', { class: 'name' }, link),
      h('td', { class: 'price' }, formatPrice(c.current_price)),
      pctCell(change(c, '1h'), true),
      pctCell(change(c, '24h'), false),
      pctCell(change(c, '7d'), true),
      h('td', { class: 'wide cap' }, formatCompact(c.market_cap)),
      h('td', { class: 'wide vol' }, formatCompact(c.total_volume)),
      h('td', { class: 'wide spark-col' }, sparkline(spark, `${sym} over the last 7 days`, change(c, '7d'))),
    );
  };

  const draw = (): void => {
    drawHead();
    const list = rows();
    const pages = Math.max(1, Math.ceil(list.length / pageSize));
    page = Math.min(page, pages - 1);
    const shown = list.slice(page * pageSize, (page + 1) * pageSize);
    tbody.replaceChildren(...shown.map(rowOf));
    count.textContent = list.length === 0 ? `No coin matches “${query}”.` : `${list.length} coins · page ${page + 1} of ${pages} · prices in ${currency}`;
    const prev = h('button', { type: 'button', class: 'secondary', id: 'page-prev', disabled: page === 0 }, 'Previous');
    const next = h('button', { type: 'button', class: 'secondary', id: 'page-next', disabled: page >= pages - 1 }, 'Next');
    prev.addEventListener('click', () => {
      page--;
      draw();
    });
    next.addEventListener('click', () => {
      page++;
      draw();
    });
    pager.replaceChildren(prev, h('span', { class: 'muted' }, `${page + 1} / ${pages}`), next);
    live?.follow(shown.map((c) => c.symbol.toUpperCase()), currency);
  };

  const applyQuotes = (coins: QuoteCoin[]): void => {
    for (const q of coins) {
      const c = board.coins.find((x) => x.symbol.toUpperCase() === q.coin);
      if (c === undefined) continue;
      c.current_price = q.regularMarketPrice;
      c.price_change_percentage_24h = q.regularMarketChangePercent;
      c.price_change_percentage_24h_in_currency = q.regularMarketChangePercent;
      if (q.marketCap > 0) c.market_cap = q.marketCap;
      c.total_volume = q.regularMarketVolume;
      const tr = tbody.querySelector<HTMLTableRowElement>(`tr[data-coin="${q.coin}"]`);
      if (tr === null) continue;
      const fresh = rowOf(c);
      // Only a changed price flashes (the stream's first event repeats what the page shows).
      if (tr.querySelector('td.price')?.textContent !== fresh.querySelector('td.price')?.textContent) fresh.classList.add('flash');
      tr.replaceWith(fresh);
    }
    liveCount++;
    table.dataset.liveUpdates = String(liveCount);
  };

  /** A fresh board (a visitor's poll): rows whose price moved are redrawn and flash. */
  const applyBoard = (next: MarketBoard): void => {
    const before = new Map(board.coins.map((c) => [c.id, c.current_price]));
    board = next;
    header.replaceChildren(globalHeader(board));
    for (const c of board.coins) {
      const tr = tbody.querySelector<HTMLTableRowElement>(`tr[data-coin="${c.symbol.toUpperCase()}"]`);
      if (tr === null) continue;
      const fresh = rowOf(c);
      if (before.get(c.id) !== c.current_price) fresh.classList.add('flash');
      tr.replaceWith(fresh);
    }
    liveCount++;
    table.dataset.liveUpdates = String(liveCount);
  };

  if (visitor) {
    liveState.textContent = 'Live: the table refreshes every few seconds while this tab is visible.';
    liveState.dataset.state = 'live';
    poll = setInterval(() => {
      if (document.hidden) return;
      marketBoard(currency).then(
        (b) => {
          if (isCurrent() && b.currency === currency) applyBoard(b);
        },
        () => undefined,
      );
    }, VISITOR_POLL_MS);
  } else {
    live = new LivePrices(applyQuotes, (state, detail) => {
      liveState.textContent =
        state === 'live' ? 'Live: prices update as the market moves.' : state === 'paused' ? 'Paused while this tab is hidden.' : state === 'reconnecting' ? 'Reconnecting…' : (detail ?? 'Live prices stopped.');
      liveState.dataset.state = state;
    });
  }

  search.addEventListener('input', () => {
    query = search.value;
    page = 0;
    draw();
  });
  curSel.addEventListener('change', () => {
    const next = curSel.value;
    localStorage.setItem(CURRENCY_KEY, next);
    marketBoard(next).then(
      (b) => {
        currency = next;
        board = b;
        header.replaceChildren(globalHeader(board));
        draw();
      },
      (err: unknown) => announce(err instanceof Error ? err.message : String(err), true),
    );
  });

  main.replaceChildren(
    h('h1', {}, 'Market'),
    header,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'board-title' },
      h('h2', { id: 'board-title', class: 'sr-only' }, 'Coins'),
      h('div', { class: 'toolbar' }, h('div', {}, h('label', { for: 'market-search' }, 'Search'), search), h('div', {}, h('label', { for: 'market-currency' }, 'Currency'), curSel)),
      liveState,
      h('div', { class: 'table-wrap' }, table),
      h('div', { class: 'under' }, count, pager),
    ),
  );
  draw();
}
