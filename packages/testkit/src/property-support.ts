// Shared pieces of the property-based decoder tests: one fixed seed (so a run is reproducible and
// a failure names the seed and the shrunk input to replay), and byte-level mutations of valid
// encodings — bit flips, truncation, splicing foreign bytes in, and overlong / huge varints —
// the shapes of damage a hostile or broken peer produces.
import fc from 'fast-check';

/** Fixed by default; FC_SEED=<n> replays another run. fast-check prints seed and path on failure. */
export const SEED = process.env.FC_SEED !== undefined ? Number(process.env.FC_SEED) : 0x5eed_0012;

export function fcOptions(numRuns: number): fc.Parameters<unknown> {
  return { seed: SEED, numRuns, endOnFailure: false, verbose: 1 };
}

export type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'splice'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'varint'; at: number; value: bigint };

/** A base-128 varint (protobuf / HPACK continuation style) of `value`, possibly overlong. */
export function varintBytes(value: bigint, padTo = 0): number[] {
  const out: number[] = [];
  let v = value;
  do {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  } while (v > 0n);
  while (out.length < padTo) out.push(0x80);
  out[out.length - 1]! &= 0x7f;
  return out;
}

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('splice' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 8 }) }),
  fc.record({
    kind: fc.constant('varint' as const),
    at: fc.nat(),
    value: fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom(0x7fffffffn, 0xffffffffn, 1n << 31n, 1n << 35n, (1n << 64n) - 1n)),
  }),
);

/** Applies mutations in order; positions are taken modulo the current length. */
export function mutate(input: Uint8Array, mutations: readonly Mutation[]): Buffer {
  let b = Buffer.from(input);
  for (const m of mutations) {
    const at = b.length === 0 ? 0 : m.at % (b.length + 1);
    switch (m.kind) {
      case 'flip':
        if (b.length > 0) b[at % b.length]! ^= 1 << m.bit;
        break;
      case 'truncate':
        b = b.subarray(0, at);
        break;
      case 'splice':
        b = Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
        break;
      case 'delete':
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.count)]);
        break;
      case 'varint':
        b = Buffer.concat([b.subarray(0, at), Buffer.from(varintBytes(m.value)), b.subarray(at)]);
        break;
    }
  }
  return Buffer.from(b);
}

/** A valid encoding with up to `max` mutations applied. */
export function mutatedArb(valid: fc.Arbitrary<Uint8Array>, max = 4): fc.Arbitrary<Buffer> {
  return fc.tuple(valid, fc.array(mutationArb, { minLength: 1, maxLength: max })).map(([v, ms]) => mutate(v, ms));
}

/**
 * Runs `fn` and classifies the outcome: a value, the decoder's typed error, or anything else
 * (rethrown, so fast-check reports it with the input that caused it).
 */
export function valueOrTyped<T>(fn: () => T, isTyped: (err: unknown) => boolean): { ok: true; value: T } | { ok: false; err: unknown } {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    if (isTyped(err)) return { ok: false, err };
    throw err;
  }
}
