// The engine's import graph drawn as floors (packages/testkit/src/floors.ts reads it): each
// top-level folder or file of packages/engine/src is a room, and a room stands above every room it
// imports. That is possible exactly when the rooms' imports form no loop, so no import runs back up a
// floor; files do not import each other in a loop either. Today's floors, ground up: clock.ts,
// domain.ts, errors.ts, maybe-promise.ts, units.ts, stats/; store/; config/; limiter/; quota/, service.ts; index.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileGraph, findLoop, roomLoop } from '@rls/testkit';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

test('the import reader sees the engine (every relative import names a file that exists)', () => {
  const graph = fileGraph(SRC);
  assert.ok(graph.size > 30, `found ${graph.size} files`);
  assert.ok(graph.get(join('config', 'rule-set.ts'))?.has('units.ts'));
  for (const [file, deps] of graph) for (const d of deps) assert.ok(graph.has(d), `${file} imports ${d}, which is not a source file`);
});

test('no import runs back up a floor: the rooms (top-level folders and files) import each other in no loop', () => {
  const loop = roomLoop(fileGraph(SRC));
  assert.equal(loop, undefined, `rooms in a loop: ${loop}`);
});

test('no two files import each other in a loop', () => {
  const loop = findLoop(fileGraph(SRC));
  assert.equal(loop, undefined, `files in a loop: ${loop?.join(' -> ')}`);
});
