#!/bin/bash
# `make image`: warren's server image, built with Podman (Buildah) from this checkout.
#   scripts/image.sh [NAME]     builds NAME (default warren:latest); prints NAME
#
# No registry is needed: the base is a Debian root made here with debootstrap from Debian's
# mirror (WARREN_DEBIAN_MIRROR, default http://deb.debian.org/debian), imported once as the
# image warren-base:<suite>-<arch> and cached as a tarball in
# ${XDG_CACHE_HOME:-$HOME/.cache}/warren/, keyed by suite and arch, so a second build only
# lays the server on top. Node is the host's runtime (Debian 12's own is too old); on top:
# the built server (dist/, the app and boxd included), the migrations and the production
# node_modules. The harness CLIs are optional: WARREN_IMAGE_HARNESS=1 adds the folder
# scripts/harness.sh filled (WARREN_HARNESS_DIR). deploy/image/Containerfile says how it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-warren:latest}
suite=${WARREN_DEBIAN_SUITE:-bookworm}
arch=$(dpkg --print-architecture)
mirror=${WARREN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/warren
base=warren-base:$suite-$arch
tarball=$cache/debian-$suite-$arch.tar
# what the server runs on its host: git (conversations, forks), the boxes' tools
packages=ca-certificates,git,bubblewrap,procps,uidmap,iproute2,curl

if [ ! -f dist/cli/main.js ] || [ ! -x dist/native/boxd ]; then
  echo "image.sh: build first (make build: dist/ and dist/native/boxd)" >&2
  exit 1
fi
if ! podman image exists "$base"; then
  if [ ! -f "$tarball" ]; then
    command -v debootstrap >/dev/null || {
      echo "image.sh: debootstrap is missing (scripts/setup.sh installs it)" >&2
      exit 1
    }
    mkdir -p "$cache"
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    echo "image.sh: making a Debian $suite root with debootstrap (once; cached in $cache)" >&2
    debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >/dev/null
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf "$root"
    trap - EXIT
  fi
  podman import --change 'LABEL warren.image=base' "$tarball" "$base" >/dev/null
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/app" "$ctx/bin" "$ctx/harness"
cp "$(readlink -f "$(command -v node)")" "$ctx/bin/node"
cp -a dist drizzle package.json package-lock.json "$ctx/app/"
rm -f "$ctx/app/dist/native/"*-asan
# the production dependencies only, from this checkout's node_modules (no registry)
cp -a node_modules "$ctx/app/"
(cd "$ctx/app" && npm prune --omit=dev --offline --no-audit --no-fund >/dev/null 2>&1)
if [ "${WARREN_IMAGE_HARNESS:-0}" = 1 ]; then
  cp -a "${WARREN_HARNESS_DIR:-${STATE_ROOT:-.state}/harness}/." "$ctx/harness/"
fi
cp deploy/image/Containerfile deploy/image/entrypoint.sh "$ctx/"
# the OCI runtime that runs on this host (crun refuses hybrid cgroups; scripts/oci.sh picks)
runtime=$(scripts/oci.sh runtime 2>/dev/null || echo runc)
podman build --quiet --pull=never --runtime "$runtime" --build-arg BASE="$base" -t "$name" -f "$ctx/Containerfile" "$ctx" >/dev/null
echo "$name"
