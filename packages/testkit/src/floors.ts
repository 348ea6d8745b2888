// A source tree's import graph drawn as floors: each top-level folder or file of the tree is a room,
// and a room stands above every room it imports. That is possible exactly when the rooms' imports form
// no loop, so no import runs back up a floor. The floors tests of the engine and of quotes read their
// trees through this one reader. It reads relative imports as text (static `import`/`export ... from`
// and `import('...')`); package imports are outside the tree and draw no arrow.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** The .ts files under `src` (tests beside the code, `*.test.ts`, left out), relative to `src`. */
function sourceFiles(src: string, dir = src, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sourceFiles(src, p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(relative(src, p));
  }
  return out;
}

/** file -> the files it imports, both relative to `src` and named as .ts. */
export function fileGraph(src: string): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(src)) {
    const deps = new Set<string>();
    for (const m of readFileSync(join(src, file), 'utf8').matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2])!;
      deps.add(relative(src, resolve(src, dirname(file), spec.replace(/\.js$/, '.ts'))));
    }
    graph.set(file, deps);
  }
  return graph;
}

/** The room a file stands in: its top-level folder, or the file itself when it sits at the top. */
export const roomOf = (file: string): string => file.split(sep)[0]!;

/** The rooms' graph, with one file-level import that explains each room-level arrow (`from>to`). */
export function roomGraph(files: Map<string, Set<string>>): { rooms: Map<string, Set<string>>; why: Map<string, string> } {
  const rooms = new Map<string, Set<string>>();
  const why = new Map<string, string>();
  for (const [file, deps] of files) {
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
  return { rooms, why };
}

/** A loop in `graph` as its path (first node repeated at the end), or undefined. */
export function findLoop(graph: Map<string, Set<string>>): string[] | undefined {
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

/** A loop between the rooms of `files`, explained arrow by arrow, or undefined when the rooms stand in floors. */
export function roomLoop(files: Map<string, Set<string>>): string | undefined {
  const { rooms, why } = roomGraph(files);
  const loop = findLoop(rooms);
  if (loop === undefined) return undefined;
  const arrows = loop.slice(1).map((to, i) => why.get(`${loop[i]!}>${to}`));
  return `${loop.join(' -> ')} (${arrows.join('; ')})`;
}

/**
 * The floors, ground up: each room on the lowest floor above every room it imports (rooms on one floor
 * import none of each other). Undefined when the rooms are in a loop.
 */
export function floorsOf(files: Map<string, Set<string>>): string[][] | undefined {
  const { rooms } = roomGraph(files);
  if (findLoop(rooms) !== undefined) return undefined;
  const level = new Map<string, number>();
  const levelOf = (r: string): number => {
    const known = level.get(r);
    if (known !== undefined) return known;
    let l = 0;
    for (const d of rooms.get(r) ?? []) if (rooms.has(d)) l = Math.max(l, levelOf(d) + 1);
    level.set(r, l);
    return l;
  };
  const floors: string[][] = [];
  for (const r of [...rooms.keys()].sort()) (floors[levelOf(r)] ??= []).push(r);
  return floors;
}

/**
 * The three tests every floors file runs on its tree: the reader sees it (more than `minFiles` files,
 * the import `sample` among them, every relative import naming a file that exists), the rooms
 * import each other in no loop, and no two files do.
 */
export function importGraphTests(src: string, what: string, minFiles: number, sample: [from: string, to: string]): void {
  test(`the import reader sees ${what} (every relative import names a file that exists)`, () => {
    const graph = fileGraph(src);
    assert.ok(graph.size > minFiles, `found ${graph.size} files`);
    assert.ok(graph.get(sample[0])?.has(sample[1]));
    for (const [file, deps] of graph) for (const d of deps) assert.ok(graph.has(d), `${file} imports ${d}, which is not a source file`);
  });

  test('no import runs back up a floor: the rooms (top-level folders and files) import each other in no loop', () => {
    const loop = roomLoop(fileGraph(src));
    assert.equal(loop, undefined, `rooms in a loop: ${loop}`);
  });

  test('no two files import each other in a loop', () => {
    const loop = findLoop(fileGraph(src));
    assert.equal(loop, undefined, `files in a loop: ${loop?.join(' -> ')}`);
  });
}
