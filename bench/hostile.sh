#!/usr/bin/env bash
# A well-behaved client's p99 latency alone and beside each attack of issues 12 and 23 (memory, idle and
# slow connections, rapid reset, CONTINUATION flood, empty DATA, huge requests, gzip bombs, /stats scraping).
# Needs redis-server and a built tree (`npx tsc -b`); `--help` lists the options. See bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node bench/hostile.mjs "$@"
