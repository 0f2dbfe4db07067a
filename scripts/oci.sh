#!/bin/sh
# The oci provider's parts on this host (Podman):
#   scripts/oci.sh service [SOCKET]   starts Podman's Docker-compatible API service on SOCKET
#                                     (default /run/warren-oci/podman.sock) with the runtime that
#                                     `runtime` picks; prints "SOCKET PID" (the runtime on stderr)
#   scripts/oci.sh stop-service PID   ends that service
#   scripts/oci.sh image [NAME]       builds the boxes' image NAME (default warren-box:latest)
#   scripts/oci.sh runtime            prints the OCI runtime boxes run with on this host
#
# The runtime: WARREN_OCI_RUNTIME (runc or crun), or, unset or empty, the first of Podman's
# default, runc and crun that runs a trivial container here, as a box runs (its own cgroup
# namespace, no network, capped rlimits, the host's /usr read-only). Podman's service takes
# its runtime when it starts (the Engine API's HostConfig.Runtime is not honoured by it), so
# the service is started with that runtime. crun refuses a host whose cgroups are hybrid (v1
# controllers beside a cgroup2 mount that holds controllers); runc runs there.
#
# No registry is needed: the image is imported from a root built here. That root is a
# skeleton (the mount points of a box and Debian's usrmerge links); a box's system folders
# (/usr and the rest) are this Debian host's, bound read-only by the provider as a local
# box binds them, so a box sees the same packages on both providers.
set -eu

# A box's root skeleton in $1: its mount points and the host's usrmerge links.
skeleton() {
  for d in usr etc proc dev sys tmp home data agent run/warren/cg run/boxd run/calls opt/warren/contracts opt/warren/bin opt/warren/harness opt/warren/flows workspace; do
    mkdir -p "$1/$d"
  done
  chmod 0711 "$1/run/warren" "$1/run/warren/cg"
  chmod 1777 "$1/tmp"
  for l in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$l" ]; then
      ln -s "$(readlink "/$l")" "$1/$l"
    elif [ -d "/$l" ]; then
      mkdir -p "$1/$l"
    fi
  done
}

# Runs /bin/true with runtime $1 on the skeleton $2 as a box would run; its error on stderr.
try_runtime() {
  set -- "$1" "$2" ""
  for d in usr bin sbin lib lib32 lib64 libx32; do
    if [ -d "/$d" ] && [ ! -L "/$d" ]; then set -- "$1" "$2" "$3 -v /$d:/$d:ro"; fi
  done
  # shellcheck disable=SC2086 # $3 is a list of -v options without spaces inside
  podman --runtime "$1" run --rm --network none --cgroupns private --read-only --cap-drop all \
    --security-opt no-new-privileges --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    --memory 64m --pids-limit 64 $3 --rootfs "$2" /bin/true
}

# Prints the runtime to use (see above); refuses with the reasons and the fix when none runs.
choose_runtime() {
  wanted=${WARREN_OCI_RUNTIME:-}
  case "$wanted" in
  "" | runc | crun) ;;
  *)
    echo "oci.sh: WARREN_OCI_RUNTIME must be runc, crun or empty (the first the host can run), not $wanted" >&2
    return 2
    ;;
  esac
  if [ -n "$wanted" ]; then
    candidates=$wanted
  else
    default=$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null || true)
    candidates=
    for r in $default runc crun; do
      case " $candidates " in *" $r "*) ;; *) candidates="$candidates $r" ;; esac
    done
  fi
  root=$(mktemp -d)
  skeleton "$root"
  chosen=
  for r in $candidates; do
    if err=$(try_runtime "$r" "$root" 2>&1); then
      chosen=$r
      break
    fi
    echo "oci.sh: $r cannot run a box here: $(printf '%s\n' "$err" | tail -n 1)" >&2
  done
  rm -rf "$root"
  if [ -z "$chosen" ]; then
    if [ -n "$wanted" ]; then
      echo "oci.sh: WARREN_OCI_RUNTIME=$wanted cannot run a box on this host; set it to the other runtime, or unset it to take the first that can (scripts/setup.sh installs runc and crun)" >&2
    else
      echo "oci.sh: no OCI runtime runs a box on this host (tried$candidates); install runc (scripts/setup.sh)" >&2
    fi
    return 1
  fi
  echo "$chosen"
}

cmd=${1:-}
case "$cmd" in
service)
  sock=${2:-/run/warren-oci/podman.sock}
  runtime=$(choose_runtime)
  mkdir -p "$(dirname "$sock")"
  rm -f "$sock"
  podman --runtime "$runtime" system service --time=0 "unix://$sock" >/dev/null 2>&1 &
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
  echo "oci.sh: Podman's service runs containers with $runtime" >&2
  echo "$sock $pid"
  ;;
stop-service)
  kill "${2:?the service pid}"
  ;;
runtime)
  choose_runtime
  ;;
image)
  name=${2:-warren-box:latest}
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  skeleton "$root"
  tar -C "$root" -cf - . | podman import --change 'LABEL warren.image=box' - "$name" >/dev/null
  # the image this name had before, now untagged, unless a container still uses it
  podman image prune -f --filter label=warren.image=box >/dev/null 2>&1 || true
  echo "$name"
  ;;
*)
  echo "usage: scripts/oci.sh service [SOCKET] | stop-service PID | image [NAME] | runtime" >&2
  exit 2
  ;;
esac
