import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { unzipSync } from 'fflate';

/** `BTCUSDT-1m-2024-01.zip` / `BTCUSDT-1m-2025-01-15.csv` -> pair and interval. */
export function parseDumpName(path: string): { pair: string; interval: string } | undefined {
  const m = /^([A-Z0-9]+)-(\d+[smhdwM]|1mo)-\d{4}-\d{2}(?:-\d{2})?\.(?:csv|zip)$/.exec(basename(path));
  return m === null ? undefined : { pair: m[1]!, interval: m[2]! };
}

export class ChecksumError extends Error {
  constructor(
    readonly file: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`${basename(file)}: checksum mismatch (expected sha256 ${expected}, got ${actual})`);
    this.name = 'ChecksumError';
  }
}

/**
 * Verifies `<file>.CHECKSUM` ("<sha256>  <name>", as data.binance.vision publishes) when it
 * exists; returns whether a checksum was checked. Throws ChecksumError on a mismatch.
 */
export function verifyChecksum(file: string, bytes: Uint8Array): boolean {
  const sumFile = `${file}.CHECKSUM`;
  if (!existsSync(sumFile)) return false;
  const expected = readFileSync(sumFile, 'utf8').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (expected !== actual) throw new ChecksumError(file, expected, actual);
  return true;
}

/** The CSV text of a dump file: the file itself, or every .csv inside a zip (read in memory). */
export function dumpCsvTexts(file: string, bytes: Uint8Array): string[] {
  if (!file.toLowerCase().endsWith('.zip')) return [Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')];
  const entries = unzipSync(bytes, { filter: (f) => f.name.toLowerCase().endsWith('.csv') });
  return Object.keys(entries)
    .sort()
    .map((k) => {
      const b = entries[k]!;
      return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
    });
}
