import { CandlestickSeries, createChart, type IChartApi, type ISeriesApi, type UTCTimestamp } from 'lightweight-charts';
import { account, ApiError, publicApi, rememberToken, storedToken, type AccountInfo } from './api.js';
import { announce, formatNumber, h } from './dom.js';

const CURRENCIES = ['BRL', 'USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'DKK', 'NOK', 'SEK'];
const DEFAULT_COINS = ['BTC', 'ETH', 'SOL'];
const REFRESH_MS = 15_000;

interface Coin {
  coin: string;
  coinName: string;
  currency: string;
  regularMarketPrice: number;
  regularMarketChangePercent: number;
  regularMarketDayHigh: number;
  regularMarketDayLow: number;
  regularMarketVolume: number;
  regularMarketTime: string;
  historicalDataPrice?: Array<{ date: number; open: number | null; high: number | null; low: number | null; close: number | null }>;
  usedRange?: string;
  usedInterval?: string;
}

let refreshTimer: number | undefined;
let chart: IChartApi | undefined;

/** Stops the auto-refresh and frees the chart when leaving the page. */
export function leaveMarket(): void {
  if (refreshTimer !== undefined) window.clearInterval(refreshTimer);
  refreshTimer = undefined;
  chart?.remove();
  chart = undefined;
}

function select(id: string, label: string, values: readonly string[], selected: string): [HTMLLabelElement, HTMLSelectElement] {
  const s = h('select', { id, name: id }, ...values.map((v) => h('option', { value: v, selected: v === selected }, v)));
  return [h('label', { for: id }, label), s];
}

function tokenForm(main: HTMLElement, onToken: () => void): void {
  const f = h(
    'form',
    { class: 'card', 'aria-labelledby': 'tok-title' },
    h('h2', { id: 'tok-title' }, 'API token needed'),
    h('p', {}, 'The market page calls the public API with your token. Paste it here (kept only in this tab), or rotate it on the Account page to get a new one.'),
    h('label', { for: 'market-token' }, 'API token'),
    h('input', { id: 'market-token', type: 'password', autocomplete: 'off', required: true }),
    h('button', { type: 'submit' }, 'Use token'),
  );
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = (f.querySelector('#market-token') as HTMLInputElement).value.trim();
    if (v !== '') {
      rememberToken(v);
      onToken();
    }
  });
  main.replaceChildren(h('h1', {}, 'Market'), f);
}

export async function renderMarket(main: HTMLElement, isCurrent: () => boolean = () => true): Promise<void> {
  leaveMarket();
  const token = storedToken();
  if (token === undefined) {
    tokenForm(main, () => void renderMarket(main, isCurrent));
    return;
  }
  const info: AccountInfo = await account();
  const plan = info.plan;
  if (!plan.crypto) {
    main.replaceChildren(h('h1', {}, 'Market'), h('p', { class: 'card' }, `Your plan (${plan.name}) does not include cryptocurrency data.`));
    return;
  }
  let available: string[];
  try {
    available = (await publicApi<{ coins: string[] }>('/api/v2/crypto/available', token)).coins;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      rememberToken(undefined);
      announce('That token is no longer valid; paste the current one.', true);
      tokenForm(main, () => void renderMarket(main));
      return;
    }
    throw err;
  }
  if (!isCurrent()) return;
  const picked = new Set(DEFAULT_COINS.filter((c) => available.includes(c)));
  const coinBoxes = h(
    'fieldset',
    {},
    h('legend', {}, `Coins (up to ${plan.maxCoinsPerRequest})`),
    h('div', { class: 'coins' }, ...available.map((c) => {
      const box = h('input', { type: 'checkbox', id: `coin-${c}`, value: c, checked: picked.has(c) });
      return h('label', { for: `coin-${c}` }, box, c);
    })),
  );
  const [curLabel, curSel] = select('currency', 'Currency', CURRENCIES, 'USD');
  const ranges = plan.ranges.length > 0 ? plan.ranges : ['1mo'];
  const intervals = plan.intervals.length > 0 ? plan.intervals : ['1d'];
  const [rangeLabel, rangeSel] = select('range', 'Range', ranges, ranges.includes('1mo') ? '1mo' : ranges[0]!);
  const [ivLabel, ivSel] = select('interval', 'Interval', intervals, intervals.includes('1d') ? '1d' : intervals[0]!);
  const [chartCoinLabel, chartCoinSel] = select('chart-coin', 'Chart coin', [...picked], [...picked][0] ?? '');
  const updated = h('p', { id: 'quotes-updated', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const table = h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { id: 'quotes' },
      h('caption', { class: 'sr-only' }, 'Live quotes'),
      h('thead', {}, h('tr', {}, ...['Coin', 'Price', '24h %', 'High', 'Low', 'Volume'].map((t) => h('th', { scope: 'col' }, t)))),
      tbody,
    ),
  );
  const chartBox = h('div', { id: 'chart', role: 'img', 'aria-label': 'Candlestick chart' });
  const chartNote = h('p', { id: 'chart-note', 'aria-live': 'polite' });
  main.replaceChildren(
    h('h1', {}, 'Market'),
    h('section', { class: 'card', 'aria-labelledby': 'pick-title' }, h('h2', { id: 'pick-title' }, 'Selection'), coinBoxes, h('div', { class: 'row' }, h('div', {}, curLabel, curSel))),
    h('section', { class: 'card', 'aria-labelledby': 'quotes-title' }, h('h2', { id: 'quotes-title' }, 'Live quotes'), updated, table),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'chart-title' },
      h('h2', { id: 'chart-title' }, 'Chart'),
      h('div', { class: 'row' }, h('div', {}, chartCoinLabel, chartCoinSel), h('div', {}, rangeLabel, rangeSel), h('div', {}, ivLabel, ivSel)),
      chartNote,
      chartBox,
    ),
  );

  chart = createChart(chartBox, { autoSize: true, layout: { attributionLogo: false }, timeScale: { timeVisible: true } });
  const series: ISeriesApi<'Candlestick'> = chart.addSeries(CandlestickSeries, { upColor: '#047857', downColor: '#b91c1c', wickUpColor: '#047857', wickDownColor: '#b91c1c', borderVisible: false });

  const selectedCoins = (): string[] => [...coinBoxes.querySelectorAll<HTMLInputElement>('input:checked')].map((b) => b.value);

  const refreshQuotes = async (): Promise<void> => {
    const coins = selectedCoins().slice(0, plan.maxCoinsPerRequest);
    if (coins.length === 0) {
      tbody.replaceChildren();
      updated.textContent = 'Pick at least one coin.';
      return;
    }
    const res = await publicApi<{ coins: Coin[] }>(`/api/v2/crypto?coin=${coins.join(',')}&currency=${curSel.value}`, token);
    tbody.replaceChildren(
      ...res.coins.map((c) =>
        h(
          'tr',
          {},
          h('td', {}, h('strong', {}, c.coin), ` ${c.coinName}`),
          h('td', {}, `${formatNumber(c.regularMarketPrice, 4)} ${c.currency}`),
          h('td', { class: c.regularMarketChangePercent >= 0 ? 'up' : 'down' }, `${formatNumber(c.regularMarketChangePercent)}%`),
          h('td', {}, formatNumber(c.regularMarketDayHigh, 4)),
          h('td', {}, formatNumber(c.regularMarketDayLow, 4)),
          h('td', {}, formatNumber(c.regularMarketVolume, 0)),
        ),
      ),
    );
    updated.textContent = `Updated ${new Date().toLocaleTimeString()} (refreshes every ${REFRESH_MS / 1000} s).`;
  };

  const refreshChart = async (): Promise<void> => {
    const coin = chartCoinSel.value;
    if (coin === '') return;
    const res = await publicApi<{ coins: Coin[] }>(`/api/v2/crypto?coin=${coin}&currency=${curSel.value}&range=${rangeSel.value}&interval=${ivSel.value}`, token);
    const c = res.coins[0];
    const points = (c?.historicalDataPrice ?? []).filter((p) => p.open !== null && p.high !== null && p.low !== null && p.close !== null);
    series.setData(points.map((p) => ({ time: p.date as UTCTimestamp, open: p.open!, high: p.high!, low: p.low!, close: p.close! })));
    chart?.timeScale().fitContent();
    const note = `${coin}/${curSel.value}: ${points.length} candles, range ${c?.usedRange ?? rangeSel.value}, interval ${c?.usedInterval ?? ivSel.value}.`;
    chartNote.textContent = note;
    chartBox.setAttribute('aria-label', `Candlestick chart of ${note}`);
    chartBox.dataset.candles = String(points.length);
  };

  const report = (err: unknown): void => announce(err instanceof Error ? err.message : String(err), true);
  const syncChartCoins = (): void => {
    const coins = selectedCoins();
    const current = chartCoinSel.value;
    chartCoinSel.replaceChildren(...coins.map((c) => h('option', { value: c, selected: c === current }, c)));
  };
  coinBoxes.addEventListener('change', (ev) => {
    const box = ev.target as HTMLInputElement;
    if (box.checked && selectedCoins().length > plan.maxCoinsPerRequest) {
      box.checked = false;
      announce(`Your plan allows up to ${plan.maxCoinsPerRequest} coins per request.`, true);
      return;
    }
    syncChartCoins();
    void refreshQuotes().catch(report);
    void refreshChart().catch(report);
  });
  curSel.addEventListener('change', () => {
    void refreshQuotes().catch(report);
    void refreshChart().catch(report);
  });
  for (const s of [rangeSel, ivSel, chartCoinSel]) s.addEventListener('change', () => void refreshChart().catch(report));
  await Promise.all([refreshQuotes(), refreshChart()]);
  refreshTimer = window.setInterval(() => void refreshQuotes().catch(report), REFRESH_MS);
}
