#!/usr/bin/env node
// Coverage-guided fuzzing of the hand-written decoders (protobuf, xDS, JSON mapping, HPACK, RESP,
// memcached), for a person to run — the test suite runs the quick property tests instead.
// Guidance comes from V8's own precise block coverage (node:inspector, Profiler with
// detailed: true): an input that makes a decoder cover a block it never covered, or run a block a
// number of times in a new power-of-two bucket, joins the corpus; inputs are mutated from the
// corpus (bit flips, byte sets, inserts, deletes, duplicated ranges, splices of two corpus
// entries, dictionary tokens, truncation). Each target runs in a worker thread; the main thread
// watches a shared heartbeat and saves the input a stuck decoder is working on.
// (@jazzer.js/core was tried first: its prebuilt addon needs glibc 2.38, newer than this
// machine's, and building it fetches libFuzzer from outside the npm registry.)
//
//   node --conditions=source --import tsx bench/fuzz.mjs [--target all|proto-request,hpack,...]
//        [--seconds 60] [--out DIR] [--seed N] [--max-len 4096] [--hang-ms 5000]
//
// Prints per target: executions, executions/s, corpus size, covered blocks, crashes and hangs.
// Crashing inputs go to DIR/crashes/<target>-<hash>.bin with the error beside them (.txt); the
// corpus is kept in DIR/corpus/<target>/ and reloaded by the next run.
import { Worker, isMainThread, workerData, parentPort } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { Session } from 'node:inspector';
import { fileURLToPath } from 'node:url';

const SAB_INPUT_MAX = 1 << 16;

async function main() {
  const { values: args } = parseArgs({
    options: {
      target: { type: 'string', default: 'all' },
      seconds: { type: 'string', default: '60' },
      out: { type: 'string', default: join(tmpdir(), 'rls-fuzz') },
      seed: { type: 'string', default: String(Date.now() % 2 ** 31) },
      'max-len': { type: 'string', default: '4096' },
      'hang-ms': { type: 'string', default: '5000' },
    },
  });
  const { targets } = await import('./fuzz-targets.mjs');
  const names = args.target === 'all' ? Object.keys(targets) : args.target.split(',');
  for (const n of names) if (!(n in targets)) throw new Error(`unknown target ${n}; known: ${Object.keys(targets).join(', ')}`);
  const maxLen = Math.min(Number(args['max-len']), SAB_INPUT_MAX);
  console.log(`fuzz: ${names.length} target(s), ${args.seconds} s each, seed ${args.seed}, out ${args.out}`);
  console.log('target          execs     exec/s  corpus  blocks  crashes  hangs');
  for (const name of names) {
    const r = await runTarget(name, { seconds: Number(args.seconds), out: args.out, seed: Number(args.seed), maxLen, hangMs: Number(args['hang-ms']) });
    console.log(
      `${name.padEnd(14)} ${String(r.execs).padStart(7)} ${r.rate.toFixed(0).padStart(10)} ${String(r.corpus).padStart(7)} ${String(r.blocks).padStart(7)} ${String(r.crashes).padStart(8)} ${String(r.hangs).padStart(6)}`,
    );
    for (const c of r.crashFiles) console.log(`  saved: ${c}`);
  }
}

/** Runs one target in a worker; a worker whose heartbeat stops for hangMs is a hang: its input is saved. */
function runTarget(name, opts) {
  // [executions so far, length of the input being run, 1 once the worker has loaded its target]
  const heartbeat = new Int32Array(new SharedArrayBuffer(12));
  const current = new Uint8Array(new SharedArrayBuffer(SAB_INPUT_MAX));
  return new Promise((resolve, reject) => {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { name, ...opts, heartbeat, current } });
    let last = -1;
    let lastChange = Date.now();
    let hangs = 0;
    const crashFiles = [];
    const watch = setInterval(() => {
      const n = Atomics.load(heartbeat, 0);
      // Loading the target (TypeScript through tsx) can take seconds on a busy machine: not a hang.
      if (Atomics.load(heartbeat, 2) === 0) {
        lastChange = Date.now();
        return;
      }
      if (n !== last) {
        last = n;
        lastChange = Date.now();
        return;
      }
      if (Date.now() - lastChange < opts.hangMs) return;
      const len = Atomics.load(heartbeat, 1);
      const file = saveFinding(opts.out, 'hangs', name, Buffer.from(current.subarray(0, len)), `no progress for ${opts.hangMs} ms`);
      crashFiles.push(file);
      hangs++;
      clearInterval(watch);
      void w.terminate();
      resolve({ execs: n, rate: 0, corpus: 0, blocks: 0, crashes: 0, hangs, crashFiles });
    }, 250);
    w.on('message', (m) => {
      clearInterval(watch);
      resolve({ ...m, hangs, crashFiles: [...crashFiles, ...m.crashFiles] });
    });
    w.on('error', (e) => {
      clearInterval(watch);
      reject(e);
    });
  });
}

function saveFinding(out, kind, name, input, why) {
  const dir = join(out, kind);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${createHash('sha1').update(input).digest('hex').slice(0, 12)}.bin`);
  writeFileSync(file, input);
  writeFileSync(file.replace(/\.bin$/, '.txt'), `${why}\n`);
  return file;
}

// ------------------------------------------------------------------------------------------------
// Worker: the fuzz loop of one target.

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Precise block coverage of the files a target names, read after every execution. */
class Coverage {
  constructor(files) {
    this.files = files;
    this.session = new Session();
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
    /** Every block range ever reported, per function: key -> [start, end]. */
    this.known = new Map();
    /** Blocks covered at least once. */
    this.covered = new Set();
    /** block + hit-count bucket pairs seen. */
    this.buckets = new Set();
    this.take();
  }

  post(method, params) {
    // A session on the same thread answers synchronously.
    let out;
    let err;
    this.session.post(method, params, (e, r) => {
      err = e;
      out = r;
    });
    if (err) throw err;
    return out;
  }

  /**
   * Reads (and resets) the counts; returns true when the execution(s) since the last call reached
   * something new. With `commit` false nothing is recorded (a batch is only being screened).
   */
  take(commit = true) {
    const { result } = this.post('Profiler.takePreciseCoverage');
    let fresh = false;
    for (const script of result) {
      if (!this.files.some((f) => script.url.includes(f))) continue;
      for (const fn of script.functions) {
        const ranges = fn.ranges;
        if (ranges.length === 0 || ranges[0].count === 0) continue;
        const fnKey = `${script.url}#${ranges[0].startOffset}`;
        let known = this.known.get(fnKey);
        if (known === undefined) {
          if (!commit) return true;
          known = new Map();
          this.known.set(fnKey, known);
        }
        for (const r of ranges) {
          const k = `${r.startOffset}-${r.endOffset}`;
          if (known.has(k)) continue;
          if (!commit) return true;
          known.set(k, [r.startOffset, r.endOffset]);
        }
        // A block's count is that of the innermost reported range holding it (V8 leaves out
        // nested ranges whose count equals their parent's).
        for (const [k, [s, e]] of known) {
          let count = 0;
          let width = Infinity;
          for (const r of ranges) {
            if (r.startOffset <= s && r.endOffset >= e && r.endOffset - r.startOffset < width) {
              width = r.endOffset - r.startOffset;
              count = r.count;
            }
          }
          if (count === 0) continue;
          const block = `${fnKey}:${k}`;
          const bucket = `${block}:${31 - Math.clz32(count)}`;
          if (!commit) {
            if (!this.covered.has(block) || !this.buckets.has(bucket)) return true;
            continue;
          }
          if (!this.covered.has(block)) {
            this.covered.add(block);
            fresh = true;
          }
          if (!this.buckets.has(bucket)) {
            this.buckets.add(bucket);
            fresh = true;
          }
        }
      }
    }
    return fresh;
  }
}

function mutate(rand, input, corpus, dict, maxLen) {
  let b = Buffer.from(input);
  const int = (n) => Math.floor(rand() * n);
  const rounds = 1 << int(4);
  for (let i = 0; i < rounds; i++) {
    const at = int(b.length + 1);
    switch (int(10)) {
      case 0:
        if (b.length > 0) b[at % b.length] ^= 1 << int(8);
        break;
      case 1:
        if (b.length > 0) b[at % b.length] = [0, 0x7f, 0x80, 0xff, int(256)][int(5)];
        break;
      case 2: {
        const ins = Buffer.alloc(1 + int(8));
        for (let j = 0; j < ins.length; j++) ins[j] = int(256);
        b = Buffer.concat([b.subarray(0, at), ins, b.subarray(at)]);
        break;
      }
      case 3:
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + int(16))]);
        break;
      case 4: {
        const from = int(b.length + 1);
        const piece = b.subarray(from, from + 1 + int(32));
        b = Buffer.concat([b.subarray(0, at), piece, b.subarray(at)]);
        break;
      }
      case 5: {
        const other = corpus[int(corpus.length)];
        const cut = int(other.length + 1);
        b = Buffer.concat([b.subarray(0, at), other.subarray(cut)]);
        break;
      }
      case 6:
      case 7:
        if (dict.length > 0) b = Buffer.concat([b.subarray(0, at), dict[int(dict.length)], b.subarray(at)]);
        break;
      case 8:
        b = b.subarray(0, at);
        break;
      default:
        if (dict.length > 0 && b.length > 0) {
          // Overwrite rather than insert, so lengths stay where they were.
          const tok = dict[int(dict.length)];
          b = Buffer.concat([b.subarray(0, at), tok, b.subarray(at + tok.length)]);
        }
    }
  }
  return b.length > maxLen ? b.subarray(0, maxLen) : b;
}

async function fuzzWorker({ name, seconds, out, seed, maxLen, heartbeat, current }) {
  // Loader hooks from `--import tsx` do not reach worker threads on Node 20: register them here.
  const { register } = await import('tsx/esm/api');
  register();
  const { targets } = await import('./fuzz-targets.mjs');
  const target = await targets[name]();
  const corpusDir = join(out, 'corpus', name);
  const corpus = [...target.seeds];
  if (existsSync(corpusDir)) for (const f of readdirSync(corpusDir)) corpus.push(readFileSync(join(corpusDir, f)));
  if (corpus.length === 0) corpus.push(Buffer.alloc(0));
  const rand = mulberry32(seed);
  const cov = new Coverage(target.files);
  const crashes = new Map();
  let execs = 0;
  Atomics.store(heartbeat, 2, 1);

  /** Runs one input; returns whether it reached new coverage (read only when `measure`). */
  const exec = (input, measure = true) => {
    current.set(input.subarray(0, SAB_INPUT_MAX));
    Atomics.store(heartbeat, 1, Math.min(input.length, SAB_INPUT_MAX));
    try {
      target.run(input);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      // One saved input per kind of failure: the error's class and where it was thrown.
      const sig = `${err.name} @ ${(err.stack ?? '').split('\n')[1]?.trim() ?? ''}`;
      if (!crashes.has(sig)) crashes.set(sig, saveFinding(out, 'crashes', name, input, `${err.stack ?? err.message}`));
    }
    execs++;
    Atomics.store(heartbeat, 0, execs);
    return measure ? cov.take() : false;
  };

  // The seeds (and a reloaded corpus) first, keeping only those that add coverage.
  const kept = [];
  for (const input of corpus) if (exec(input) || kept.length === 0) kept.push(input);
  const started = Date.now();
  const deadline = started + seconds * 1000;
  // Reading coverage costs far more than one decode, so inputs run in batches and the counts are
  // read once per batch; only a batch that reached something new is replayed input by input to
  // find which inputs to keep.
  const BATCH = 32;
  const batch = [];
  while (Date.now() < deadline) {
    batch.length = 0;
    for (let i = 0; i < BATCH; i++) {
      const input = mutate(rand, kept[Math.floor(rand() * kept.length)], kept, target.dict, maxLen);
      batch.push(input);
      exec(input, false);
    }
    if (!cov.take(false)) continue;
    for (const input of batch) if (exec(input)) kept.push(input);
  }
  const elapsed = (Date.now() - started) / 1000;
  mkdirSync(corpusDir, { recursive: true });
  for (const input of kept) writeFileSync(join(corpusDir, createHash('sha1').update(input).digest('hex').slice(0, 16)), input);
  parentPort.postMessage({ execs, rate: execs / elapsed, corpus: kept.length, blocks: cov.covered.size, crashes: crashes.size, crashFiles: [...crashes.values()] });
}

// Last, so the classes and helpers above are initialised before either side runs.
if (isMainThread) await main();
else await fuzzWorker(workerData);
