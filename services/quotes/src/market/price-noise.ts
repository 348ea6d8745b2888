/**
 * Deterministic pseudo-random building blocks for the simulated sources: an integer hash and
 * multi-octave value noise that can be evaluated at any instant in O(octaves), so years of
 * history need no state and no replay.
 */

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Uniform in [0, 1) from three integers. */
export function hash01(a: number, b: number, c: number): number {
  return fmix(fmix(fmix(a) ^ b) ^ (c >>> 0) ^ Math.floor(c / 4294967296)) / 4294967296;
}

export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export interface Octave {
  /** Grid spacing in seconds (the noise is linear between grid points). */
  period: number;
  amplitude: number;
}

/**
 * Sum of value-noise octaves at instant `t` (seconds). Each octave is linear between multiples
 * of its period, so when every period is a multiple of 60 s the sum is linear inside each minute.
 */
export function octaveNoise(key: number, octaves: readonly Octave[], t: number): number {
  let sum = 0;
  for (let k = 0; k < octaves.length; k++) {
    const o = octaves[k]!;
    const x = t / o.period;
    const i = Math.floor(x);
    const f = x - i;
    const a = hash01(key, k, i) * 2 - 1;
    const b = hash01(key, k, i + 1) * 2 - 1;
    sum += o.amplitude * (a + (b - a) * f);
  }
  return sum;
}

/** Octaves from `finest` seconds upwards, each `factor` times longer, scaled like a random walk with annual volatility `sigma`. */
export function walkOctaves(sigma: number, finest: number, factor: number, count: number): Octave[] {
  const year = 365.25 * 86_400;
  const out: Octave[] = [];
  for (let k = 0, p = finest; k < count; k++, p *= factor) out.push({ period: p, amplitude: 0.8 * sigma * Math.sqrt(p / year) });
  return out;
}
