import { cssVar, h } from './dom.js';

/** A 7-day price line on a small canvas, green when the week ended higher, red otherwise. */
export function sparkline(prices: readonly number[], label: string): HTMLCanvasElement {
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
  ctx.strokeStyle = prices[prices.length - 1]! >= prices[0]! ? cssVar('--ok') : cssVar('--danger');
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
