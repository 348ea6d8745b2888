/** Tiny element builder: text is always set as text, never parsed as HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: Array<Node | string | null | undefined>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

const statusEl = (): HTMLElement => document.getElementById('status')!;

/** A message for the next page shown (set just before navigating), else undefined. */
let carried: { message: string; isError: boolean } | undefined;

/** Announces a message on the current page through the polite live region (errors in red). */
export function announce(message: string, isError = false): void {
  const el = statusEl();
  el.textContent = message;
  el.classList.toggle('error', isError);
}

/** Announces a message on the page about to be shown (sign-in, sign-out), not on the one left. */
export function announceNext(message: string, isError = false): void {
  carried = { message, isError };
}

/**
 * Called on every page change: messages belong to the page that showed them, so the status is
 * cleared, except for one carried over with announceNext.
 */
export function newPageStatus(): void {
  const c = carried;
  carried = undefined;
  announce(c?.message ?? '', c?.isError ?? false);
}

export function formatNumber(n: number, digits = 2): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: Math.min(digits, 2) });
}

/** Copies text to the clipboard (the async API, else a selection and execCommand). */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch {
    const area = h('textarea', { 'aria-hidden': 'true' });
    area.value = text;
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.append(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    if (!ok) throw new Error('Copying is not allowed here: select the text and copy it by hand.');
  }
}

/** A CSS custom property of the page (colours of the current light/dark scheme). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
