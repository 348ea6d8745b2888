// The decoders `bench/fuzz.mjs` fuzzes: for each, the source files whose coverage guides the
// fuzzer, seed inputs (valid encodings), a dictionary of tokens the mutator splices in, and `run`,
// which decodes one input and throws only for a bug: an error other than the decoder's typed
// error, or a differential check that fails (a streaming parser fed the same bytes in two chunks
// must give the same replies as fed whole). Each factory imports only what its target needs, so
// the coverage the fuzzer reads stays small.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));

/** A base-128 varint (protobuf and HPACK continuation bytes). */
function varint(value) {
  const out = [];
  let v = BigInt(value);
  do {
    out.push(Number(v & 0x7fn) | (v > 0x7fn ? 0x80 : 0));
    v >>= 7n;
  } while (v > 0n);
  return Buffer.from(out);
}

const protoDict = [0n, 1n, 127n, 128n, 0x7fffffffn, 0x80000000n, 0xffffffffn, 1n << 35n, (1n << 63n) - 1n, (1n << 64n) - 1n]
  .map(varint)
  .concat([0x0a, 0x12, 0x1a, 0x22, 0x2a, 0x32, 0x0b, 0x0c, 0x08, 0x10, 0x18, 0x11, 0x15].map((b) => Buffer.from([b])));

async function protoTarget(decodeName, seeds) {
  const proto = await import('../packages/rls-proto/src/index.ts');
  const decode = proto[decodeName];
  const typed = (e) => proto.isProtoDecodeError(e) || proto.isRequestLimitError?.(e) === true || proto.isRlqsLimitError?.(e) === true;
  return {
    files: ['/packages/rls-proto/src/'],
    seeds: seeds(proto),
    dict: protoDict,
    run(buf) {
      try {
        decode(buf);
      } catch (e) {
        if (!typed(e)) throw e;
      }
    },
  };
}

const sampleRequest = {
  domain: 'edge',
  descriptors: [
    { entries: [{ key: 'remote_address', value: '10.0.0.1' }, { key: 'path', value: '/a/é' }], limit: undefined, hitsAddend: undefined },
    { entries: [{ key: 'k', value: 'v' }], limit: { requestsPerUnit: 42, unit: 2 }, hitsAddend: 3 },
  ],
  hitsAddend: 1,
};
const sampleResponse = {
  overallCode: 2,
  statuses: [
    { code: 1, currentLimit: { requestsPerUnit: 10, unit: 2, name: 'n' }, limitRemaining: 9, durationUntilReset: 58 },
    { code: 2, currentLimit: undefined, limitRemaining: 0, durationUntilReset: 1.5 },
  ],
  responseHeadersToAdd: [{ key: 'x-ratelimit-limit', value: '10' }],
  dynamicMetadata: { a: [1, 'two', null, true, { b: {} }] },
};
const sampleConfig = {
  name: 'cfg',
  domain: 'edge',
  descriptors: [
    {
      key: 'k',
      value: 'v',
      rateLimit: { unit: 'MINUTE', requestsPerUnit: 5, unlimited: false, name: 'r', replaces: [{ name: 'x' }] },
      descriptors: [{ key: 'inner', value: '', descriptors: [], shadowMode: true, detailedMetric: false, quotaMode: false }],
      shadowMode: false,
      detailedMetric: true,
      quotaMode: false,
      metadata: { team: 'a', n: 1 },
    },
  ],
};

/** HPACK seeds: header blocks from the hpack-test-case fixtures (first cases of a few stories). */
function hpackSeeds() {
  const dir = join(root, 'services/ratelimit/test/fixtures/hpack-test-case');
  const seeds = [];
  if (!existsSync(dir)) return [Buffer.from('828684418cf1e3c2e5f23a6ba0ab90f4ff', 'hex')];
  for (const impl of readdirSync(dir)) {
    if (impl === 'raw-data' || !impl.includes('-') || impl.endsWith('.md')) continue;
    const file = join(dir, impl, 'story_00.json');
    if (!existsSync(file)) continue;
    const story = JSON.parse(readFileSync(file, 'utf8'));
    for (const c of story.cases.slice(0, 2)) seeds.push(Buffer.from(c.wire, 'hex'));
  }
  return seeds;
}

const sampleReports = {
  domain: 'edge',
  bucketQuotaUsages: [
    { bucketId: [{ key: 'name', value: 'api' }, { key: 'tenant', value: 'acme' }], timeElapsed: 1.5, numRequestsAllowed: 120, numRequestsDenied: 3 },
    { bucketId: [{ key: 'name', value: 'web' }], timeElapsed: 0, numRequestsAllowed: 1, numRequestsDenied: 0 },
  ],
};
const sampleQuotaResponse = {
  bucketAction: [
    {
      bucketId: [{ key: 'name', value: 'api' }],
      action: { kind: 'quota_assignment', assignmentTimeToLive: 10, rateLimitStrategy: { kind: 'token_bucket', tokenBucket: { maxTokens: 20, tokensPerFill: 132, fillInterval: 4 } } },
    },
    { bucketId: [{ key: 'name', value: 'web' }], action: { kind: 'quota_assignment', assignmentTimeToLive: 0, rateLimitStrategy: { kind: 'blanket_rule', blanketRule: 0 } } },
    { bucketId: [{ key: 'name', value: 'old' }], action: { kind: 'abandon' } },
  ],
};

export const targets = {
  'rlqs-reports': () => protoTarget('decodeRateLimitQuotaUsageReports', (p) => [p.encodeRateLimitQuotaUsageReports(sampleReports)]),
  'rlqs-response': () => protoTarget('decodeRateLimitQuotaResponse', (p) => [p.encodeRateLimitQuotaResponse(sampleQuotaResponse)]),
  'proto-request': () => protoTarget('decodeRateLimitRequest', (p) => [p.encodeRateLimitRequest(sampleRequest), Buffer.alloc(0)]),
  'proto-response': () => protoTarget('decodeRateLimitResponse', (p) => [p.encodeRateLimitResponse(sampleResponse)]),
  'xds-config': () => protoTarget('decodeRateLimitConfig', (p) => [p.encodeRateLimitConfig(sampleConfig)]),
  'xds-discovery': () =>
    protoTarget('decodeDiscoveryResponse', (p) => [
      p.encodeDiscoveryResponse({ versionInfo: '1', resources: [p.packRateLimitConfig(sampleConfig)], typeUrl: p.RATE_LIMIT_CONFIG_TYPE_URL, nonce: 'n' }),
    ]),

  async json() {
    const p = await import('../packages/rls-proto/src/index.ts');
    const typed = (e) => e instanceof p.JsonMappingError || p.isRequestLimitError?.(e) === true;
    return {
      files: ['/packages/rls-proto/src/rls-json', '/packages/rls-proto/src/request-limits'],
      seeds: [
        Buffer.from('{"domain":"edge","descriptors":[{"entries":[{"key":"k","value":"v"}],"limit":{"requestsPerUnit":"5","unit":"MINUTE"},"hitsAddend":2}],"hits_addend":1}'),
        Buffer.from('{"descriptors":[{"entries":[],"is_negative_hits":false,"hits_addend":"18446744073709551615"}]}'),
      ],
      dict: ['{', '}', '[', ']', '"', ',', ':', 'null', 'true', '"descriptors"', '"entries"', '"hitsAddend"', '"hits_addend"', '"limit"', '"unit"', '"requestsPerUnit"', '"key"', '"value"', '1e400', '-0', '"18446744073709551616"', '4294967296', '"__proto__"', '1.5']
        .map((s) => Buffer.from(s)),
      run(buf) {
        try {
          p.parseRateLimitRequestJson(buf.toString('utf8'));
        } catch (e) {
          if (!typed(e)) throw e;
        }
      },
    };
  },

  async hpack() {
    const { HpackDecoder, HpackError } = await import('../services/ratelimit/src/server/h2/hpack-decoder.ts');
    const { huffmanDecode } = await import('../services/ratelimit/src/server/h2/huffman.ts');
    return {
      files: ['/server/h2/hpack-decoder', '/server/h2/huffman'],
      seeds: hpackSeeds(),
      dict: [0n, 62n, 4096n, 0x7fffffffn, (1n << 35n)].map(varint).concat([0x3f, 0x7f, 0xff, 0x80, 0x40, 0x10, 0x00, 0x20].map((b) => Buffer.from([b]))),
      run(buf) {
        // The input is up to three blocks of one connection (split at 0xfe 0xfe), so later blocks
        // meet a dynamic table the earlier ones filled; then the whole input as one Huffman string.
        const d = new HpackDecoder(4096);
        let start = 0;
        for (let i = 0; i < 3 && start <= buf.length; i++) {
          let end = buf.indexOf(Buffer.from([0xfe, 0xfe]), start);
          if (end < 0 || i === 2) end = buf.length;
          try {
            d.decode(buf.subarray(start, end), [], 8192);
          } catch (e) {
            if (!(e instanceof HpackError)) throw e;
            break;
          }
          start = end + 2;
        }
        huffmanDecode(buf, 0, buf.length);
      },
    };
  },

  async resp() {
    const { RespParser, RespProtocolError } = await import('../services/ratelimit/src/backends/resp-parser.ts');
    const feed = (chunks) => {
      const replies = [];
      const p = new RespParser((r) => replies.push(r));
      try {
        for (const c of chunks) p.feed(c);
      } catch (e) {
        if (!(e instanceof RespProtocolError)) throw e;
        return { replies, failed: true };
      }
      return { replies, failed: false };
    };
    return {
      files: ['/backends/resp-parser'],
      seeds: [Buffer.from(':1\r\n:-42\r\n+PONG\r\n-ERR x\r\n$5\r\nhello\r\n$-1\r\n*3\r\n$2\r\n17\r\n$-1\r\n*1\r\n:1\r\n*0\r\n*-1\r\n')],
      dict: [':', '+', '-', '$', '*', '\r\n', '\r', '-1', '0', '99999999999999999999', '16777217', '*1\r\n'].map((s) => Buffer.from(s)),
      run(buf) {
        const whole = feed([buf]);
        // Differential: the same bytes split at a position taken from the input give the same outcome.
        const cut = buf.length === 0 ? 0 : buf[0] % buf.length;
        const split = feed([buf.subarray(0, cut), buf.subarray(cut)]);
        if (!isDeepStrictEqual(whole.replies, split.replies) || whole.failed !== split.failed) {
          throw new Error(`split at ${cut} differs: ${JSON.stringify(whole)} vs ${JSON.stringify(split)}`);
        }
      },
    };
  },

  async memcached() {
    const { GetReply, LineReply } = await import('../services/ratelimit/src/backends/memcached-protocol.ts');
    const { StoreError } = await import('../packages/engine/src/errors.ts');
    // Parsers queued as memcached-connection.ts queues them; the first input byte picks get/line.
    const feed = (kinds, chunks) => {
      const settled = [];
      const queue = kinds.map((k) =>
        k ? new GetReply((err, v) => settled.push([err?.message, [...v.entries()]])) : new LineReply((err, l) => settled.push([err?.message, l])),
      );
      let head = 0;
      let recv = Buffer.alloc(0);
      try {
        for (const c of chunks) {
          recv = Buffer.concat([recv, c]);
          let pos = 0;
          while (pos < recv.length && head < queue.length) {
            const end = queue[head].parse(recv, pos);
            if (end < 0) break;
            if (end <= pos || end > recv.length) throw new Error(`parser returned ${end} from ${pos} of ${recv.length}`);
            pos = end;
            head++;
          }
          recv = recv.subarray(pos);
        }
      } catch (e) {
        if (!(e instanceof StoreError)) throw e;
        return { settled, failed: true };
      }
      return { settled, failed: false };
    };
    return {
      files: ['/backends/memcached-protocol'],
      seeds: [Buffer.from('\x05VALUE k1 0 2\r\n17\r\nVALUE k2 0 3\r\n4  \r\nEND\r\nSTORED\r\nEND\r\n12\r\nSERVER_ERROR out of memory\r\n')],
      dict: ['VALUE ', 'END\r\n', '\r\n', ' 0 ', 'STORED', 'ERROR', 'CLIENT_ERROR ', '1048577', '99999999999', 'NOT_FOUND'].map((s) => Buffer.from(s)),
      run(buf) {
        const bits = buf.length > 0 ? buf[0] : 0;
        const kinds = Array.from({ length: 8 }, (_v, i) => (bits >> i) & 1);
        const body = buf.subarray(1);
        const whole = feed(kinds, [body]);
        const cut = body.length === 0 ? 0 : (buf[1] ?? 0) % body.length;
        const split = feed(kinds, [body.subarray(0, cut), body.subarray(cut)]);
        if (!isDeepStrictEqual(whole, split)) throw new Error(`split at ${cut} differs: ${JSON.stringify(whole)} vs ${JSON.stringify(split)}`);
      },
    };
  },
};
