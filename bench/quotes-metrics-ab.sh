#!/usr/bin/env bash
# Prints figures, asserts nothing. A/B: quotes through fastify's route (QUOTES_FAST_PATH=false), with and without the metrics hook.
# Usage: bash bench/quotes-metrics-ab.sh [seconds-per-run]. CPU per request is the server's user+system time over the requests served.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-6}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for round in 1 2 3; do
 for m in 0 9999; do
  QUOTES_LOG_LEVEL=warn QUOTES_FAST_PATH=false QUOTES_METRICS_PORT=$m node --conditions=source --import tsx bench/quotes-servers.mjs quotes > "$WORK"/srv.$m 2>&1 &
  pid=$!
  for i in $(seq 1 200); do [ -s "$WORK"/srv.$m ] && break; sleep 0.1; done
  line=$(head -1 "$WORK"/srv.$m); port=$(echo "$line" | sed 's/.*"port":\([0-9]*\).*/\1/'); tok=$(echo "$line" | sed 's/.*"token":"\([^"]*\)".*/\1/')
  wrk -t1 -c20 -d3s -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v2/crypto?coin=BTC,ETH,SOL" >/dev/null
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  r=$(wrk -t1 -c20 -d"${DUR}s" -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v2/crypto?coin=BTC,ETH,SOL" | awk '/Requests\/sec/ {print $2} /requests in/ {print $1}')
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  n=$(echo "$r" | head -1); rps=$(echo "$r" | tail -1)
  echo "round $round metrics=$([ $m = 0 ] && echo off || echo on) req/s=$rps cpu_us_per_req=$(( (t1-t0)*10000/n ))"
  kill $pid; wait $pid 2>/dev/null || true
 done
done
