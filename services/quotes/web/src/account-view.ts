import { account, post, rememberToken, type AccountInfo } from './api.js';
import { announce, formatNumber, h } from './dom.js';

function tokenCard(info: AccountInfo, fresh: string | undefined, rerender: () => void): HTMLElement {
  const card = h('section', { class: 'card', 'aria-labelledby': 'token-title' }, h('h2', { id: 'token-title' }, 'API token'));
  if (fresh !== undefined) {
    card.append(
      h('p', {}, 'Your new token. It is shown only this once: copy it now.'),
      h('p', { class: 'token', id: 'new-token', tabindex: '0', 'aria-label': 'New API token' }, fresh),
    );
  }
  if (info.token !== null) {
    card.append(h('p', {}, 'Current token: ', h('code', { id: 'token-prefix' }, `${info.token.prefix}…`), ` (created ${new Date(info.token.createdAt).toLocaleString()})`));
  }
  card.append(h('p', {}, 'Plan: ', h('strong', { id: 'plan-name' }, info.plan.name), ` (${info.plan.id})`));
  const rotate = h('button', { type: 'button', class: 'secondary', id: 'rotate' }, 'Rotate token');
  rotate.addEventListener('click', () => {
    if (!window.confirm('Rotate the token? The current one stops working immediately.')) return;
    post<{ token: string }>('token/rotate').then(
      (res) => {
        rememberToken(res.token);
        sessionStorage.setItem('quotes.newToken', res.token);
        announce('Token rotated. The old token no longer works.');
        rerender();
      },
      (err: unknown) => announce((err as Error).message, true),
    );
  });
  card.append(rotate);
  return card;
}

function usageCard(info: AccountInfo): HTMLElement {
  const u = info.usage;
  const pct = u.limit > 0 ? Math.min(100, (u.count / u.limit) * 100) : 100;
  const max = Math.max(1, ...u.daily.map((d) => d.count));
  const bars = h('div', { class: 'bars', 'aria-hidden': 'true' }, ...u.daily.map((d) => {
    const bar = h('span', { title: `${d.day}: ${d.count}` });
    bar.style.height = `${(d.count / max) * 100}%`;
    return bar;
  }));
  const meterFill = h('span');
  meterFill.style.width = `${pct}%`;
  const recent = u.daily.slice(-7).reverse();
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'usage-title' },
    h('h2', { id: 'usage-title' }, `Usage in ${u.month}`),
    h('p', { id: 'usage-count' }, `${formatNumber(u.count, 0)} of ${formatNumber(u.limit, 0)} requests (${formatNumber(u.remaining, 0)} left, resets ${new Date(u.resetAt).toUTCString()})`),
    h('div', { class: 'meter', role: 'meter', 'aria-label': 'Monthly quota used', 'aria-valuemin': '0', 'aria-valuemax': String(u.limit), 'aria-valuenow': String(u.count) }, meterFill),
    h('h3', {}, 'Requests per day'),
    bars,
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
  main.replaceChildren(h('h1', {}, `Account: ${info.email}`), h('div', { class: 'grid' }, tokenCard(info, fresh, rerender), usageCard(info)));
}
