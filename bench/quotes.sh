#!/usr/bin/env bash
# Quotes service benchmarks. Prints figures; asserts nothing. The machine is shared, so numbers
# are indicative. Servers run from the build (dist/): run `npm run build` first. Usage: bash bench/quotes.sh [seconds-per-wrk-run] [candles-to-load]
# (ROUNDS=n: rounds of the three servers in section 1, alternated so drift hits them alike; default 3).
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

ROUNDS="${ROUNDS:-3}"
echo "== 1. cached GET /api/v2/crypto?coin=BTC,ETH,SOL at 50 connections (wrk -t2 -c50, ${DUR}s a run, ${ROUNDS} rounds, medians)"
node bench/quotes-servers.mjs quotes > "$WORK/quotes.json" 2>"$WORK/quotes.err" & PIDS+=($!)
Q="$(wait_line "$WORK/quotes.json")"
QPORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$Q")"
TOKEN="$(node -e "console.log(JSON.parse(process.argv[1]).token)" "$Q")"
URL_PATH="/api/v2/crypto?coin=BTC,ETH,SOL"
curl -s -D "$WORK/headers.txt" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH" > "$WORK/body.json"
echo "   response: $(wc -c < "$WORK/body.json") bytes of body, $(grep -c ':' "$WORK/headers.txt") header lines"
# Baselines: the body alone, and the same bytes (the service's header lines too).
node bench/quotes-servers.mjs plain "$WORK/body.json" > "$WORK/plain.json" 2>"$WORK/plain.err" & PIDS+=($!)
PPORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$(wait_line "$WORK/plain.json")")"
node bench/quotes-servers.mjs plain "$WORK/body.json" "$WORK/headers.txt" > "$WORK/same.json" 2>"$WORK/same.err" & PIDS+=($!)
SPORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$(wait_line "$WORK/same.json")")"

rps() { wrk -t2 -c50 -d"${DUR}s" "$@" | awk '/Requests\/sec/ {print $2}'; }
# Warm all three (JIT, caches) before measuring.
for p in "$PPORT" "$SPORT"; do wrk -t2 -c50 -d2s "http://127.0.0.1:$p$URL_PATH" > /dev/null; done
wrk -t2 -c50 -d2s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH" > /dev/null
P=(); S=(); R=()
for _ in $(seq 1 "$ROUNDS"); do
  P+=("$(rps "http://127.0.0.1:$PPORT$URL_PATH")")
  S+=("$(rps "http://127.0.0.1:$SPORT$URL_PATH")")
  R+=("$(rps -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH")")
done
node -e '
const [p, s, q] = process.argv.slice(1).map((x) => x.trim().split(/\s+/).map(Number));
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const row = (name, a) => console.log(`   ${name.padEnd(48)} median ${med(a).toFixed(0).padStart(6)} req/s  (runs: ${a.map((x) => x.toFixed(0)).join(", ")})`);
row("plain fastify, body alone from memory", p);
row("plain fastify, same bytes (headers + body)", s);
row("quotes service (auth + quota count + cache)", q);
console.log(`   ratio to the body-alone server: ${(100 * med(q) / med(p)).toFixed(1)} %   to the same-bytes server: ${(100 * med(q) / med(s)).toFixed(1)} %  (target >= 60 %)`);' "${P[*]}" "${S[*]}" "${R[*]}"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; PIDS=()

echo "== 2. 1 year of daily history for 10 coins"
"${TSX[@]}" bench/quotes-history.mjs | sed 's/^/   /'

echo "== 3. bulk load of 1-minute candles into SQLite"
"${TSX[@]}" bench/quotes-load.mjs "$CANDLES" | sed 's/^/   /'

echo "== 4. import-klines: a year of 1-minute klines (525,600 rows) from a Binance CSV into SQLite"
"${TSX[@]}" bench/quotes-import.mjs | sed 's/^/   /'
