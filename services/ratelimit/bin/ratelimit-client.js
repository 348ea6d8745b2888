#!/usr/bin/env node
// Command-line RLS client: ratelimit-client -dial_string HOST:PORT -domain D -descriptors k=v,k2=v2
import { main } from '../dist/src/cli/ratelimit-client.js';

process.exitCode = await main(process.argv.slice(2));
