/** `YYYY-MM` of the UTC calendar month holding `ms`. */
export function monthKey(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** Start of the next UTC calendar month (milliseconds). */
export function nextMonthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
