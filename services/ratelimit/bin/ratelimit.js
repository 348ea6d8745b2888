#!/usr/bin/env node
// The rate limit service (settings from the environment; see docs/ratelimit.md).
import { run } from '../dist/src/main.js';

await run();
