#!/usr/bin/env node
// Launcher for the compiled CLI (`npm run build` / `tsc -b` produces dist/).
import '../dist/src/cli/main.js';
