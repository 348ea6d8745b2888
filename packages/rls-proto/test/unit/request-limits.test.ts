// The request bounds are one definition for both decoders: the protobuf and the JSON decoder
// accept and refuse exactly the same requests, name the same limit, and stop early.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeRateLimitRequest,
  encodeRateLimitRequest,
  isRequestLimitError,
  parseRateLimitRequestJson,
  type RateLimitRequestMsg,
  type RequestLimits,
} from '../../src/index.js';

const LIMITS: RequestLimits = { maxDescriptors: 4, maxEntriesPerDescriptor: 3, maxEntryBytes: 20, sources: { maxDescriptors: 'MAX_D', maxEntriesPerDescriptor: 'MAX_E', maxEntryBytes: 'MAX_B' } };

function req(descriptors: { key: string; value: string }[][]): RateLimitRequestMsg {
  return { domain: 'd', descriptors: descriptors.map((entries) => ({ entries, limit: undefined, hitsAddend: undefined })), hitsAddend: 0 };
}

function asJson(r: RateLimitRequestMsg): string {
  return JSON.stringify({ domain: r.domain, descriptors: r.descriptors.map((d) => ({ entries: d.entries })) });
}

/** The limit each decoder names (undefined = accepted). */
function outcome(r: RateLimitRequestMsg): { proto: string | undefined; json: string | undefined; message: string | undefined } {
  const run = (f: () => unknown): [string | undefined, string | undefined] => {
    try {
      f();
      return [undefined, undefined];
    } catch (err) {
      if (isRequestLimitError(err)) return [err.limit, err.message];
      throw err;
    }
  };
  const [proto, message] = run(() => decodeRateLimitRequest(encodeRateLimitRequest(r), LIMITS));
  const [json, jsonMessage] = run(() => parseRateLimitRequestJson(asJson(r), LIMITS));
  assert.equal(jsonMessage, message, 'both decoders give the same message');
  return { proto, json, message };
}

const e = (key: string, value: string): { key: string; value: string } => ({ key, value });

describe('request limits', () => {
  test('both decoders accept at the limits and refuse one beyond, naming the same limit and setting', () => {
    const cases: [string, RateLimitRequestMsg, string | undefined][] = [
      ['4 descriptors', req([[e('a', '1')], [e('a', '2')], [e('a', '3')], [e('a', '4')]]), undefined],
      ['5 descriptors', req([[e('a', '1')], [e('a', '2')], [e('a', '3')], [e('a', '4')], [e('a', '5')]]), 'maxDescriptors'],
      ['3 entries', req([[e('a', '1'), e('b', '2'), e('c', '3')]]), undefined],
      ['4 entries', req([[e('a', '1')], [e('a', '1'), e('b', '2'), e('c', '3'), e('d', '4')]]), 'maxEntriesPerDescriptor'],
      ['20 bytes', req([[e('key', 'x'.repeat(17))]]), undefined],
      ['21 bytes', req([[e('key', 'x'.repeat(18))]]), 'maxEntryBytes'],
      // Bytes are UTF-8 bytes, not characters: 'é' is two.
      ['20 bytes of UTF-8', req([[e('k', 'x' + 'é'.repeat(9))]]), undefined],
      ['21 bytes of UTF-8', req([[e('k', 'xx' + 'é'.repeat(9))]]), 'maxEntryBytes'],
      ['a huge entry', req([[e('k', 'x'.repeat(100_000))]]), 'maxEntryBytes'],
    ];
    for (const [what, r, expected] of cases) {
      const o = outcome(r);
      assert.equal(o.proto, expected, `${what} (protobuf)`);
      assert.equal(o.json, expected, `${what} (JSON)`);
    }
    assert.equal(outcome(cases[1]![1]).message, 'descriptors: more than 4 descriptors in one request (limit 4, set by MAX_D)');
    assert.equal(outcome(cases[3]![1]).message, 'descriptors[1].entries: more than 3 entries in one descriptor (limit 3, set by MAX_E)');
    assert.equal(outcome(cases[5]![1]).message, 'descriptors[0].entries[0]: key and value longer than 20 bytes (limit 20, set by MAX_B)');
  });

  test('a 200,000-descriptor message is refused quickly, without decoding it all', () => {
    const big = encodeRateLimitRequest(req(Array.from({ length: 200_000 }, (_, i) => [e('k', `v${i}`)])));
    const started = performance.now();
    assert.throws(() => decodeRateLimitRequest(big), (err: unknown) => isRequestLimitError(err) && err.limit === 'maxDescriptors' && err.max === 256);
    const ms = performance.now() - started;
    // Decoding all of it takes hundreds of ms; stopping at descriptor 257 takes well under one.
    assert.ok(ms < 50, `took ${ms} ms`);
  });

  test('without limits the defaults apply (256 descriptors, 32 entries, 4096 bytes)', () => {
    const at = req(Array.from({ length: 256 }, () => Array.from({ length: 32 }, (_, j) => e(`k${j}`, 'v'))));
    assert.equal(decodeRateLimitRequest(encodeRateLimitRequest(at)).descriptors.length, 256);
    assert.equal(parseRateLimitRequestJson(asJson(at)).descriptors.length, 256);
    assert.throws(() => parseRateLimitRequestJson(asJson(req([Array.from({ length: 33 }, () => e('k', 'v'))]))), /more than 32 entries in one descriptor \(limit 32\)$/);
  });
});
