import { account, post, rememberToken, storedToken, type AccountInfo } from './api.js';
import { announce, copyText, h } from './dom.js';
import { formatInteger } from './format.js';

function copyButton(id: string, label: string, text: () => string, what: string): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'secondary copy', id }, label);
  b.addEventListener('click', () => {
    copyText(text()).then(
      () => announce(`${what} copied to the clipboard.`),
      (err: unknown) => announce(err instanceof Error ? err.message : String(err), true),
    );
  });
  return b;
}

function tokenCard(info: AccountInfo, fresh: string | undefined, rerender: () => void): HTMLElement {
  const card = h('section', { class: 'card', 'aria-labelledby': 'token-title' }, h('h2', { id: 'token-title' }, 'API token'));
  if (fresh !== undefined) {
    card.append(
      h('p', {}, 'Your new token. It is shown only this once: copy it now.'),
      h('p', { class: 'token', id: 'new-token', tabindex: '0', 'aria-label': 'New API token' }, fresh),
      copyButton('copy-token', 'Copy token', () => fresh, 'Token'),
    );
  }
  if (info.token !== null) {
    card.append(h('p', {}, 'Current token: ', h('code', { id: 'token-prefix' }, `${info.token.prefix}…`), ` (created ${new Date(info.token.createdAt).toLocaleString()})`));
  }
  card.append(h('p', {}, 'Plan: ', h('strong', { id: 'plan-name' }, info.plan.name), ` (${info.plan.id}) · ${formatInteger(info.plan.monthlyRequests)} requests a month, up to ${info.plan.maxCoinsPerRequest} coins per request`));
  const rotate = h('button', { type: 'button', class: 'secondary', id: 'rotate' }, 'Rotate token');
  rotate.addEventListener('click', () => {
    if (!window.confirm('Rotate the token? The current one stops working immediately.')) return;
    post<{ token: string }>('token/rotate').then(
      (res) => {
        rememberToken(res.token);
        sessionStorage.setItem('quotes.newToken', res.token);
        rerender();
        announce('Token rotated. The old token no longer works.');
      },
      (err: unknown) => announce((err as Error).message, true),
    );
  });
  card.append(h('p', { class: 'muted' }, 'This dashboard uses your session, not the token: signing in elsewhere never needs a rotation.'), rotate);
  return card;
}

/** curl, JavaScript and Python examples against this server, with the token when this tab knows it. */
function snippetsCard(token: string | undefined): HTMLElement {
  const base = window.location.origin;
  const tok = token ?? 'YOUR_TOKEN';
  const snippets: Array<[string, string, string]> = [
    ['curl', 'curl', `curl -H "Authorization: Bearer ${tok}" \\\n  "${base}/api/v2/crypto?coin=BTC,ETH&currency=BRL"\n\n# live prices (Server-Sent Events)\ncurl -N "${base}/api/v2/crypto/stream?coin=BTC&currency=USD&token=${tok}"`],
    [
      'js',
      'JavaScript',
      `const res = await fetch("${base}/api/v2/crypto?coin=BTC,ETH&currency=BRL", {\n  headers: { Authorization: "Bearer ${tok}" },\n});\nconst { coins } = await res.json();\nconsole.log(coins[0].regularMarketPrice);\n\n// live prices\nconst es = new EventSource("${base}/api/v2/crypto/stream?coin=BTC&currency=USD&token=${tok}");\nes.addEventListener("quote", (e) => console.log(JSON.parse(e.data).coins));`,
    ],
    ['python', 'Python', `import requests\n\nres = requests.get(\n    "${base}/api/v2/crypto",\n    params={"coin": "BTC,ETH", "currency": "BRL"},\n    headers={"Authorization": "Bearer ${tok}"},\n    timeout=10,\n)\nres.raise_for_status()\nprint(res.json()["coins"][0]["regularMarketPrice"])`],
  ];
  const card = h(
    'section',
    { class: 'card', 'aria-labelledby': 'code-title' },
    h('h2', { id: 'code-title' }, 'Use the API'),
    h('p', { class: 'muted' }, token === undefined ? 'Replace YOUR_TOKEN with your token (rotate it to see a new one).' : 'With the token shown in this tab.'),
  );
  for (const [id, label, code] of snippets) {
    card.append(
      h('div', { class: 'snippet-head' }, h('h3', { id: `snippet-${id}-title` }, label), copyButton(`copy-${id}`, `Copy ${label}`, () => code, `${label} example`)),
      h('pre', { class: 'snippet', id: `snippet-${id}`, tabindex: '0', 'aria-labelledby': `snippet-${id}-title` }, h('code', {}, code)),
    );
  }
  return card;
}

const SVG = 'http://www.w3.org/2000/svg';
function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string>, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * Requests per day as an SVG bar chart with a labelled axis: at zero it says so instead of
 * drawing nothing, and the largest day sets the scale, so a month near the quota stays readable.
 */
function dailyChart(daily: ReadonlyArray<{ day: string; count: number }>): Element {
  const max = Math.max(0, ...daily.map((d) => d.count));
  // Narrow screens get a narrower drawing, so its labels keep a readable size.
  const w = window.innerWidth < 600 ? 340 : 600;
  const hgt = 160;
  const left = 48;
  const bottom = 20;
  const chart = svg('svg', { viewBox: `0 0 ${w} ${hgt}`, class: 'usage-chart', role: 'img', 'aria-label': max === 0 ? 'No requests yet this month' : `Requests per day, up to ${max} on the busiest day` });
  const plotH = hgt - bottom - 8;
  chart.append(svg('line', { x1: String(left), y1: String(hgt - bottom), x2: String(w), y2: String(hgt - bottom), class: 'axis' }));
  chart.append(svg('text', { x: String(left - 6), y: String(hgt - bottom), 'text-anchor': 'end', class: 'tick' }, '0'));
  if (max === 0) {
    chart.append(svg('text', { x: String((w + left) / 2), y: String(hgt / 2), 'text-anchor': 'middle', class: 'empty' }, 'No requests yet this month'));
    return chart;
  }
  chart.append(svg('text', { x: String(left - 6), y: '16', 'text-anchor': 'end', class: 'tick' }, formatInteger(max)));
  chart.append(svg('line', { x1: String(left), y1: '12', x2: String(w), y2: '12', class: 'grid' }));
  const slot = (w - left) / Math.max(1, daily.length);
  daily.forEach((d, i) => {
    const barH = (d.count / max) * plotH;
    const bar = svg('rect', { x: String(left + i * slot + 1), y: String(hgt - bottom - barH), width: String(Math.max(1, slot - 2)), height: String(barH), class: 'bar' });
    bar.append(svg('title', {}, `${d.day}: ${formatInteger(d.count)}`));
    chart.append(bar);
  });
  const first = daily[0];
  const last = daily[daily.length - 1];
  if (first !== undefined) chart.append(svg('text', { x: String(left), y: String(hgt - 4), class: 'tick' }, first.day.slice(5)));
  if (last !== undefined && daily.length > 1) chart.append(svg('text', { x: String(w), y: String(hgt - 4), 'text-anchor': 'end', class: 'tick' }, last.day.slice(5)));
  return chart;
}

function usageCard(info: AccountInfo): HTMLElement {
  const u = info.usage;
  const pct = u.limit > 0 ? Math.min(100, (u.count / u.limit) * 100) : 100;
  const meterFill = h('span');
  meterFill.style.width = `${pct}%`;
  const level = pct >= 100 ? 'full' : pct >= 80 ? 'high' : 'ok';
  const recent = u.daily.slice(-7).reverse();
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'usage-title' },
    h('h2', { id: 'usage-title' }, `Usage in ${u.month}`),
    h('p', { id: 'usage-count' }, `${formatInteger(u.count)} of ${formatInteger(u.limit)} requests (${formatInteger(u.remaining)} left, resets ${new Date(u.resetAt).toUTCString()})`),
    h(
      'div',
      { class: `meter ${level}`, role: 'meter', 'aria-label': 'Monthly quota used', 'aria-valuemin': '0', 'aria-valuemax': String(u.limit), 'aria-valuenow': String(u.count), 'aria-valuetext': `${pct.toFixed(pct > 0 && pct < 1 ? 2 : 0)} % used` },
      meterFill,
    ),
    h('p', { class: `meter-label ${level}` }, pct >= 100 ? 'Quota used up: requests are refused until the reset.' : `${pct.toFixed(pct > 0 && pct < 1 ? 2 : 0)} % used`),
    h('h3', {}, 'Requests per day (UTC)'),
    dailyChart(u.daily),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'daily' },
        h('caption', { class: 'sr-only' }, 'Requests per day, most recent first'),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day (UTC)'), h('th', { scope: 'col' }, 'Requests'))),
        h('tbody', {}, ...recent.map((d) => h('tr', {}, h('td', {}, d.day), h('td', {}, String(d.count))))),
      ),
    ),
  );
}

export async function renderAccount(main: HTMLElement, isCurrent: () => boolean = () => true): Promise<void> {
  const info = await account();
  if (!isCurrent()) return;
  const fresh = sessionStorage.getItem('quotes.newToken') ?? undefined;
  sessionStorage.removeItem('quotes.newToken');
  const rerender = (): void => void renderAccount(main).catch((err: unknown) => announce((err as Error).message, true));
  main.replaceChildren(h('h1', {}, `Account: ${info.email}`), h('div', { class: 'grid' }, tokenCard(info, fresh, rerender), usageCard(info)), snippetsCard(fresh ?? storedToken()));
}
