import { CandlestickSeries, createChart, HistogramSeries, type IChartApi, type UTCTimestamp } from 'lightweight-charts';
import { account, coinHistory, isVisitor, marketBoard, type QuoteCoin } from './api.js';
import { announce, cssVar, h } from './dom.js';
import { formatCompact, formatPercent, formatPrice, pricePrecision } from './format.js';
import { LivePrices } from './live.js';
import { CURRENCIES, preferredCurrency } from './market-view.js';

/** The interval drawn for a range unless the user picks one: about 30–400 candles. */
const AUTO_INTERVAL: Readonly<Record<string, string>> = {
  '1d': '15m',
  '5d': '1h',
  '1mo': '1d',
  '3mo': '1d',
  '6mo': '1d',
  '1y': '1d',
  ytd: '1d',
  '2y': '1wk',
  '5y': '1wk',
  '10y': '1mo',
  max: '1mo',
};

let chart: IChartApi | undefined;
let live: LivePrices | undefined;
let poll: ReturnType<typeof setInterval> | undefined;

export function leaveCoin(): void {
  chart?.remove();
  chart = undefined;
  live?.stop();
  live = undefined;
  if (poll !== undefined) clearInterval(poll);
  poll = undefined;
}

/**
 * A coin's page: price and 24 h change (live), a candlestick chart with volume, and a range /
 * interval picker that always shows what the chart draws: the range and interval the server
 * actually used (a plan's intraday caps can shorten a range) are written back into the picker
 * and the note under it.
 */
export async function renderCoin(main: HTMLElement, symbol: string, isCurrent: () => boolean = () => true): Promise<void> {
  leaveCoin();
  const visitor = isVisitor();
  // A visitor (public market) learns the ranges and intervals from the first answer.
  let plan: { ranges: string[]; intervals: string[] } = visitor ? { ranges: ['1mo'], intervals: [] } : (await account()).plan;
  if (!isCurrent()) return;
  const currency = preferredCurrency();
  let ranges = plan.ranges.length > 0 ? plan.ranges : ['1mo'];
  let range = ranges.includes('1mo') ? '1mo' : ranges[0]!;
  let interval: string | undefined;

  const title = h('h1', { id: 'coin-title' }, symbol);
  const price = h('p', { class: 'big-price', id: 'coin-price', 'aria-live': 'polite' }, '…');
  const stats = h('dl', { class: 'stats' });
  const rangeGroup = h('div', { class: 'ranges', role: 'group', 'aria-label': 'Range' });
  const ivSel = h('select', { id: 'coin-interval' }, h('option', { value: '' }, 'Auto'), ...plan.intervals.map((iv) => h('option', { value: iv }, iv)));
  const note = h('p', { id: 'chart-note', class: 'muted', 'aria-live': 'polite' });
  const chartBox = h('div', { id: 'chart', role: 'img', 'aria-label': 'Candlestick chart' });

  const drawRanges = (): void => {
    rangeGroup.replaceChildren(
      ...ranges.map((r) => {
        const b = h('button', { type: 'button', class: 'range', 'data-range': r, 'aria-pressed': r === range ? 'true' : 'false' }, r);
        b.addEventListener('click', () => {
          range = r;
          void load().catch(report);
        });
        return b;
      }),
    );
  };

  const showQuote = (c: QuoteCoin): void => {
    title.replaceChildren(h('img', { src: c.coinImageUrl, alt: '', width: '32', height: '32' }), ` ${c.coinName} `, h('span', { class: 'sym' }, c.coin));
    price.replaceChildren(`${formatPrice(c.regularMarketPrice)} ${c.currency} `, h('span', { class: c.regularMarketChangePercent >= 0 ? 'up' : 'down' }, `${formatPercent(c.regularMarketChangePercent)} (24h)`));
    price.dataset.price = String(c.regularMarketPrice);
    const item = (k: string, v: string): HTMLElement[] => [h('div', {}, h('dt', {}, k), h('dd', {}, v))];
    stats.replaceChildren(
      ...item('24h high', formatPrice(c.regularMarketDayHigh)),
      ...item('24h low', formatPrice(c.regularMarketDayLow)),
      ...item('Volume (24h)', formatCompact(c.regularMarketVolume)),
      ...item('Market cap', formatCompact(c.marketCap)),
    );
  };

  main.replaceChildren(
    h('p', {}, h('a', { href: '#/market' }, '← Market')),
    title,
    price,
    stats,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'chart-title' },
      h('h2', { id: 'chart-title' }, 'Chart'),
      h('div', { class: 'toolbar' }, rangeGroup, h('div', {}, h('label', { for: 'coin-interval' }, 'Interval'), ivSel)),
      note,
      chartBox,
    ),
  );
  drawRanges();

  const up = cssVar('--ok');
  const down = cssVar('--danger');
  chart = createChart(chartBox, {
    autoSize: true,
    layout: { attributionLogo: false, background: { color: cssVar('--card') }, textColor: cssVar('--fg') },
    grid: { vertLines: { color: cssVar('--grid') }, horzLines: { color: cssVar('--grid') } },
    timeScale: { timeVisible: true },
  });
  const candles = chart.addSeries(CandlestickSeries, { upColor: up, downColor: down, wickUpColor: up, wickDownColor: down, borderVisible: false });
  // Volume bars sit under the candles on their own hidden scale: no value label or price line of
  // theirs on the price axis, where they covered the price labels.
  const volume = chart.addSeries(HistogramSeries, { priceScaleId: 'volume', priceFormat: { type: 'volume' }, color: cssVar('--muted'), lastValueVisible: false, priceLineVisible: false });
  chart.priceScale('volume').applyOptions({ scaleMargins: { top: 0.8, bottom: 0 } });
  candles.priceScale().applyOptions({ scaleMargins: { top: 0.05, bottom: 0.25 } });

  const report = (err: unknown): void => announce(err instanceof Error ? err.message : String(err), true);

  const load = async (): Promise<void> => {
    const wanted = interval ?? AUTO_INTERVAL[range];
    const iv = wanted !== undefined && plan.intervals.includes(wanted) ? wanted : undefined;
    const res = await coinHistory(symbol, currency, range, iv);
    if (!isCurrent()) return;
    if (visitor && (res.plan.ranges.join() !== plan.ranges.join() || res.plan.intervals.join() !== plan.intervals.join())) {
      plan = res.plan;
      ranges = plan.ranges.length > 0 ? plan.ranges : ['1mo'];
      ivSel.replaceChildren(h('option', { value: '' }, 'Auto'), ...plan.intervals.map((x) => h('option', { value: x }, x)));
    }
    const c = res.coin;
    showQuote(c);
    const points = (c.historicalDataPrice ?? []).filter((p) => p.open !== null && p.high !== null && p.low !== null && p.close !== null);
    const lows = points.map((p) => p.low!).filter((x) => x > 0);
    const precision = pricePrecision(lows.length > 0 ? Math.min(...lows) : c.regularMarketPrice);
    // The price axis reads like the price above it (64,123.45; 0.00001789), not as bare digits.
    candles.applyOptions({ priceFormat: { type: 'custom', minMove: 10 ** -precision, formatter: (x: number) => formatPrice(x) } });
    candles.setData(points.map((p) => ({ time: p.date as UTCTimestamp, open: p.open!, high: p.high!, low: p.low!, close: p.close! })));
    volume.setData(points.map((p) => ({ time: p.date as UTCTimestamp, value: p.volume ?? 0, color: (p.close ?? 0) >= (p.open ?? 0) ? `${up}66` : `${down}66` })));
    chart?.timeScale().fitContent();
    // The picker shows what is drawn: the range and interval the server used.
    const requested = range;
    const usedRange = c.usedRange ?? range;
    const usedInterval = c.usedInterval ?? iv ?? '1d';
    if (ranges.includes(usedRange)) range = usedRange;
    drawRanges();
    ivSel.value = interval === undefined ? '' : usedInterval;
    const shortened = usedRange !== requested ? ` (${requested} is longer than ${usedInterval} candles allow)` : '';
    note.textContent = `${c.coin}/${currency}: range ${usedRange}${shortened}, ${points.length} candles of ${usedInterval}${interval === undefined ? ' (interval chosen for the range)' : ''}.`;
    chartBox.setAttribute('aria-label', `Candlestick chart of ${note.textContent}`);
    chartBox.dataset.candles = String(points.length);
    chartBox.dataset.range = usedRange;
    chartBox.dataset.interval = usedInterval;
    chartBox.dataset.precision = String(precision);
  };

  ivSel.addEventListener('change', () => {
    interval = ivSel.value === '' ? undefined : ivSel.value;
    void load().catch(report);
  });
  await load();
  if (!isCurrent()) return;
  if (visitor) {
    // No stream for visitors: the public board (built once per snapshot) gives the live price.
    poll = setInterval(() => {
      if (document.hidden) return;
      marketBoard(currency).then(
        (b) => {
          const row = b.coins.find((x) => x.symbol.toUpperCase() === symbol);
          const shown = Number(price.dataset.price);
          if (!isCurrent() || row === undefined || row.current_price === shown) return;
          price.dataset.price = String(row.current_price);
          price.replaceChildren(`${formatPrice(row.current_price)} ${currency} `, h('span', { class: (row.price_change_percentage_24h ?? 0) >= 0 ? 'up' : 'down' }, `${formatPercent(row.price_change_percentage_24h)} (24h)`));
        },
        () => undefined,
      );
    }, 5000);
    return;
  }
  live = new LivePrices(
    (coins) => {
      const c = coins.find((x) => x.coin === symbol);
      if (c !== undefined) showQuote(c);
    },
    () => undefined,
  );
  live.follow([symbol], currency);
  if (!CURRENCIES.includes(currency)) announce(`Unknown currency ${currency}`, true);
}
