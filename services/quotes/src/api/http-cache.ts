/** True when an If-None-Match header names `etag` (weak comparison, `*` matches anything). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const strip = (t: string): string => t.trim().replace(/^W\//, '');
  const want = strip(etag);
  return ifNoneMatch.split(',').some((t) => t.trim() === '*' || strip(t) === want);
}
