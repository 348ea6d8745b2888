// Compiled `*` patterns (upstream's wildcardMatch semantics): every `*` matches zero or more characters; the
// candidate must start with the text before the first `*`, end with the text after the last one,
// and contain the middle segments in order between them (greedy left-to-right search).

export type WildcardMatcher = (candidate: string) => boolean;

export function hasWildcard(pattern: string): boolean {
  return pattern.includes('*');
}

/** Builds the matcher once at rule load; the common `prefix*` shape compiles to one startsWith. */
export function compileWildcard(pattern: string): WildcardMatcher {
  const parts = pattern.split('*');
  const prefix = parts[0] ?? '';
  const suffix = parts.length > 1 ? (parts[parts.length - 1] ?? '') : '';
  const middles = parts.slice(1, -1).filter((p) => p.length > 0);
  const minLength = parts.reduce((n, p) => n + p.length, 0);
  if (parts.length === 1) return (c) => c === pattern;
  if (suffix === '' && middles.length === 0) return (c) => c.startsWith(prefix);
  if (middles.length === 0) return (c) => c.length >= minLength && c.startsWith(prefix) && c.endsWith(suffix);
  return (c) => {
    if (c.length < minLength || !c.startsWith(prefix) || !c.endsWith(suffix)) return false;
    const end = c.length - suffix.length;
    let pos = prefix.length;
    for (const m of middles) {
      const at = c.indexOf(m, pos);
      if (at < 0 || at + m.length > end) return false;
      pos = at + m.length;
    }
    return true;
  };
}
