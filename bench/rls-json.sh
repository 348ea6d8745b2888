#!/usr/bin/env bash
# HTTP /json throughput/latency of ShouldRateLimit (wrk). Needs wrk and redis-server; run after
# `npm install` (which builds dist/).
set -euo pipefail
cd "$(dirname "$0")/.."
exec node bench/rls-json.mjs "$@"
