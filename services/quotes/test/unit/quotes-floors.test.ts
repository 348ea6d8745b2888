// The quotes service's import graph drawn as floors (packages/testkit/src/floors.ts reads it, as it
// reads the engine's): each top-level folder or file of services/quotes/src is a room, and a room
// stands above every room it imports. That is possible exactly when the rooms' imports form no loop,
// so no import runs back up a floor; files do not import each other in a loop either.
//
// Today's floors, ground up (a room on the lowest floor above everything it imports; the last test
// holds this list against the code):
//   0  clock.ts, domain/, errors.ts, http/, maybe-promise.ts, package-root.ts
//      (domain/: the time vocabulary intervals.ts, the market and repository ports market.ts,
//      repositories.ts, dashboard-repositories.ts, and value-precision.ts; http/: the query-string
//      parser and where credentials are read, shared by the routes and the logger)
//   1  history/, logger.ts, market/, origin.ts, store/
//   2  accounts/, import/
//   3  ratelimit/, service/
//   4  api/
//   5  coingecko/, stream/
//   6  dashboard/, observability/, openapi.ts
//   7  settings.ts
//   8  cluster/, market-sources.ts, settings-doc.ts
//   9  app.ts
//  10  compose.ts
//  11  main.ts
//  12  cli/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileGraph, floorsOf, importGraphTests } from '@rls/testkit';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

const FLOORS = [
  ['clock.ts', 'domain', 'errors.ts', 'http', 'maybe-promise.ts', 'package-root.ts'],
  ['history', 'logger.ts', 'market', 'origin.ts', 'store'],
  ['accounts', 'import'],
  ['ratelimit', 'service'],
  ['api'],
  ['coingecko', 'stream'],
  ['dashboard', 'observability', 'openapi.ts'],
  ['settings.ts'],
  ['cluster', 'market-sources.ts', 'settings-doc.ts'],
  ['app.ts'],
  ['compose.ts'],
  ['main.ts'],
  ['cli'],
];

importGraphTests(SRC, 'the quotes service', 100, [join('history', 'resample.ts'), join('domain', 'intervals.ts')]);

test('the floors are the ones this file and docs/architecture.md list', () => {
  assert.deepEqual(floorsOf(fileGraph(SRC)), FLOORS);
});
