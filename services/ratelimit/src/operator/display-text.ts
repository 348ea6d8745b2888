// Text the operator page shows that a client or a rule file chose (descriptor keys and values,
// domains, statistics keys, versions, error texts): made safe to read and bounded before it is
// kept or sent. Invisible and reordering characters are written as visible escapes, so a value
// always reads as what it is: a right-to-left override cannot make "evil" look like "live", a
// zero-width space cannot make two different values look the same, and a control character cannot
// rewrite a terminal that prints the JSON. The backslash itself is escaped too, so a client cannot
// type a fake escape. The result is cut at a bound (an ellipsis marks the cut), never inside an
// escape or a surrogate pair, so a 4,000-character value takes as much room as a 64-character one.
//
// Escaped: controls (Cc), format characters (Cf: bidi marks, embeddings, overrides and isolates,
// zero-width characters, the soft hyphen, tags, the byte order mark), line and paragraph
// separators, lone surrogates, private-use and unassigned code points, every space but U+0020,
// and combining marks beyond two on one character (which stack glyphs without bound).
// Written as `\n`, `\r`, `\t`, `\\` or `\u{XXXX}` (hexadecimal code point, at least four digits);
// the page highlights these.

/** Default bound of a displayed string, in UTF-16 code units (JavaScript string length). */
export const MAX_TEXT = 64;

/** Anything that may need more than copying: a quick test lets plain strings through untouched. */
const SPECIAL = /[\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}\p{M}]|(?! )\p{Zs}/u;
const INVISIBLE = /^(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}]|(?! )\p{Zs})$/u;
const MARK = /^\p{M}$/u;
/** Combining marks kept on one base character; more are escaped. */
const MAX_MARKS = 2;

const NAMED: Readonly<Record<string, string>> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function codePointEscape(ch: string): string {
  return `\\u{${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}}`;
}

/**
 * `s` with invisible and reordering characters escaped, cut to at most `max` code units (an
 * ellipsis marks a cut). Work is bounded by `max`, not by the length of `s`.
 */
export function displayText(s: string, max = MAX_TEXT): string {
  if (s.length <= max && !SPECIAL.test(s)) return s;
  let out = '';
  /** What fits with room for the ellipsis, fixed at the first piece that does not. */
  let cut: string | undefined;
  let marks = 0;
  for (const ch of s) {
    let piece = NAMED[ch];
    if (piece === undefined) {
      if (MARK.test(ch)) {
        marks += 1;
        piece = marks > MAX_MARKS ? codePointEscape(ch) : ch;
      } else {
        marks = 0;
        piece = INVISIBLE.test(ch) ? codePointEscape(ch) : ch;
      }
    } else marks = 0;
    if (cut === undefined && out.length + piece.length > max - 1) cut = out;
    out += piece;
    if (out.length > max) return cut + '…';
  }
  return out;
}
