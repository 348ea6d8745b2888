/** Number formats of the dashboard: prices keep significant digits whatever their size. */

const grouped2 = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const small = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 4 });
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 2 });
const pct = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1, signDisplay: 'exceptZero' });

/**
 * A price: two decimals from 1 up (`64,123.45`), four significant digits below
 * (`0.00001234` for PEPE, `0.5123`), never rounded to zero.
 */
export function formatPrice(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  return Math.abs(x) >= 1 ? grouped2.format(x) : small.format(x);
}

/** Large amounts (market cap, volume) in compact form: `1.23T`, `456.7M`; 0 as a dash (unknown). */
export function formatCompact(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x) || x === 0) return '—';
  return compact.format(x);
}

/** A percent change with its sign: `+1.2%`, `-0.4%`. */
export function formatPercent(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  return `${pct.format(x)}%`;
}

/** Decimals a chart axis needs for prices around `x`: 2 from 1 up, else enough for 4 significant digits. */
export function pricePrecision(x: number): number {
  if (!(x > 0) || x >= 1) return 2;
  return Math.min(15, Math.ceil(-Math.log10(x)) + 3);
}

export function formatInteger(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 0 });
}
