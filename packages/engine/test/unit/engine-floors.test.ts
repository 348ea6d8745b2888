// The engine's import graph drawn as floors (packages/testkit/src/floors.ts reads it): each
// top-level folder or file of packages/engine/src is a room, and a room stands above every room it
// imports. That is possible exactly when the rooms' imports form no loop, so no import runs back up a
// floor; files do not import each other in a loop either. Today's floors, ground up: clock.ts,
// domain.ts, errors.ts, maybe-promise.ts, units.ts, stats/; store/; config/; limiter/; quota/, service.ts; index.ts.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importGraphTests } from '@rls/testkit';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

importGraphTests(SRC, 'the engine', 30, [join('config', 'rule-set.ts'), 'units.ts']);
