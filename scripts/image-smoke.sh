#!/usr/bin/env bash
# Smoke test of the container images and the compose stack, on this machine, with rootful podman:
#   1. the local Debian base images (scripts/build-base-image.sh; skipped when present)
#   2. both service images built from them (build time and size printed)
#   3. ratelimit: a gRPC decision and /healthcheck; quotes: /health and a token-authenticated quote;
#      each runs as uid 1000 on a read-only root filesystem, its HEALTHCHECK passes, and
#      `podman stop` ends it within the drain time with exit code 0 (cold start and RSS printed)
#   4. the stack command (scripts/stack.sh) on free ports: refused, naming the port and its holder,
#      while a port is taken; brought up until every healthcheck passes, a quote fetched through it
#      (token created on one quotes replica, used on the other: they share PostgreSQL), torn down;
#      brought up with a crash-looping quotes replica: non-zero, naming it, with its log lines.
# Run as root from anywhere: scripts/image-smoke.sh   (.ci/run runs it when podman is installed)
# Env: TAG (default smoke), SKIP_BUILD=1 (use the images already tagged TAG), SKIP_COMPOSE=1,
#      NPM_CA_FILE (CA bundle for npm behind a TLS-intercepting proxy; default NODE_EXTRA_CA_CERTS).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=deploy/podman/podman-env.sh
. deploy/podman/podman-env.sh

TAG=${TAG:-smoke}
BUILD_IMAGE=localhost/rls-node20-build:bookworm
RUNTIME_IMAGE=localhost/rls-node20-base:bookworm
RL_IMAGE=localhost/rls-ratelimit:$TAG
Q_IMAGE=localhost/rls-quotes:$TAG
PROJECT=rls-smoke
# The services' own bound after the drain delay; `podman stop` must not need its SIGKILL.
STOP_TIMEOUT=20
containers=()

log() { printf '\n== %s\n' "$*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
cleanup() {
  for c in "${containers[@]}"; do podman rm -f -v "$c" >/dev/null 2>&1 || true; done
  if [ "${compose_up:-0}" = 1 ]; then
    RLS_STACK_PROJECT=$PROJECT RLS_STACK_RUNTIME=podman scripts/stack.sh down --volumes >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# A free loopback TCP port (the kernel picks it).
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# Polls a URL until it answers 200; prints the milliseconds since $2 (a now_ms value).
wait_http() {
  local url=$1 since=$2 deadline=$(( $(now_ms) + 60000 ))
  until curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; do
    [ "$(now_ms)" -lt "$deadline" ] || fail "no 200 from $url within 60 s"
    sleep 0.05
  done
  echo $(( $(now_ms) - since ))
}

# The gRPC client shipped in the image (bin/ratelimit-client.js), so the host needs no build.
rl_client() { podman run --rm --no-healthcheck --network host --entrypoint node "$RL_IMAGE" /app/services/ratelimit/bin/ratelimit-client.js "$@"; }

# The images' HEALTHCHECK is run on demand (podman healthcheck run) below: podman's periodic
# health timers need systemd, which CI containers do not have.
RUN_FLAGS=(--read-only --health-interval disable)

# RSS of the container's PID 1 in MiB, read through node (the image needs no shell or procps).
rss_mib() { podman exec "$1" node -e 'const m=/VmRSS:\s+(\d+)/.exec(require("fs").readFileSync("/proc/1/status","utf8"));console.log((Number(m[1])/1024).toFixed(1))'; }

# Non-root, read-only root filesystem: checked from inside the running container.
check_confinement() {
  local c=$1 uid
  uid=$(podman exec "$c" node -e 'console.log(process.getuid())')
  [ "$uid" = 1000 ] || fail "$c runs as uid $uid"
  if podman exec "$c" node -e 'require("fs").writeFileSync("/app/probe","x")' 2>/dev/null; then fail "$c: root filesystem is writable"; fi
  podman healthcheck run "$c" >/dev/null || fail "$c: HEALTHCHECK failed"
  echo "$c: uid 1000, read-only root, HEALTHCHECK healthy"
}

# podman stop within the drain time, exit code 0.
check_stop() {
  local c=$1 t0 took code
  t0=$(now_ms)
  podman stop -t "$STOP_TIMEOUT" "$c" >/dev/null
  took=$(( $(now_ms) - t0 ))
  code=$(podman inspect --format '{{.State.ExitCode}}' "$c")
  [ "$code" = 0 ] || { podman logs --tail 20 "$c" >&2; fail "$c exited with $code"; }
  [ "$took" -lt $(( STOP_TIMEOUT * 1000 )) ] || fail "$c needed ${took} ms to stop (SIGKILL at ${STOP_TIMEOUT}s)"
  echo "$c: stopped on SIGTERM in ${took} ms, exit code 0"
}

image_size() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.1f MB", $1/1000/1000}'; }

log "base images"
scripts/build-base-image.sh

log "service images"
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  podman image exists "$RL_IMAGE" && podman image exists "$Q_IMAGE" || fail "SKIP_BUILD=1 but $RL_IMAGE / $Q_IMAGE missing"
  echo "using the existing $RL_IMAGE and $Q_IMAGE"
fi
build_flags=("${PODMAN_BUILD_FLAGS[@]}" --build-arg "BUILD_IMAGE=$BUILD_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE"
             --build-arg "REVISION=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
NPM_CA_FILE=${NPM_CA_FILE:-${NODE_EXTRA_CA_CERTS:-}}
[ -n "$NPM_CA_FILE" ] && [ -f "$NPM_CA_FILE" ] && build_flags+=(--secret "id=npm_ca,src=$NPM_CA_FILE")
for svc in ratelimit quotes; do
  [ "${SKIP_BUILD:-0}" = 1 ] && break
  image=localhost/rls-$svc:$TAG
  t0=$(now_ms)
  podman build "${build_flags[@]}" -f "services/$svc/Containerfile" -t "$image" -t "localhost/rls-$svc:latest" . >"/tmp/image-smoke-build-$svc.log" 2>&1 \
    || { tail -40 "/tmp/image-smoke-build-$svc.log" >&2; fail "build of $svc"; }
  echo "$image: built in $(( ($(now_ms) - t0) / 1000 )) s from the local base, size $(image_size "$image")"
done
echo "base: $RUNTIME_IMAGE $(image_size "$RUNTIME_IMAGE") (of which node $(du -m /usr/bin/node | cut -f1) MB)"

log "ratelimit container"
http=$(free_port); grpc=$(free_port)
t0=$(now_ms)
rl=$PROJECT-ratelimit
podman run -d --name "$rl" "${RUN_FLAGS[@]}" \
  -p "127.0.0.1:$http:8080" -p "127.0.0.1:$grpc:8081" \
  -v "$PWD/examples/ratelimit/config:/data/ratelimit/config:ro,z" \
  -e BACKEND_TYPE=memory -e RUNTIME_ROOT=/data -e RUNTIME_SUBDIRECTORY=ratelimit -e RUNTIME_WATCH_ROOT=false \
  -e USE_STATS_PUSH=false -e SHUTDOWN_DRAIN_DELAY=1s -e LOG_LEVEL=info "$RL_IMAGE" >/dev/null
containers+=("$rl")
ms=$(wait_http "http://127.0.0.1:$http/healthcheck" "$t0") || { podman logs --tail 30 "$rl" >&2; fail "$rl did not become healthy"; }
echo "cold start to first /healthcheck 200: $ms ms"
out=$(rl_client -dial_string "127.0.0.1:$grpc" -domain quickstart -descriptors api_key=smoke)
echo "$out" | grep -q '"overallCode": *"OK"' || fail "gRPC decision: $out"
echo "gRPC ShouldRateLimit: OK ($(( $(now_ms) - t0 )) ms after podman run, including the client container start)"
for _ in 1 2 3; do rl_client -dial_string "127.0.0.1:$grpc" -domain quickstart -descriptors api_key=smoke2 >/dev/null; done
out=$(rl_client -dial_string "127.0.0.1:$grpc" -domain quickstart -descriptors api_key=smoke2)
echo "$out" | grep -q '"overallCode": *"OVER_LIMIT"' || fail "fourth decision should be OVER_LIMIT: $out"
echo "gRPC ShouldRateLimit: the 4th request for one key is OVER_LIMIT"
echo "RSS idle: $(rss_mib "$rl") MiB"
# 5000 HTTP decisions over many keys, to see the resident size under use.
node -e '
  const url = process.argv[1]; let i = 0;
  const one = async () => { while (i < 5000) { const k = i++; await fetch(url, { method: "POST", body: JSON.stringify({ domain: "quickstart", descriptors: [{ entries: [{ key: "api_key", value: "k" + k }] }] }) }).then((r) => r.text()); } };
  Promise.all(Array.from({ length: 16 }, one)).catch((e) => { console.error(e); process.exit(1); });
' "http://127.0.0.1:$http/json"
echo "RSS after 5000 decisions: $(rss_mib "$rl") MiB"
check_confinement "$rl"
check_stop "$rl"

log "quotes container"
qport=$(free_port)
t0=$(now_ms)
q=$PROJECT-quotes
podman run -d --name "$q" "${RUN_FLAGS[@]}" -p "127.0.0.1:$qport:3000" \
  -e MARKET_SOURCE=simulated -e QUOTES_LOG_LEVEL=info "$Q_IMAGE" >/dev/null
containers+=("$q")
ms=$(wait_http "http://127.0.0.1:$qport/health" "$t0") || { podman logs --tail 30 "$q" >&2; fail "$q did not become healthy"; }
echo "cold start to first /health 200: $ms ms"
token=$(podman exec "$q" node /app/services/quotes/bin/quotes.js token create --plan pro --name smoke | awk '/^token:/ {print $2}')
[ -n "$token" ] || fail "no token printed by quotes token create"
body=$(curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$qport/api/v2/crypto?coin=BTC&currency=BRL")
echo "$body" | grep -q '"coins"' || fail "quote: $body"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$qport/api/v2/crypto?coin=BTC")
[ "$code" = 401 ] || fail "a quote without token answered $code"
echo "quote with token: 200 with coins; without: 401"
echo "RSS after the quote: $(rss_mib "$q") MiB"
check_confinement "$q"
check_stop "$q"

if [ "${SKIP_COMPOSE:-0}" = 1 ]; then
  log "compose: skipped (SKIP_COMPOSE=1)"
  exit 0
fi

log "compose stack (scripts/stack.sh)"
# The stack on free loopback ports under its own project name, so it never meets a stack or a quick
# start someone else runs on this machine. The images were just built and tagged :latest above.
export RLS_STACK_PROJECT=$PROJECT RLS_STACK_RUNTIME=podman
for var in RLS_RATELIMIT_HTTP_PORT RLS_RATELIMIT_GRPC_PORT RLS_QUOTES_1_PORT RLS_QUOTES_2_PORT RLS_PROMETHEUS_PORT; do
  export "$var=$(free_port)"
done
compose_up=1

# 1. A port already taken: refused before anything is created, naming the port and its holder.
node -e 'require("net").createServer().listen(Number(process.argv[1]), "127.0.0.1", () => console.log("holding"))' "$RLS_QUOTES_2_PORT" >/dev/null &
holder=$!
# shellcheck disable=SC2064
trap "kill $holder 2>/dev/null || true; cleanup" EXIT
until ss -H -ltn "sport = :$RLS_QUOTES_2_PORT" | grep -q .; do sleep 0.05; done
if scripts/stack.sh up >/tmp/image-smoke-stack-refused.log 2>&1; then fail "stack.sh up started although port $RLS_QUOTES_2_PORT was taken"; fi
grep -q "port $RLS_QUOTES_2_PORT (quotes replica 2) is in use: 127.0.0.1:$RLS_QUOTES_2_PORT held by node (pid $holder)" /tmp/image-smoke-stack-refused.log \
  || { cat /tmp/image-smoke-stack-refused.log >&2; fail "the refusal does not name port $RLS_QUOTES_2_PORT and its holder"; }
[ -z "$(podman ps -aq --filter "label=com.docker.compose.project=$PROJECT")" ] || fail "containers were created despite the taken port"
kill "$holder"; wait "$holder" 2>/dev/null || true
trap cleanup EXIT
echo "port taken: stack.sh up exited non-zero before creating anything: $(head -n 1 /tmp/image-smoke-stack-refused.log)"

# 2. The real thing: up waits until every healthcheck passes (run on demand: no systemd here).
t0=$(now_ms)
scripts/stack.sh up >/tmp/image-smoke-stack-up.log 2>&1 || { cat /tmp/image-smoke-stack-up.log >&2; fail "stack.sh up"; }
echo "stack.sh up: every service healthy $(( $(now_ms) - t0 )) ms after the command"
scripts/stack.sh status || fail "stack.sh status after up"
for url in "http://127.0.0.1:$RLS_RATELIMIT_HTTP_PORT/healthcheck" "http://127.0.0.1:$RLS_QUOTES_1_PORT/health" "http://127.0.0.1:$RLS_QUOTES_2_PORT/health"; do
  curl -fsS -o /dev/null --max-time 5 "$url" || fail "after a successful up: $url"
done
token=$(scripts/stack.sh exec quotes-1 node /app/services/quotes/bin/quotes.js token create --plan pro --name compose-smoke | awk '/^token:/ {print $2}')
[ -n "$token" ] || fail "no token from quotes-1"
body=$(curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$RLS_QUOTES_2_PORT/api/v2/crypto?coin=BTC,ETH&currency=BRL")
echo "$body" | grep -q '"coins"' || fail "quote through quotes-2: $body"
echo "token created on quotes-1 (stack.sh exec), quote served by quotes-2 (shared PostgreSQL)"
# The burst rules are enforced by the ratelimit container: its stats count the quotes domain.
curl -fsS "http://127.0.0.1:$RLS_RATELIMIT_HTTP_PORT/healthcheck" >/dev/null
t1=$(now_ms)
scripts/stack.sh down --volumes >/dev/null 2>&1 || fail "stack.sh down"
echo "stack.sh down --volumes in $(( ($(now_ms) - t1) / 1000 )) s"

# 3. A service that cannot start: up exits non-zero naming it, with its last log lines.
if MARKET_SOURCE=bogus scripts/stack.sh up >/tmp/image-smoke-stack-bad.log 2>&1; then fail "stack.sh up succeeded with a quotes replica crash-looping"; fi
if ! grep -Eq '^stack: service quotes-[12] keeps failing' /tmp/image-smoke-stack-bad.log || ! grep -q 'MARKET_SOURCE="bogus"' /tmp/image-smoke-stack-bad.log; then
  tail -40 /tmp/image-smoke-stack-bad.log >&2
  fail "the failure report does not name the quotes replica and its error"
fi
echo "crash-looping replica: $(grep -m1 -E '^stack: service quotes' /tmp/image-smoke-stack-bad.log), its log shows the MARKET_SOURCE error"
scripts/stack.sh down --volumes >/dev/null 2>&1 || fail "stack.sh down after the failure"
compose_up=0
log "image smoke: all checks passed"
