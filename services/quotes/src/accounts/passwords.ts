import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * scrypt cost parameters: N = 2^15, r = 8 (32 MiB per hash), p = 1, as OWASP recommends for
 * scrypt. Memory-hard, so guessing leaked hashes on GPUs stays expensive; no native module needed.
 */
export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}
export const DEFAULT_SCRYPT: ScryptParams = Object.freeze({ N: 2 ** 15, r: 8, p: 1 });
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const opts: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, opts, (err, key) => (err === null ? resolve(key) : reject(err)));
  });
}

/** `scrypt$N$r$p$<salt b64url>$<key b64url>`: parameters travel with the hash so they can be raised later. */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT, random: (n: number) => Buffer = randomBytes): Promise<string> {
  const salt = random(16);
  const key = await derive(password, salt, params);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Constant-time check of a password against a stored hash; false for malformed hashes. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (![N, r, p].every((x) => Number.isInteger(x) && x > 0) || N > 2 ** 20) return false;
  const expected = Buffer.from(parts[5] ?? '', 'base64url');
  const key = await derive(password, Buffer.from(parts[4] ?? '', 'base64url'), { N, r, p });
  return expected.length === key.length && timingSafeEqual(expected, key);
}
