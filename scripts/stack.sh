#!/usr/bin/env bash
# The compose stack (deploy/compose.yaml: ratelimit on Redis, two quotes replicas on PostgreSQL,
# Prometheus) with one command that fails loudly. Works with podman (podman-compose) and docker
# (docker compose); containers are found by their compose labels, never by name (podman-compose
# names them rls-quotes_quotes-1_1, docker compose rls-quotes-quotes-1-1).
#
#   scripts/stack.sh up [--build]   check the host ports are free, build missing images (all, with
#                                   --build), start, wait until every service is healthy
#   scripts/stack.sh status         run every service's healthcheck now and print the states
#   scripts/stack.sh down [--volumes]
#   scripts/stack.sh build          (re)build the five images
#   scripts/stack.sh logs SERVICE [LINES]
#   scripts/stack.sh exec SERVICE COMMAND...
#
# Exit status: 0 done (up: every service healthy), 1 a failure (the message names the port, image or
# service, with the service's last log lines), 2 usage.
#
# Why the waiting is done here: podman runs a container's healthcheck from a systemd timer, and
# without systemd (CI and most containers) a service stays "starting" forever; `podman healthcheck
# run` runs it on demand and records the result, so `up` and `status` call it (docker's engine runs
# the checks itself, and then they are only read). podman-compose 1.0 ignores depends_on conditions
# and `up -d` exits 0 even when a container could not start (a port taken, say).
#
# Environment:
#   RLS_STACK_RUNTIME    podman | docker (default: podman if installed, else docker if its engine answers)
#   RLS_STACK_PROJECT    compose project name (default rls-quotes)
#   RLS_STACK_WAIT       seconds `up` waits for every service to be healthy (default 240)
#   RLS_STACK_LOG_LINES  log lines shown for a failed service (default 40)
#   RLS_STACK_MAX_RESTARTS  restarts after which `up` calls a service crash-looping (default 10)
#   RLS_STACK_BASE       local | registry: base images (default: the local ones of
#                        scripts/build-base-image.sh if present, else docker.io when reachable,
#                        else the local ones, built first with podman as root)
#   RLS_STACK_CA_FILE    CA bundle npm trusts during the image builds (default: NODE_EXTRA_CA_CERTS,
#                        npm's cafile, else /etc/ssl/certs/ca-certificates.crt), passed as a build
#                        secret, never stored in a layer: behind a TLS-intercepting proxy npm needs it
#   RLS_RATELIMIT_HTTP_PORT, RLS_RATELIMIT_GRPC_PORT, RLS_QUOTES_1_PORT, RLS_QUOTES_2_PORT,
#   RLS_PROMETHEUS_PORT  host ports (loopback) instead of 8080, 8081, 3001, 3002, 9091
#   MARKET_SOURCE, POSTGRES_PASSWORD   passed to compose.yaml
set -euo pipefail
cd "$(dirname "$0")/.."

PROJECT=${RLS_STACK_PROJECT:-rls-quotes}
COMPOSE_FILE=deploy/compose.yaml
WAIT_SECONDS=${RLS_STACK_WAIT:-240}
LOG_LINES=${RLS_STACK_LOG_LINES:-40}
MAX_RESTARTS=${RLS_STACK_MAX_RESTARTS:-10}
LABEL_PROJECT=com.docker.compose.project
LABEL_SERVICE=com.docker.compose.service

# Host ports: variable, default, what listens there.
PORTS=(
  "RLS_RATELIMIT_HTTP_PORT 8080 ratelimit HTTP"
  "RLS_RATELIMIT_GRPC_PORT 8081 ratelimit gRPC"
  "RLS_QUOTES_1_PORT 3001 quotes replica 1"
  "RLS_QUOTES_2_PORT 3002 quotes replica 2"
  "RLS_PROMETHEUS_PORT 9091 Prometheus"
)

# Images: image, Containerfile, build context, base argument (BUILD+RUNTIME for the services, DEBIAN for the rest).
IMAGES=(
  "localhost/rls-ratelimit:latest services/ratelimit/Containerfile . node"
  "localhost/rls-quotes:latest services/quotes/Containerfile . node"
  "localhost/rls-redis:latest deploy/compose/redis.Containerfile deploy/compose debian"
  "localhost/rls-postgres:latest deploy/compose/postgres.Containerfile deploy/compose debian"
  "localhost/rls-prometheus:latest deploy/compose/prometheus.Containerfile deploy/compose debian"
)
LOCAL_BUILD_IMAGE=localhost/rls-node20-build:bookworm
LOCAL_RUNTIME_IMAGE=localhost/rls-node20-base:bookworm

say() { printf 'stack: %s\n' "$*"; }
die() { printf 'stack: %s\n' "$*" >&2; exit 1; }
usage() {
  cat >&2 <<'EOF'
usage: scripts/stack.sh up [--build] | status | down [--volumes] | build | logs SERVICE [LINES] | exec SERVICE COMMAND...
  (the comment at the top of scripts/stack.sh lists the variables it reads)
EOF
  exit 2
}

# --- runtime -----------------------------------------------------------------------------------

RT=
COMPOSE=()
pick_runtime() {
  local want=${RLS_STACK_RUNTIME:-}
  if [ -z "$want" ]; then
    if command -v podman >/dev/null 2>&1; then want=podman
    elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then want=docker
    elif command -v docker >/dev/null 2>&1; then
      die "docker is installed but its engine does not answer ($(docker info 2>&1 | grep -m1 -i error || echo 'docker info failed')); install podman and podman-compose, or start the docker engine"
    else die "no container runtime: install podman and podman-compose (apt-get install -y podman podman-compose), or docker with the compose plugin"
    fi
  fi
  case "$want" in
    podman)
      command -v podman >/dev/null 2>&1 || die "RLS_STACK_RUNTIME=podman but podman is not installed"
      command -v podman-compose >/dev/null 2>&1 || die "podman-compose is missing (apt-get install -y podman-compose)"
      # runc and explicit ulimits (see deploy/podman/containers.conf); exported for podman-compose's podman calls.
      # shellcheck source=deploy/podman/podman-env.sh
      . deploy/podman/podman-env.sh
      RT=podman
      COMPOSE=(podman-compose -p "$PROJECT" -f "$COMPOSE_FILE")
      if [ "$(id -u)" != 0 ]; then
        say "note: rootless podman (uid $(id -u)): images built by root are not visible here; run the stack as root (sudo scripts/stack.sh ...) if the build or start fails for that reason"
      fi
      ;;
    docker)
      command -v docker >/dev/null 2>&1 || die "RLS_STACK_RUNTIME=docker but docker is not installed"
      docker info >/dev/null 2>&1 || die "docker's engine does not answer ($(docker info 2>&1 | grep -m1 -i error || echo 'docker info failed')); as a user, are you in the docker group?"
      docker compose version >/dev/null 2>&1 || die "docker compose (the compose plugin) is missing"
      RT=docker
      COMPOSE=(docker compose -p "$PROJECT" -f "$COMPOSE_FILE")
      ;;
    *) die "RLS_STACK_RUNTIME must be podman or docker, not '$want'" ;;
  esac
}

# --- containers by label ---------------------------------------------------------------------------

project_containers() { "$RT" ps -a -q --filter "label=$LABEL_PROJECT=$PROJECT"; }

service_of() { "$RT" inspect --format "{{index .Config.Labels \"$LABEL_SERVICE\"}}" "$1"; }

# The container of one service (the first, if scaled).
container_of() {
  local id
  for id in $(project_containers); do
    if [ "$(service_of "$id")" = "$1" ]; then echo "$id"; return 0; fi
  done
  return 1
}

state_of() { "$RT" inspect --format '{{.State.Status}}' "$1"; }
restarts_of() { "$RT" inspect --format '{{.RestartCount}}' "$1" 2>/dev/null || echo 0; }

# healthy | unhealthy[: why] | starting | none (no healthcheck). podman: runs the check now (and
# records it, so `podman ps` shows it too); docker: reads what the engine's own checks found.
health_of() {
  local id=$1 out
  if [ "$RT" = podman ]; then
    [ "$("$RT" inspect --format '{{if .Config.Healthcheck}}yes{{end}}' "$id" 2>/dev/null)" = yes ] || { echo none; return; }
    if out=$(podman healthcheck run "$id" 2>&1); then echo healthy
    elif [ -z "$out" ] || [ "$out" = unhealthy ]; then echo unhealthy
    else echo "unhealthy: $(head -n 1 <<<"$out")"
    fi
  else
    "$RT" inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$id"
  fi
}

show_logs() {
  local id=$1 svc=$2
  printf -- '--- last %s log lines of %s ---\n' "$LOG_LINES" "$svc" >&2
  "$RT" logs --tail "$LOG_LINES" "$id" >&2 2>&1 || true
  printf -- '--- end of %s ---\n' "$svc" >&2
}

# --- ports -----------------------------------------------------------------------------------------

# Prints what holds a TCP port (address, and the process when ss may tell), or fails if it is free.
port_holder() {
  local port=$1 line proc
  if command -v ss >/dev/null 2>&1; then
    line=$(ss -H -ltnp "sport = :$port" 2>/dev/null | head -n 1)
    [ -n "$line" ] || return 1
    proc=$(grep -o 'users:(([^)]*))' <<<"$line" | sed -E 's/users:\(\("([^"]*)",pid=([0-9]+).*/\1 (pid \2)/' || true)
    echo "$(awk '{print $4}' <<<"$line") held by ${proc:-a process ss does not show to uid $(id -u)}"
    return 0
  fi
  # Without ss: something accepts connections there.
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "127.0.0.1:$port accepts connections"; return 0; fi
  return 1
}

check_ports() {
  local entry var def what port holder bad=0
  for entry in "${PORTS[@]}"; do
    read -r var def what <<<"$entry"
    port=${!var:-$def}
    if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then die "$var=$port is not a port number"; fi
    if holder=$(port_holder "$port"); then
      printf 'stack: port %s (%s) is in use: %s. Stop it, or move the stack: %s=<free port> scripts/stack.sh up\n' "$port" "$what" "$holder" "$var" >&2
      bad=1
    fi
  done
  [ "$bad" = 0 ] || exit 1
}

# --- images ----------------------------------------------------------------------------------------

registry_reachable() {
  if command -v curl >/dev/null 2>&1; then
    # The registry answers 401 (token needed) when reachable.
    case "$(curl -s -o /dev/null -m 5 -w '%{http_code}' https://registry-1.docker.io/v2/ 2>/dev/null)" in
      200 | 401) return 0 ;;
      *) return 1 ;;
    esac
  fi
  timeout 20 "$RT" manifest inspect docker.io/library/debian:bookworm-slim >/dev/null 2>&1
}

image_exists() { "$RT" image inspect "$1" >/dev/null 2>&1; }

BUILD_IMAGE='' RUNTIME_IMAGE='' DEBIAN_IMAGE=''
choose_bases() {
  local base=${RLS_STACK_BASE:-}
  if [ -z "$base" ]; then
    if image_exists "$LOCAL_RUNTIME_IMAGE" && image_exists "$LOCAL_BUILD_IMAGE"; then base=local
    elif registry_reachable; then base=registry
    else base=local
    fi
  fi
  case "$base" in
    local)
      if ! { image_exists "$LOCAL_RUNTIME_IMAGE" && image_exists "$LOCAL_BUILD_IMAGE"; }; then
        if [ "$RT" != podman ] || [ "$(id -u)" != 0 ]; then
          die "no registry reachable and no local base images: run sudo scripts/build-base-image.sh (root, podman, debootstrap), or make docker.io reachable"
        fi
        say "no registry reachable: building the local Debian base images (scripts/build-base-image.sh)"
        scripts/build-base-image.sh || die "scripts/build-base-image.sh failed"
      fi
      BUILD_IMAGE=$LOCAL_BUILD_IMAGE RUNTIME_IMAGE=$LOCAL_RUNTIME_IMAGE DEBIAN_IMAGE=$LOCAL_RUNTIME_IMAGE
      ;;
    registry)
      BUILD_IMAGE=docker.io/library/node:20-bookworm RUNTIME_IMAGE=docker.io/library/node:20-bookworm-slim DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim
      ;;
    *) die "RLS_STACK_BASE must be local or registry, not '$base'" ;;
  esac
  say "base images: $RUNTIME_IMAGE (runtime), $BUILD_IMAGE (build), $DEBIAN_IMAGE (Redis, PostgreSQL, Prometheus)"
}

ca_file() {
  local f=${RLS_STACK_CA_FILE:-${NODE_EXTRA_CA_CERTS:-}}
  if [ -z "$f" ] && command -v npm >/dev/null 2>&1; then
    f=$(npm config get cafile 2>/dev/null || true)
    [ "$f" != null ] && [ "$f" != undefined ] || f=
  fi
  [ -n "$f" ] || f=/etc/ssl/certs/ca-certificates.crt
  [ -f "$f" ] && echo "$f"
}

build_images() {
  local force=$1 entry image file context kind log flags ca
  local logdir=${TMPDIR:-/tmp}
  choose_bases
  ca=$(ca_file || true)
  [ -n "$ca" ] && say "npm in the builds trusts $ca too (build secret npm_ca)"
  for entry in "${IMAGES[@]}"; do
    read -r image file context kind <<<"$entry"
    if [ "$force" = 0 ] && image_exists "$image"; then continue; fi
    flags=()
    [ "$RT" = podman ] && flags+=("${PODMAN_BUILD_FLAGS[@]}")
    if [ "$kind" = node ]; then
      flags+=(--build-arg "BUILD_IMAGE=$BUILD_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE"
              --build-arg "REVISION=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
      [ -n "$ca" ] && flags+=(--secret "id=npm_ca,src=$ca")
    else
      flags+=(--build-arg "BASE_IMAGE=$DEBIAN_IMAGE")
    fi
    log="$logdir/rls-stack-$PROJECT-build-$(basename "${image%%:*}").log"
    say "building $image (log: $log)"
    if ! "$RT" build "${flags[@]}" -f "$file" -t "$image" "$context" >"$log" 2>&1; then
      tail -n "$LOG_LINES" "$log" >&2
      if grep -qE 'SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT|unable to get local issuer certificate' "$log"; then
        echo "stack: npm could not verify a TLS certificate: behind a TLS-intercepting proxy, set RLS_STACK_CA_FILE to its CA bundle" >&2
      fi
      die "building $image failed (full log: $log)"
    fi
  done
}

# --- commands --------------------------------------------------------------------------------------

# Waits until every container of the project is healthy (or running, without a healthcheck); fails
# at once for a container that cannot start or keeps restarting, else at the deadline.
wait_healthy() {
  local deadline=$(( $(date +%s) + WAIT_SECONDS )) started
  started=$(date +%s)
  declare -A exited_polls=()
  while :; do
    local ids pending=() failed=() id svc state health restarts
    ids=$(project_containers)
    [ -n "$ids" ] || die "compose created no containers for project $PROJECT"
    for id in $ids; do
      svc=$(service_of "$id")
      state=$(state_of "$id")
      restarts=$(restarts_of "$id")
      case "$state" in
        running)
          health=$(health_of "$id")
          case "$health" in
            healthy | none) ;;
            *) pending+=("$svc $health") ;;
          esac
          ;;
        created | configured)
          # compose has returned: a container still only created could not be started (a port taken,
          # a missing dependency); it will not start by itself.
          failed+=("$svc|was created but did not start") ;;
        exited | stopped | dead)
          exited_polls[$svc]=$(( ${exited_polls[$svc]:-0} + 1 ))
          # restart: on-failure brings a replica back (PostgreSQL initialising on the first up); a
          # container that stays down for three polls is not coming back.
          if [ "${exited_polls[$svc]}" -ge 3 ]; then
            failed+=("$svc|exited with status $("$RT" inspect --format '{{.State.ExitCode}}' "$id") and was not restarted")
          else pending+=("$svc exited (may restart)"); fi
          ;;
        *) pending+=("$svc $state") ;;
      esac
      # podman restarts an on-failure container at once, docker with a growing delay: either way a
      # service that went down this often is crash-looping, not waiting for PostgreSQL's first start.
      if [ "${restarts:-0}" -ge "$MAX_RESTARTS" ]; then failed+=("$svc|keeps failing: restarted $restarts times"); fi
    done
    if [ ${#failed[@]} -gt 0 ]; then
      local f seen=""
      for f in "${failed[@]}"; do
        svc=${f%%|*}
        [[ " $seen " == *" $svc "* ]] && continue
        seen="$seen $svc"
        echo "stack: service $svc ${f#*|}" >&2
        show_logs "$(container_of "$svc")" "$svc"
      done
      die "up failed: ${seen# } (scripts/stack.sh down to clean up)"
    fi
    if [ ${#pending[@]} -eq 0 ]; then
      say "every service is healthy ($(( $(date +%s) - started )) s)"
      return 0
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      local p
      for p in "${pending[@]}"; do
        svc=${p%% *}
        echo "stack: service $svc is not healthy after ${WAIT_SECONDS} s: ${p#* }" >&2
        show_logs "$(container_of "$svc")" "$svc"
      done
      die "up failed: not healthy within RLS_STACK_WAIT=${WAIT_SECONDS} s (scripts/stack.sh down to clean up)"
    fi
    sleep 2
  done
}

cmd_up() {
  local build=0
  for a in "$@"; do
    case "$a" in --build) build=1 ;; *) usage ;; esac
  done
  pick_runtime
  if [ -n "$(project_containers)" ]; then
    local id all_running=1
    for id in $(project_containers); do [ "$(state_of "$id")" = running ] || all_running=0; done
    if [ "$all_running" = 0 ]; then
      cmd_status >&2 || true
      die "a stack named $PROJECT exists but not every container runs: scripts/stack.sh down first"
    fi
    say "stack $PROJECT is already running; checking its health"
    wait_healthy
    return
  fi
  check_ports
  build_images "$build"
  say "starting $PROJECT with $RT"
  local log=${TMPDIR:-/tmp}/rls-stack-$PROJECT-up.log
  if ! BUILD_IMAGE=$BUILD_IMAGE RUNTIME_IMAGE=$RUNTIME_IMAGE DEBIAN_IMAGE=$DEBIAN_IMAGE "${COMPOSE[@]}" up -d --no-build >"$log" 2>&1; then
    tail -n "$LOG_LINES" "$log" >&2
    # docker compose stops at an unhealthy dependency; the per-service report below names it.
    echo "stack: compose up failed (log: $log)" >&2
  fi
  wait_healthy
  local entry var def what
  for entry in "${PORTS[@]}"; do
    read -r var def what <<<"$entry"
    say "  $what: 127.0.0.1:${!var:-$def}"
  done
}

cmd_status() {
  [ -n "$RT" ] || pick_runtime
  local ids id bad=0 svc state health
  ids=$(project_containers)
  if [ -z "$ids" ]; then say "stack $PROJECT is not running"; return 1; fi
  printf '%-12s %-10s %s\n' SERVICE STATE HEALTH
  for id in $ids; do
    svc=$(service_of "$id")
    state=$(state_of "$id")
    health=-
    if [ "$state" = running ]; then health=$(health_of "$id"); fi
    printf '%-12s %-10s %s\n' "$svc" "$state" "$health"
    case "$state/$health" in running/healthy | running/none) ;; *) bad=1 ;; esac
  done
  return "$bad"
}

cmd_down() {
  local volumes=0
  for a in "$@"; do
    case "$a" in --volumes | -v) volumes=1 ;; *) usage ;; esac
  done
  pick_runtime
  # compose's own output (and podman's "unable to get systemd connection" noise without systemd)
  # goes to a log shown only when something is left behind.
  local log=${TMPDIR:-/tmp}/rls-stack-$PROJECT-down.log
  if [ "$volumes" = 1 ]; then
    "${COMPOSE[@]}" down -v >"$log" 2>&1 || true
    # podman-compose 1.0 leaves the named volumes behind.
    if [ "$RT" = podman ]; then podman volume rm -f "${PROJECT}_pgdata" "${PROJECT}_prometheus-data" >>"$log" 2>&1 || true; fi
  else
    "${COMPOSE[@]}" down >"$log" 2>&1 || true
  fi
  if [ -n "$(project_containers)" ]; then tail -n "$LOG_LINES" "$log" >&2; fi
  [ -z "$(project_containers)" ] || die "containers of $PROJECT are still there: $("$RT" ps -a --filter "label=$LABEL_PROJECT=$PROJECT" --format '{{.Names}}' | tr '\n' ' ')"
  say "stack $PROJECT is down"
}

cmd_logs() {
  [ $# -ge 1 ] || usage
  pick_runtime
  local id
  id=$(container_of "$1") || die "no container for service $1 in $PROJECT"
  "$RT" logs --tail "${2:-$LOG_LINES}" "$id"
}

cmd_exec() {
  [ $# -ge 2 ] || usage
  pick_runtime
  local id svc=$1
  shift
  id=$(container_of "$svc") || die "no container for service $svc in $PROJECT"
  "$RT" exec -i "$id" "$@"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  status) shift; [ $# -eq 0 ] || usage; pick_runtime; cmd_status ;;
  down) shift; cmd_down "$@" ;;
  build) shift; [ $# -eq 0 ] || usage; pick_runtime; build_images 1 ;;
  logs) shift; cmd_logs "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  *) usage ;;
esac
