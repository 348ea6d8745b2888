import { ApiError, post, rememberToken } from './api.js';
import { announceNext, h } from './dom.js';

/** Sign-in and sign-up forms; `onDone` runs once a session exists. */
export function renderAuth(main: HTMLElement, onDone: () => void): void {
  const form = (kind: 'signin' | 'signup'): HTMLFormElement => {
    const id = (x: string): string => `${kind}-${x}`;
    const f = h(
      'form',
      { class: 'card', 'aria-labelledby': id('title'), novalidate: true },
      h('h2', { id: id('title') }, kind === 'signin' ? 'Sign in' : 'Create an account'),
      h('label', { for: id('email') }, 'Email'),
      h('input', { id: id('email'), name: 'email', type: 'email', autocomplete: 'email', required: true }),
      h('label', { for: id('password') }, 'Password'),
      h('input', {
        id: id('password'),
        name: 'password',
        type: 'password',
        autocomplete: kind === 'signin' ? 'current-password' : 'new-password',
        required: true,
        minlength: kind === 'signup' ? '10' : undefined,
        'aria-describedby': kind === 'signup' ? id('hint') : undefined,
      }),
      kind === 'signup' ? h('p', { id: id('hint'), class: 'hint' }, 'At least 10 characters.') : null,
      h('p', { id: id('error'), class: 'error', role: 'alert' }),
      h('button', { type: 'submit' }, kind === 'signin' ? 'Sign in' : 'Sign up'),
    );
    f.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const data = new FormData(f);
      const errorEl = f.querySelector<HTMLElement>(`#${id('error')}`)!;
      errorEl.textContent = '';
      const body = { email: String(data.get('email') ?? ''), password: String(data.get('password') ?? '') };
      // Sign-up answers alike for new and taken emails (no enumeration); signing in then gives
      // the session, and on an account's first sign-in its API token.
      const send = kind === 'signup' ? post('signup', body).then(() => post<{ token?: string }>('signin', body)) : post<{ token?: string }>('signin', body);
      send.then(
        (res) => {
          if (res.token !== undefined) {
            rememberToken(res.token);
            sessionStorage.setItem('quotes.newToken', res.token);
          }
          announceNext(kind === 'signin' ? 'Signed in.' : 'Account created.');
          onDone();
        },
        (err: unknown) => {
          errorEl.textContent = err instanceof ApiError ? err.message : 'Something went wrong';
          f.querySelector<HTMLInputElement>('input[type=password]')!.focus();
        },
      );
    });
    return f;
  };
  main.replaceChildren(h('h1', {}, 'Account dashboard'), h('div', { class: 'grid' }, form('signin'), form('signup')));
}
