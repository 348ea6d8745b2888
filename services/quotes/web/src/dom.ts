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

/** Announces a message through the polite live region (errors in red). */
export function announce(message: string, isError = false): void {
  const el = statusEl();
  el.textContent = message;
  el.classList.toggle('error', isError);
}

export function formatNumber(n: number, digits = 2): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: Math.min(digits, 2) });
}
