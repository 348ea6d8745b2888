import './styles.css';
import { ApiError, loadSession, post, rememberToken, setVisitor, watchDataSource } from './api.js';
import { renderAccount } from './account-view.js';
import { renderAuth } from './auth-view.js';
import { leaveCoin, renderCoin } from './coin-view.js';
import { announce, announceNext, newPageStatus } from './dom.js';
import { leaveMarket, renderMarket } from './market-view.js';

const main = document.getElementById('main')!;
const nav = document.getElementById('nav')!;
const notice = document.getElementById('data-notice')!;
const accountLink = document.getElementById('nav-account')!;
const signout = document.getElementById('signout')!;

// Every answer names its market source (X-Data-Source): simulated data is said so on every page.
watchDataSource((source) => {
  notice.hidden = source !== 'simulated';
});

/** Bumped by every navigation, so a slower earlier render never overwrites a newer page. */
let generation = 0;

type Page = { name: 'market' } | { name: 'account' } | { name: 'coin'; symbol: string };

function pageOf(hash: string): Page {
  if (hash === '#/market') return { name: 'market' };
  const m = /^#\/coin\/([A-Za-z0-9]{1,20})$/.exec(hash);
  if (m?.[1] !== undefined) return { name: 'coin', symbol: m[1].toUpperCase() };
  return { name: 'account' };
}

async function route(): Promise<void> {
  const mine = ++generation;
  leaveMarket();
  leaveCoin();
  // Status messages belong to the page that showed them.
  newPageStatus();
  const session = await loadSession();
  if (mine !== generation) return;
  const page = pageOf(location.hash);
  // A public market (QUOTES_PUBLIC_MARKET) shows the market and coin pages to visitors too.
  const visiting = !session.signedIn && session.publicMarket === true && page.name !== 'account';
  setVisitor(visiting);
  nav.hidden = !session.signedIn && session.publicMarket !== true;
  accountLink.textContent = session.signedIn ? 'Account' : 'Sign in';
  signout.hidden = !session.signedIn;
  if (!session.signedIn && !visiting) {
    renderAuth(main, () => navigate('#/account'));
    return;
  }
  const navName = page.name === 'coin' ? 'market' : page.name;
  for (const a of nav.querySelectorAll<HTMLAnchorElement>('a[data-route]')) {
    if (a.dataset.route === navName) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const isCurrent = (): boolean => mine === generation;
  if (page.name === 'market') await renderMarket(main, isCurrent);
  else if (page.name === 'coin') await renderCoin(main, page.symbol, isCurrent);
  else await renderAccount(main, isCurrent);
  document.title = `${page.name === 'market' ? 'Market' : page.name === 'coin' ? page.symbol : 'Account'} — Quotes dashboard`;
}

/** Goes to a page: through hashchange when the hash changes, directly otherwise (never both). */
function navigate(hash: string): void {
  if (location.hash === hash || (hash === '' && location.hash === '')) run();
  else location.hash = hash;
}

function run(): void {
  route().catch((err: unknown) => {
    // Signed out meanwhile (session expired): route again, which shows the sign-in forms.
    if (err instanceof ApiError && err.status === 401) {
      route().catch((again: unknown) => announce(again instanceof Error ? again.message : String(again), true));
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
      announceNext('Signed out.');
      navigate('');
    },
    (err: unknown) => announce((err as Error).message, true),
  );
});
run();
