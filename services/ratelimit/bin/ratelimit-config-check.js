#!/usr/bin/env node
// Validates a directory of rule files: ratelimit-config-check -config_dir DIR
import { main } from '../dist/src/cli/ratelimit-config-check.js';

process.exitCode = main(process.argv.slice(2));
