/** Significant digits and decimals of a number as JSON prints it. */
export function digitsOf(x: number): { sig: number; decimals: number } {
  const [mant = '', expPart] = Math.abs(x).toString().split('e');
  const exp = expPart === undefined ? 0 : Number(expPart);
  const [int = '', frac = ''] = mant.split('.');
  const digits = (int + frac).replace(/^0+/, '');
  // An integer's trailing zeros only place the decimal point.
  const sig = (frac === '' ? digits.replace(/0+$/, '') : digits).length;
  return { sig: Math.max(sig, 1), decimals: Math.max(0, frac.length - exp) };
}
