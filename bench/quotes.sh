#!/usr/bin/env bash
# Quotes service benchmarks. Prints figures; asserts nothing. The machine is shared, so numbers
# are indicative. Servers run from source (tsx). Usage: bash bench/quotes.sh [seconds-per-wrk-run] [candles-to-load]
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
echo "   quotes at its defaults: access log at ${QUOTES_LOG_LEVEL:-info} (to a file), burst limits on (embedded, lifted), fast path ${QUOTES_FAST_PATH:-true}"
echo "   every round starts the three servers afresh: node's own per-request work (e.g. process.nextTick) runs at one"
echo "   of two speeds for a process's whole life depending on what V8 happened to optimize first, so one process"
echo "   pair would be a draw; medians over fresh processes compare the servers, not the draws"
URL_PATH="/api/v2/crypto?coin=BTC,ETH,SOL"
# One run against server PID: "req/s,CPU µs per request" (the server's user+system time over the
# requests served: steadier than req/s on a shared machine, where the load generator and other
# processes take the cores).
rps() { wrk -t2 -c50 -d"${DUR}s" "$@" | awk '/Requests\/sec/ {print $2}'; }
TCK="$(getconf CLK_TCK)"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() {
  local pid="$1"; shift
  local t0; t0="$(ticks "$pid")"
  local out; out="$(wrk -t2 -c50 -d"${DUR}s" "$@")"
  local t1; t1="$(ticks "$pid")"
  awk -v t="$((t1 - t0))" -v tck="$TCK" '/requests in/ {n = $1} /Requests\/sec/ {r = $2} END {printf "%s,%.2f", r, t / tck * 1e6 / n}' <<< "$out"
}
start_quotes() { # -> QPID QPORT TOKEN
  : > "$WORK/quotes.json"
  BENCH_LOG_FILE="$WORK/access.log" "${TSX[@]}" bench/quotes-servers.mjs quotes > "$WORK/quotes.json" 2>"$WORK/quotes.err" & PIDS+=($!); QPID=$!
  local q; q="$(wait_line "$WORK/quotes.json")"
  QPORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$q")"
  TOKEN="$(node -e "console.log(JSON.parse(process.argv[1]).token)" "$q")"
}
start_plain() { # name body [headers] -> port on stdout, pid in PLAIN_PID
  : > "$WORK/$1.json"
  "${TSX[@]}" bench/quotes-servers.mjs plain "${@:2}" > "$WORK/$1.json" 2>"$WORK/$1.err" & PIDS+=($!); PLAIN_PID=$!
  PLAIN_PORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$(wait_line "$WORK/$1.json")")"
}
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; PIDS=(); }
start_quotes
curl -s -D "$WORK/headers.txt" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH" > "$WORK/body.json"
echo "   response: $(wc -c < "$WORK/body.json") bytes of body, $(grep -c ':' "$WORK/headers.txt") header lines"
stop_all
P=(); S=(); R=()
for round in $(seq 1 "$ROUNDS"); do
  # Baselines: the body alone, and the same bytes (the service's header lines too).
  start_plain plain "$WORK/body.json"; PPID_=$PLAIN_PID; PPORT=$PLAIN_PORT
  start_plain same "$WORK/body.json" "$WORK/headers.txt"; SPID=$PLAIN_PID; SPORT=$PLAIN_PORT
  start_quotes
  # Each server warmed (JIT, caches, heap sizes) right before it is measured: an idle pause in
  # between lets V8 shrink the young generation again, and the run would measure it regrowing.
  warm() { wrk -t2 -c50 -d"${WARM:-4}s" "$@" > /dev/null; }
  warm "http://127.0.0.1:$PPORT$URL_PATH"; P+=("$(run "$PPID_" "http://127.0.0.1:$PPORT$URL_PATH")")
  warm "http://127.0.0.1:$SPORT$URL_PATH"; S+=("$(run "$SPID" "http://127.0.0.1:$SPORT$URL_PATH")")
  warm -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH"; R+=("$(run "$QPID" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$QPORT$URL_PATH")")
  if [ "$round" -lt "$ROUNDS" ]; then stop_all; fi
done
node -e '
const runs = process.argv.slice(1).map((x) => x.trim().split(/\s+/).map((r) => r.split(",").map(Number)));
const [p, s, q] = runs.map((a) => a.map((r) => r[0]));
const [pc, sc, qc] = runs.map((a) => a.map((r) => r[1]));
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const row = (name, a, c) => console.log(`   ${name.padEnd(48)} median ${med(a).toFixed(0).padStart(6)} req/s, ${med(c).toFixed(1).padStart(5)} µs CPU/req  (runs: ${a.map((x) => x.toFixed(0)).join(", ")})`);
row("plain fastify, body alone from memory", p, pc);
row("plain fastify, same bytes (headers + body)", s, sc);
row("quotes service (auth + quota count + cache)", q, qc);
console.log(`   ratio to the body-alone server: ${(100 * med(q) / med(p)).toFixed(1)} %   to the same-bytes server: ${(100 * med(q) / med(s)).toFixed(1)} %  (target >= 60 %)`);
console.log(`   per round (fresh processes): ${q.map((x, i) => (100 * x / p[i]).toFixed(1) + " %").join(", ")} of the body-alone server`);
console.log(`   by CPU per request: ${(100 * med(pc) / med(qc)).toFixed(1)} % of the body-alone server, ${(100 * med(sc) / med(qc)).toFixed(1)} % of the same-bytes server`);' "${P[*]}" "${S[*]}" "${R[*]}"
echo "   access log: $(grep -c '"request completed"' "$WORK/access.log" || true) \"request completed\" lines written"
# What fetch and the brapi SDK send: compressed when the body reaches QUOTES_COMPRESSION_MIN_BYTES
# (by the pipeline's writer with the compression plugin's choices), else as the rows above.
AE="gzip, deflate, br"
ENC="$(curl -s -o /dev/null -D - -H "Authorization: Bearer $TOKEN" -H "Accept-Encoding: $AE" "http://127.0.0.1:$QPORT$URL_PATH" | awk -F': ' 'tolower($1)=="content-encoding" {print $2}' | tr -d '\r')"
echo "   with Accept-Encoding: $AE (content-encoding: ${ENC:-none}): $(rps -H "Authorization: Bearer $TOKEN" -H "Accept-Encoding: $AE" "http://127.0.0.1:$QPORT$URL_PATH") req/s (one run)"
stop_all

echo "== 1b. CPU per cached quote through the pre-router and the pipeline, in-process (access log info/warn, burst limits on/off)"
"${TSX[@]}" bench/quotes-fastpath-cpu.mjs | sed 's/^/   /'

echo "== 2. 1 year of daily history for 10 coins"
"${TSX[@]}" bench/quotes-history.mjs | sed 's/^/   /'

echo "== 3. bulk load of 1-minute candles into SQLite"
"${TSX[@]}" bench/quotes-load.mjs "$CANDLES" | sed 's/^/   /'

echo "== 4. import-klines: a year of 1-minute klines (525,600 rows) from a Binance CSV into SQLite"
"${TSX[@]}" bench/quotes-import.mjs | sed 's/^/   /'

echo "== 5. live-price streams: ${STREAMS:-1000} concurrent SSE streams held open (memory per stream, update fan-out latency)"
STREAMS="${STREAMS:-1000}" STREAM_SECONDS="${STREAM_SECONDS:-$DUR}" node bench/quotes-streams.mjs | sed 's/^/   /'

echo "== 6. history under load: a cheap quote beside the heaviest history request the default budget admits (real process; RSS)"
"${TSX[@]}" bench/quotes-history-load.mjs "$DUR" | sed 's/^/   /'

echo "== 7. CoinGecko-compatible GET /api/v3/coins/markets?vs_currency=brl&per_page=100&sparkline=true"
CG_PATH="/api/v3/coins/markets?vs_currency=brl&per_page=100&sparkline=true"
"${TSX[@]}" bench/quotes-servers.mjs quotes > "$WORK/cg.json" 2>"$WORK/cg.err" & PIDS+=($!)
CG="$(wait_line "$WORK/cg.json")"
CGPORT="$(node -e "console.log(JSON.parse(process.argv[1]).port)" "$CG")"
CGTOKEN="$(node -e "console.log(JSON.parse(process.argv[1]).token)" "$CG")"
curl -s -o "$WORK/cg-body.json" -w "   first request (fills 7 days of hourly candles): %{time_total} s, %{size_download} bytes\n" -H "x-cg-demo-api-key: $CGTOKEN" "http://127.0.0.1:$CGPORT$CG_PATH"
wrk -t2 -c50 -d2s -H "x-cg-demo-api-key: $CGTOKEN" "http://127.0.0.1:$CGPORT$CG_PATH" > /dev/null
echo "   wrk -t2 -c50 -d${DUR}s --latency (a market refresh every QUOTES_REFRESH_SECONDS rebuilds the page; between refreshes the body cache answers):"
wrk -t2 -c50 -d"${DUR}s" --latency -H "x-cg-demo-api-key: $CGTOKEN" "http://127.0.0.1:$CGPORT$CG_PATH" | awk '/^ +50%|^ +99%|Requests\/sec|Non-2xx/ {print "     " $0}'
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; PIDS=()
echo "   in process, every request a new market snapshot (page rebuilt) vs the same snapshot:"
"${TSX[@]}" bench/quotes-coingecko.mjs "${CG_REQUESTS:-200}" | sed 's/^/     /'

echo "== 8. replicas: three quotes replicas on one PostgreSQL behind a round-robin client, one fake exchange, burst limits in the ratelimit service (lifted)"
"${TSX[@]}" bench/quotes-replicas.mjs "$DUR" "${REPLICA_CONNECTIONS:-8}" | sed 's/^/   /'
