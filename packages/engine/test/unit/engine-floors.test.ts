// The engine's import graph drawn as floors (as `farm-studio look packages/engine/src` draws it): each
// top-level folder or file of packages/engine/src is a room, and a room stands above every room it
// imports. That is possible exactly when the rooms' imports form no loop, so no import runs back up a
// floor; files do not import each other in a loop either. Today's floors, ground up: clock.ts,
// domain.ts, errors.ts, units.ts, stats/; store/; config/; limiter/; quota/, service.ts; index.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sourceFiles(p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(relative(SRC, p));
  }
  return out;
}

/** file -> the files it imports (relative to src, .ts). */
function fileGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const deps = new Set<string>();
    for (const m of readFileSync(join(SRC, file), 'utf8').matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2])!;
      deps.add(relative(SRC, resolve(SRC, dirname(file), spec.replace(/\.js$/, '.ts'))));
    }
    graph.set(file, deps);
  }
  return graph;
}

const roomOf = (file: string): string => file.split(sep)[0]!;

/** A loop in `graph` as its path, or undefined. */
function findLoop(graph: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (n: string): string[] | undefined => {
    if (state.get(n) === 'done') return undefined;
    if (state.get(n) === 'open') return [...path.slice(path.indexOf(n)), n];
    state.set(n, 'open');
    path.push(n);
    for (const d of graph.get(n) ?? []) {
      const loop = visit(d);
      if (loop !== undefined) return loop;
    }
    path.pop();
    state.set(n, 'done');
    return undefined;
  };
  for (const n of graph.keys()) {
    const loop = visit(n);
    if (loop !== undefined) return loop;
  }
  return undefined;
}

test('the import reader sees the engine (every relative import names a file that exists)', () => {
  const graph = fileGraph();
  assert.ok(graph.size > 30, `found ${graph.size} files`);
  assert.ok(graph.get(join('config', 'rule-set.ts'))?.has('units.ts'));
  for (const [file, deps] of graph) for (const d of deps) assert.ok(graph.has(d), `${file} imports ${d}, which is not a source file`);
});

test('no import runs back up a floor: the rooms (top-level folders and files) import each other in no loop', () => {
  const rooms = new Map<string, Set<string>>();
  const why = new Map<string, string>();
  for (const [file, deps] of fileGraph()) {
    const from = roomOf(file);
    const set = rooms.get(from) ?? new Set<string>();
    rooms.set(from, set);
    for (const d of deps) {
      const to = roomOf(d);
      if (to === from) continue;
      set.add(to);
      why.set(`${from}>${to}`, `${file} -> ${d}`);
    }
  }
  const loop = findLoop(rooms);
  const arrows = loop?.slice(1).map((to, i) => why.get(`${loop[i]!}>${to}`));
  assert.equal(loop, undefined, `rooms in a loop: ${loop?.join(' -> ')} (${arrows?.join('; ')})`);
});

test('no two files import each other in a loop', () => {
  const loop = findLoop(fileGraph());
  assert.equal(loop, undefined, `files in a loop: ${loop?.join(' -> ')}`);
});
