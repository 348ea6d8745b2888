// The public HPACK interoperability corpus (github.com/http2jp/hpack-test-case, subset in
// test/fixtures/hpack-test-case): every case of every story decodes to exactly its header list,
// in order, with one decoder per story (the dynamic table carries across cases) and each
// header_table_size applied as the acknowledged SETTINGS_HEADER_TABLE_SIZE before its case.
// The raw-data stories (header lists without wire bytes) are encoded by the test encoder with
// several strategies and decoded back, the decoder's table matching the encoder's after each block.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIELDS_OK, HpackDecoder } from './hpack-decoder.js';
import { TestHpackEncoder, type FieldChoice, type Representation } from '../../../test/support/hpack-test-encoder.js';

const corpusDir = fileURLToPath(new URL('../../../test/fixtures/hpack-test-case', import.meta.url));
const LIMIT = 1 << 20;

interface StoryCase {
  seqno: number;
  wire?: string;
  header_table_size?: number | null;
  headers: Record<string, string>[];
}
interface Story {
  cases: StoryCase[];
}

function readStory(path: string): Story {
  return JSON.parse(readFileSync(path, 'utf8')) as Story;
}

/** The expected list as [name, value] byte strings (latin1: one code unit per octet, as the decoder returns). */
function expected(c: StoryCase): [string, string][] {
  return c.headers.map((h) => {
    const [pair] = Object.entries(h);
    assert.ok(pair !== undefined);
    return [Buffer.from(pair[0], 'utf8').toString('latin1'), Buffer.from(pair[1], 'utf8').toString('latin1')];
  });
}

function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}

const implementations = readdirSync(corpusDir).filter((d) => statSync(join(corpusDir, d)).isDirectory() && d !== 'raw-data');
const storiesOf = (dir: string): string[] => readdirSync(join(corpusDir, dir)).filter((f) => f.endsWith('.json')).sort();

describe('hpack-test-case corpus: decode every case exactly', () => {
  test('the corpus subset is present (guards against an empty loop passing)', () => {
    assert.ok(implementations.length >= 10, `implementations: ${implementations.join(', ')}`);
    assert.ok(implementations.includes('nghttp2-change-table-size'));
  });

  for (const impl of implementations) {
    test(impl, () => {
      let cases = 0;
      for (const file of storiesOf(impl)) {
        const story = readStory(join(corpusDir, impl, file));
        const decoder = new HpackDecoder(4096);
        for (const c of story.cases) {
          const where = `${impl}/${file} seqno ${c.seqno}`;
          if (c.header_table_size !== undefined && c.header_table_size !== null) decoder.setMaxTableSize(c.header_table_size);
          assert.ok(c.wire !== undefined, `${where}: no wire`);
          const out: string[] = [];
          const flags = decoder.decode(Buffer.from(c.wire, 'hex'), out, LIMIT);
          assert.equal(flags, FIELDS_OK, `${where}: flags`);
          assert.deepEqual(pairs(out), expected(c), where);
          cases++;
        }
      }
      assert.ok(cases > 0);
    });
  }
});

describe('hpack-test-case raw-data: test encoder -> decoder round trips', () => {
  const strategies: { name: string; choose: (i: number) => FieldChoice }[] = [
    { name: 'indexing + huffman', choose: () => ({ representation: 'indexed', nameByIndex: true, huffmanName: true, huffmanValue: true }) },
    { name: 'literal without indexing, raw', choose: () => ({ representation: 'without', nameByIndex: false, huffmanName: false, huffmanValue: false }) },
    {
      name: 'mixed per field',
      choose: (i) => {
        const reps: Representation[] = ['indexed', 'incremental', 'without', 'never'];
        return { representation: reps[i % 4]!, nameByIndex: i % 3 !== 0, huffmanName: i % 2 === 0, huffmanValue: i % 5 < 3 };
      },
    },
  ];
  for (const s of strategies) {
    test(s.name, () => {
      let blocks = 0;
      for (const file of storiesOf('raw-data')) {
        const story = readStory(join(corpusDir, 'raw-data', file));
        // A small table forces eviction on the longer stories.
        const encoder = new TestHpackEncoder(4096);
        const decoder = new HpackDecoder(4096);
        story.cases.forEach((c, n) => {
          const fields = expected(c);
          const updates = n === 1 ? [512] : n === 3 ? [4096] : [];
          const block = encoder.encode(fields, s.choose, updates);
          const out: string[] = [];
          assert.equal(decoder.decode(block, out, LIMIT), FIELDS_OK);
          assert.deepEqual(pairs(out), fields, `${file} seqno ${c.seqno}`);
          assert.deepEqual(decoder.dynamicEntries(), encoder.entries(), `${file} seqno ${c.seqno}: tables`);
          blocks++;
        });
      }
      assert.ok(blocks > 100);
    });
  }
});
