#!/usr/bin/env bash
# Builds the two local base images the Containerfiles default to when no registry is reachable:
#
#   localhost/rls-node20-base:bookworm   runtime: a minimal Debian bookworm root filesystem
#                                         (debootstrap --variant=minbase) + the `node` binary, user node (1000)
#   localhost/rls-node20-build:bookworm  build:   the runtime base + npm, Node's C headers, g++, make,
#                                         python3 (native modules such as better-sqlite3 compile here)
#
# Why the Node binary is copied from this machine: Debian bookworm's own `nodejs` package is 18.x and
# the services need Node 20 (>= 20.19, package.json `engines`); NodeSource and the official Node images are not reachable here,
# only the Debian mirror and the npm registry are. So the root filesystem comes from Debian packages
# and the files of the Node 20 package installed on this host (`dpkg -L nodejs`, a NodeSource build
# for bookworm, linked only against bookworm's glibc/libstdc++) are copied in. With registry access,
# skip this script and build with the official images instead:
#   --build-arg BUILD_IMAGE=docker.io/library/node:20-bookworm \
#   --build-arg RUNTIME_IMAGE=docker.io/library/node:20-bookworm-slim
#
# Usage: sudo scripts/build-base-image.sh [--force]
# Env: DEBIAN_MIRROR (default: the first URI of /etc/apt/sources.list.d/debian.sources or
#      sources.list, else http://deb.debian.org/debian), NODE_PKG (default nodejs),
#      WORK_DIR (default /var/tmp/rls-base-image).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=deploy/podman/podman-env.sh
. deploy/podman/podman-env.sh

BASE_IMAGE=${BASE_IMAGE:-localhost/rls-node20-base:bookworm}
BUILD_IMAGE=${BUILD_IMAGE:-localhost/rls-node20-build:bookworm}
NODE_PKG=${NODE_PKG:-nodejs}
WORK_DIR=${WORK_DIR:-/var/tmp/rls-base-image}
force=${1:-}

if [ "$force" != "--force" ] && podman image exists "$BASE_IMAGE" && podman image exists "$BUILD_IMAGE"; then
  echo "base images present: $BASE_IMAGE $BUILD_IMAGE (use --force to rebuild)"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "debootstrap and rootful podman need root" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "debootstrap missing: apt-get install -y debootstrap" >&2; exit 1; }

node_version=$(node -p 'process.versions.node')
# package.json's engines.node (^20.19.0): what every locked dependency accepts.
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a === 20 && b >= 19 ? 0 : 1)' \
  || { echo "host node is $node_version; a Node 20 package >= 20.19 is needed (package.json engines)" >&2; exit 1; }
dpkg -s "$NODE_PKG" >/dev/null 2>&1 || { echo "package $NODE_PKG is not installed on this host" >&2; exit 1; }

# The mirror this machine already uses (deb822 first, then the one-line format).
if [ -z "${DEBIAN_MIRROR:-}" ]; then
  DEBIAN_MIRROR=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$DEBIAN_MIRROR" ] || DEBIAN_MIRROR=$(awk '$1=="deb" && $3=="bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$DEBIAN_MIRROR" ] || DEBIAN_MIRROR=http://deb.debian.org/debian
fi
echo "mirror: $DEBIAN_MIRROR   node: $node_version ($NODE_PKG $(dpkg-query -W -f '${Version}' "$NODE_PKG"))"

started=$(date +%s)
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR"
root="$WORK_DIR/rootfs"

# minbase = Essential packages + apt; ca-certificates for TLS to exchanges; libstdc++6 is what node links.
debootstrap --variant=minbase --include=ca-certificates,libstdc++6 bookworm "$root" "$DEBIAN_MIRROR"

# Unprivileged user with the same uid/gid as the official node images, so manifests can say 1000.
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /usr/sbin/nologin --home-dir /home/node --create-home node

# Trim what a container never reads: documentation, man pages, locales, apt caches.
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
       "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/log/*
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} +
# Keep apt pointed at the same mirror for the build image's package installs.
echo "deb $DEBIAN_MIRROR bookworm main" > "$root/etc/apt/sources.list"

# Runtime: the node binary only (no npm, no headers).
install -m 0755 "$(dpkg -L "$NODE_PKG" | grep -x '/usr/bin/node')" "$root/usr/bin/node"
chroot "$root" /usr/bin/node -e 'if (process.versions.node.split(".")[0] !== "20") process.exit(1)'

tar -C "$root" --numeric-owner -cf "$WORK_DIR/rootfs.tar" .
podman import \
  --change 'ENV NODE_ENV=production' \
  --change 'CMD ["node"]' \
  --message "debootstrap bookworm minbase + node $node_version" \
  "$WORK_DIR/rootfs.tar" "$BASE_IMAGE"

# Build: + npm, npx, corepack, Node's headers for node-gyp, and a C++ toolchain. npm is taken as
# installed on this host (it may be newer than the one the nodejs package shipped: the lock file
# is written by it), so these paths are copied as they are rather than from `dpkg -L`.
mkdir -p "$WORK_DIR/node-pkg"
for f in /usr/bin/npm /usr/bin/npx /usr/bin/corepack /usr/include/node \
         /usr/lib/node_modules/npm /usr/lib/node_modules/corepack; do
  [ -e "$f" ] || continue
  mkdir -p "$WORK_DIR/node-pkg$(dirname "$f")"
  cp -a "$f" "$WORK_DIR/node-pkg$f"
done
cat > "$WORK_DIR/Containerfile.build" <<EOF
FROM $BASE_IMAGE
RUN apt-get update && apt-get install -y --no-install-recommends g++ make python3 \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
COPY node-pkg/ /
# node-gyp compiles against these headers instead of downloading them from nodejs.org.
ENV npm_config_nodedir=/usr NODE_ENV=development
EOF
podman build "${PODMAN_BUILD_FLAGS[@]}" -f "$WORK_DIR/Containerfile.build" -t "$BUILD_IMAGE" "$WORK_DIR"

rm -rf "$root" "$WORK_DIR/node-pkg" "$WORK_DIR/rootfs.tar"
echo "built $BASE_IMAGE and $BUILD_IMAGE in $(( $(date +%s) - started ))s"
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'rls-node20-(base|build)'
