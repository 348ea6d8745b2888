#!/usr/bin/env bash
# Quotes service benchmarks. Prints figures; asserts nothing. The machine is shared, so numbers
# are indicative. Servers run from the build (dist/): run `npm run build` first. Usage: bash bench/quotes.sh [seconds-per-wrk-run] [candles-to-load]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-10}"
CANDLES="${2:-5000000}"
TSX=(node --conditions=source --import tsx)
WORK="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT INT TERM PIPE

wait_line() { # file -> first line once present
  for _ in $(seq 1 300); do [ -s "$1" ] && { head -1 "$1"; return; }; sleep 0.1; done
  echo "server did not start: $(cat "$1")" >&2; exit 1
}

echo "== 1. cached GET /api/v2/crypto?coin=BTC,ETH,SOL at 50 connections (wrk, ${DUR}s each)"
node bench/quotes-servers.mjs quotes > "$WORK/quotes.json" 2>"$WORK/quotes.err" & PIDS+=($!)
Q="$(wait_line "$WORK/quotes.json")"
QPORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$Q")"
TOKEN="$(node -e "console.log(JSON.parse(process.argv[1]).token)" "$Q")"
URL_PATH="/api/v2/crypto?coin=BTC,ETH,SOL"
curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH" > "$WORK/body.json"
echo "   response: $(wc -c < "$WORK/body.json") bytes"
node bench/quotes-servers.mjs plain "$WORK/body.json" > "$WORK/plain.json" 2>"$WORK/plain.err" & PIDS+=($!)
PPORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$(wait_line "$WORK/plain.json")")"

run_wrk() { wrk -t2 -c50 -d"${DUR}s" --latency "$@" | tee -a "$WORK/wrk.log" | awk '/Requests\/sec/ {print $2} /^ +50%/ {p50=$2} END {}' | head -1; }
# Warm both servers (JIT, caches) before measuring.
wrk -t2 -c50 -d2s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH" > /dev/null
wrk -t2 -c50 -d2s "http://127.0.0.1:$PPORT$URL_PATH" > /dev/null
PLAIN="$(run_wrk "http://127.0.0.1:$PPORT$URL_PATH")"
QUOTES="$(run_wrk -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH")"
node -e '
const [p, q] = process.argv.slice(1).map(Number);
console.log(`   plain fastify (same bytes from memory): ${p.toFixed(0)} req/s`);
console.log(`   quotes service (auth + usage write + cache): ${q.toFixed(0)} req/s`);
console.log(`   ratio: ${(100 * q / p).toFixed(1)} %  (target >= 60 %)`);' "$PLAIN" "$QUOTES"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; PIDS=()

echo "== 2. 1 year of daily history for 10 coins"
"${TSX[@]}" bench/quotes-history.mjs | sed 's/^/   /'

echo "== 3. bulk load of 1-minute candles into SQLite"
"${TSX[@]}" bench/quotes-load.mjs "$CANDLES" | sed 's/^/   /'

echo "== 4. import-klines: a year of 1-minute klines (525,600 rows) from a Binance CSV into SQLite"
"${TSX[@]}" bench/quotes-import.mjs | sed 's/^/   /'
