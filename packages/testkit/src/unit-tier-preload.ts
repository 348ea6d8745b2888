// Loaded by scripts/run-tests.mjs with `--import` into every test process; it does nothing
// outside a unit test file (see tier-guard.ts for why and how).
import { installUnitTierGuard } from './tier-guard.js';

installUnitTierGuard();
