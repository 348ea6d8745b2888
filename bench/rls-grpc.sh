#!/usr/bin/env bash
# gRPC throughput/latency of ShouldRateLimit against Redis (fixed window, sliding window, token
# bucket), next to a no-op grpc-js server and a rate-limiter-flexible + ioredis server measured in
# the same run. Needs h2load (nghttp2-client) and redis-server; run after `npm install` (which
# builds dist/).
set -euo pipefail
cd "$(dirname "$0")/.."
# `bench/rls-grpc.sh cluster`: Redis Cluster with 1 and 5 descriptors per request (rls-grpc-cluster.mjs).
if [ "${1:-}" = "cluster" ]; then shift; exec node bench/rls-grpc-cluster.mjs "$@"; fi
# `bench/rls-grpc.sh algorithms`: fixed window, sliding window and token bucket on Redis, side by side.
if [ "${1:-}" = "algorithms" ]; then shift; ONLY="ours/redis,ours/redis sliding,ours/redis bucket" exec node bench/rls-grpc.mjs "$@"; fi
# `bench/rls-grpc.sh limits`: one limit against two per descriptor (rate_limits) on Redis, and the plain fixed
# window against another checkout's (BASELINE_ROOT=<built checkout>, e.g. the commit before a change), interleaved.
if [ "${1:-}" = "limits" ]; then shift; ONLY="ours/redis,ours/redis two limits${BASELINE_ROOT:+,baseline/redis}" exec node bench/rls-grpc.mjs "$@"; fi
exec node bench/rls-grpc.mjs "$@"
