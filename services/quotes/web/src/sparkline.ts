import { cssVar, h } from './dom.js';

/**
 * A 7-day price line on a small canvas, green when the week's change is up, red when down: the
 * colour follows `change` (the 7 d column beside it) when given, so the two never disagree, else
 * the line's own ends.
 */
export function sparkline(prices: readonly number[], label: string, change?: number | null): HTMLCanvasElement {
  const width = 120;
  const height = 36;
  const c = h('canvas', { class: 'spark', role: 'img', 'aria-label': label, width: String(width * 2), height: String(height * 2) });
  c.style.width = `${width}px`;
  c.style.height = `${height}px`;
  const ctx = c.getContext('2d');
  if (ctx === null || prices.length < 2) return c;
  const min = Math.min(...prices);
  const max = Math.max(...prices);
  const span = max - min || 1;
  ctx.scale(2, 2);
  ctx.lineWidth = 1.5;
  const up = change !== undefined && change !== null ? change >= 0 : prices[prices.length - 1]! >= prices[0]!;
  ctx.strokeStyle = up ? cssVar('--ok') : cssVar('--danger');
  c.dataset.trend = up ? 'up' : 'down';
  ctx.beginPath();
  prices.forEach((p, i) => {
    const x = (i / (prices.length - 1)) * (width - 2) + 1;
    const y = height - 2 - ((p - min) / span) * (height - 4);
    if (i === 0) ctx.moveTo(x, y);
    else ctx.lineTo(x, y);
  });
  ctx.stroke();
  return c;
}
