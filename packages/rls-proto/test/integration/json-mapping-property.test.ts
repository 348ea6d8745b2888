// Property-based tests (fast-check, fixed seed) of the proto3-JSON request mapping behind
// POST /json (rls-json.ts): any request written the ways protojson allows (lowerCamelCase or
// original names, integers as numbers or strings, enums as names or numbers, defaults omitted or
// null) parses back to itself; random text, random JSON and damaged valid bodies give a request
// or JsonMappingError, nothing else; hostile shapes (deep nesting, huge numbers) stay bounded.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isRequestLimitError, JsonMappingError, parseRateLimitRequestJson, type RateLimitRequestMsg, type RequestDescriptorMsg } from '../../src/index.js';
import { fcOptions, mutatedArb, valueOrTyped } from '@rls/testkit';

const str = fc.string({ unit: 'binary', maxLength: 16 });
const uint32 = fc.oneof(fc.constantFrom(0, 1, 0x7fffffff, 0xffffffff), fc.nat({ max: 0xffffffff }));
const uint64 = fc.oneof(fc.constantFrom(0, 1, 2 ** 32, Number.MAX_SAFE_INTEGER), fc.maxSafeNat());
const unitNames = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR'];

const requestArb: fc.Arbitrary<RateLimitRequestMsg> = fc.record(
  {
    domain: str,
    descriptors: fc.array(
      fc.record(
        {
          entries: fc.array(fc.record({ key: str, value: str }, { noNullPrototype: true }), { maxLength: 3 }),
          limit: fc.option(fc.record({ requestsPerUnit: uint32, unit: fc.integer({ min: -0x80000000, max: 0x7fffffff }) }, { noNullPrototype: true }), { nil: undefined }),
          hitsAddend: fc.option(uint64, { nil: undefined }),
        },
        { noNullPrototype: true },
      ),
      { maxLength: 3 },
    ),
    hitsAddend: uint32,
  },
  { noNullPrototype: true },
);

/** How one request is spelled in JSON: each choice is drawn per field from this stream. */
type Spelling = () => number;

function spell(req: RateLimitRequestMsg, pick: Spelling): string {
  const name = (camel: string, orig: string): string => (pick() % 2 === 0 ? camel : orig);
  const int = (n: number): number | string => (pick() % 2 === 0 ? n : String(n));
  const put = (o: Record<string, unknown>, key: string, v: unknown, isDefault: boolean): void => {
    // Defaults are omitted, written out, or written as null (all mean "not set").
    const mode = isDefault ? pick() % 3 : 1;
    if (mode === 0) return;
    o[key] = mode === 2 ? null : v;
  };
  const descriptor = (d: RequestDescriptorMsg): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    put(
      o,
      'entries',
      d.entries.map((e) => {
        const eo: Record<string, unknown> = {};
        put(eo, 'key', e.key, e.key === '');
        put(eo, 'value', e.value, e.value === '');
        return eo;
      }),
      d.entries.length === 0,
    );
    if (d.limit !== undefined) {
      const lo: Record<string, unknown> = {};
      put(lo, name('requestsPerUnit', 'requests_per_unit'), int(d.limit.requestsPerUnit), d.limit.requestsPerUnit === 0);
      const u = d.limit.unit;
      put(lo, 'unit', u >= 0 && u < unitNames.length && pick() % 2 === 0 ? unitNames[u] : u, u === 0);
      o.limit = lo;
    }
    if (d.hitsAddend !== undefined) o[name('hitsAddend', 'hits_addend')] = int(d.hitsAddend);
    if (pick() % 4 === 0) o[name('isNegativeHits', 'is_negative_hits')] = pick() % 2 === 0;
    return o;
  };
  const o: Record<string, unknown> = {};
  put(o, 'domain', req.domain, req.domain === '');
  put(o, 'descriptors', req.descriptors.map(descriptor), req.descriptors.length === 0);
  put(o, name('hitsAddend', 'hits_addend'), int(req.hitsAddend), req.hitsAddend === 0);
  return JSON.stringify(o);
}

const spellingArb = fc.array(fc.nat({ max: 5 }), { minLength: 64, maxLength: 64 }).map((xs) => {
  let i = 0;
  return (): number => xs[i++ % xs.length]!;
});
const validTextArb = fc.tuple(requestArb, spellingArb).map(([r, s]) => spell(r, s));

function weight(v: unknown): number {
  if (typeof v === 'string') return 1 + v.length;
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + weight(x), 1);
  if (typeof v === 'object' && v !== null) return Object.values(v).reduce((n: number, x) => n + weight(x), 1);
  return 1;
}

function parseOrTyped(text: string): void {
  // Beyond DEFAULT_REQUEST_LIMITS the mapping throws RequestLimitError, the other typed refusal.
  const r = valueOrTyped(() => parseRateLimitRequestJson(text), (e) => e instanceof JsonMappingError || isRequestLimitError(e));
  // Nothing in the parsed request is bigger than the text that described it.
  if (r.ok) assert.ok(weight(r.value) <= 2 * text.length + 8, `${weight(r.value)} from ${text.length} chars`);
  else assert.ok((r.err as Error).message.length > 0);
}

describe('JSON mapping properties', () => {
  test('round trip: every protojson spelling of a request parses back to it', () => {
    fc.assert(
      fc.property(requestArb, spellingArb, (req, pick) => {
        assert.deepEqual(parseRateLimitRequestJson(spell(req, pick)), req);
      }),
      fcOptions(1000),
    );
  });

  test('random text and random JSON: a request or JsonMappingError', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 64 }), parseOrTyped), fcOptions(1500));
    fc.assert(fc.property(fc.json({ maxDepth: 4 }), parseOrTyped), fcOptions(1500));
    // Random JSON in the places of a request's fields.
    const anyJson = fc.jsonValue({ maxDepth: 2 });
    const shaped = fc
      .record({
        domain: anyJson,
        descriptors: fc.oneof(anyJson, fc.array(fc.record({ entries: fc.oneof(anyJson, fc.array(fc.dictionary(fc.constantFrom('key', 'value', 'x'), anyJson))), limit: anyJson, hitsAddend: anyJson }, { requiredKeys: [] }), { maxLength: 3 })),
        hitsAddend: anyJson,
        hits_addend: anyJson,
      }, { requiredKeys: [] })
      .map((o) => JSON.stringify(o));
    fc.assert(fc.property(shaped, parseOrTyped), fcOptions(1500));
  });

  test('damaged valid bodies (bit flips, truncation, splices): a request or JsonMappingError', () => {
    fc.assert(
      fc.property(mutatedArb(validTextArb.map((t) => Buffer.from(t))), (b) => parseOrTyped(b.toString('utf8'))),
      fcOptions(2000),
    );
  });

  test('hostile shapes stay bounded: nesting 100000 deep, 100000-digit numbers, huge exponents', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom('hitsAddend', 'descriptors', 'domain'), (n, field) => {
        for (const text of [
          `{"${field}":${'['.repeat(n)}${']'.repeat(n)}}`,
          `{"descriptors":[{"hitsAddend":"${'9'.repeat(n)}"}]}`,
          `{"hitsAddend":1e${n}}`,
          `{"descriptors":[{"limit":{"requestsPerUnit":"0.${'0'.repeat(n)}1e${n}"}}]}`,
        ]) {
          const started = process.hrtime.bigint();
          parseOrTyped(text);
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          // Generous (shared CI cores); the point is linear, not quadratic or worse.
          assert.ok(ms < 2000, `${ms} ms for ${text.length} chars`);
        }
      }),
      fcOptions(30),
    );
  });
});
