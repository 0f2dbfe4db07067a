#!/bin/sh
# The oci provider's parts on this host (Podman):
#   scripts/oci.sh service [SOCKET]   starts Podman's Docker-compatible API service on SOCKET
#                                     (default /run/warren-oci/podman.sock); prints "SOCKET PID"
#   scripts/oci.sh stop-service PID   ends that service
#   scripts/oci.sh image [NAME]       builds the boxes' image NAME (default warren-box:latest)
#
# No registry is needed: the image is imported from a root built here. That root is a
# skeleton (the mount points of a box and Debian's usrmerge links); a box's system folders
# (/usr and the rest) are this Debian host's, bound read-only by the provider as a local
# box binds them, so a box sees the same packages on both providers.
set -eu

cmd=${1:-}
case "$cmd" in
service)
  sock=${2:-/run/warren-oci/podman.sock}
  mkdir -p "$(dirname "$sock")"
  rm -f "$sock"
  podman system service --time=0 "unix://$sock" >/dev/null 2>&1 &
  pid=$!
  i=0
  until curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "podman system service did not answer on $sock" >&2
      exit 1
    fi
    sleep 0.05
  done
  echo "$sock $pid"
  ;;
stop-service)
  kill "${2:?the service pid}"
  ;;
image)
  name=${2:-warren-box:latest}
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  for d in usr etc proc dev sys tmp home data agent run/warren/cg run/boxd run/calls opt/warren/contracts opt/warren/bin opt/warren/harness; do
    mkdir -p "$root/$d"
  done
  chmod 0711 "$root/run/warren" "$root/run/warren/cg"
  chmod 1777 "$root/tmp"
  for l in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$l" ]; then
      ln -s "$(readlink "/$l")" "$root/$l"
    elif [ -d "/$l" ]; then
      mkdir -p "$root/$l"
    fi
  done
  tar -C "$root" -cf - . | podman import --change 'LABEL warren.image=box' - "$name" >/dev/null
  # the image this name had before, now untagged, unless a container still uses it
  podman image prune -f --filter label=warren.image=box >/dev/null 2>&1 || true
  echo "$name"
  ;;
*)
  echo "usage: scripts/oci.sh service [SOCKET] | stop-service PID | image [NAME]" >&2
  exit 2
  ;;
esac
