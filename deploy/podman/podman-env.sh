# Sourced by the image scripts: podman with runc and explicit ulimits (see containers.conf beside
# this file). Exports CONTAINERS_CONF so podman-compose's podman calls get the same settings.
# shellcheck shell=bash
_podman_env_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CONTAINERS_CONF="${CONTAINERS_CONF:-$_podman_env_dir/containers.conf}"
# Also given per build: buildah's RUN steps do not read default_ulimits in podman 4.3.
PODMAN_BUILD_FLAGS=(--format docker --runtime runc --ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
# --format docker: OCI image config has no HEALTHCHECK field; the docker format keeps it.
export PODMAN_BUILD_FLAGS
