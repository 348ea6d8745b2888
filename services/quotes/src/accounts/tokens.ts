import { hash, timingSafeEqual } from 'node:crypto';

/** Source of random bytes (crypto.randomBytes in production); injected so tests are repeatable. */
export type RandomBytes = (size: number) => Buffer;

const TOKEN_PREFIX = 'qt_';

/** A fresh 256-bit token, URL-safe so it works as `?token=` too. */
export function generateToken(random: RandomBytes): string {
  return TOKEN_PREFIX + random(32).toString('base64url');
}

/**
 * SHA-256 is enough here: tokens carry 256 random bits, so a slow password hash would add
 * nothing but latency on every request. The one-shot `crypto.hash` costs a quarter of a
 * createHash/update/digest chain.
 */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Constant-time comparison of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** The part of a token safe to show in listings (the prefix plus a few characters). */
export function displayPrefix(token: string): string {
  return token.slice(0, TOKEN_PREFIX.length + 6);
}

export function newTokenId(random: RandomBytes): string {
  return 'tok_' + random(6).toString('hex');
}
