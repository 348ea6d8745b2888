import './styles.css';
import { ApiError, loadSession, post, rememberToken } from './api.js';
import { renderAccount } from './account-view.js';
import { renderAuth } from './auth-view.js';
import { announce } from './dom.js';
import { leaveMarket, renderMarket } from './market-view.js';

const main = document.getElementById('main')!;
const nav = document.getElementById('nav')!;

/** Bumped by every navigation, so a slower earlier render never overwrites a newer page. */
let generation = 0;

async function route(): Promise<void> {
  const mine = ++generation;
  leaveMarket();
  const session = await loadSession();
  if (mine !== generation) return;
  nav.hidden = !session.signedIn;
  if (!session.signedIn) {
    renderAuth(main, () => navigate('#/account'));
    return;
  }
  const page = location.hash === '#/market' ? 'market' : 'account';
  for (const a of nav.querySelectorAll<HTMLAnchorElement>('a[data-route]')) {
    if (a.dataset.route === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const isCurrent = (): boolean => mine === generation;
  if (page === 'market') await renderMarket(main, isCurrent);
  else await renderAccount(main, isCurrent);
  document.title = `${page === 'market' ? 'Market' : 'Account'} — Quotes dashboard`;
}

/** Goes to a page: through hashchange when the hash changes, directly otherwise (never both). */
function navigate(hash: string): void {
  if (location.hash === hash || (hash === '' && location.hash === '')) run();
  else location.hash = hash;
}

function run(): void {
  route().catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 401) {
      void route();
      return;
    }
    announce(err instanceof Error ? err.message : String(err), true);
  });
}

window.addEventListener('hashchange', () => {
  run();
  main.focus();
});
document.getElementById('signout')!.addEventListener('click', () => {
  post('signout').then(
    () => {
      rememberToken(undefined);
      announce('Signed out.');
      navigate('');
    },
    (err: unknown) => announce((err as Error).message, true),
  );
});
run();
