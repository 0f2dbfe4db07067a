#!/usr/bin/env bash
# Installs what warren needs on a Debian machine: system packages (apt-get, as root; else
# prints the exact command) and the npm packages of the lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."

# bubblewrap: boxes; postgresql: the test suite's real server; gcc, libc6-dev, linux-libc-dev: the
# exec helper; procps, util-linux: ps and setsid in boxes; strace: a hostile test traces boxd;
# python3: box tests drive sockets with it; openssl, curl, git: the egress tests (a certificate,
# tools in the box); tmux: the `warren shell` test drives it under a real terminal; chromium: the
# browser tests of the app and the terminal page (playwright-core, no browser download); vim:
# the full-screen program of the terminal test; podman: the oci provider's engine (its Docker
# compatible service, scripts/oci.sh); runc, crun: its OCI runtimes (crun refuses a host whose
# cgroups are hybrid, v1 controllers beside a cgroup2 mount; runc runs there: WARREN_OCI_RUNTIME);
# python3-httpx, python3-pytest, python3-setuptools, python3-wheel: the Python SDK, its
# conformance suite and its wheel (sdk/python); debootstrap: the server image's Debian root
# (make image, scripts/image.sh)
pkgs=(bubblewrap postgresql gcc libc6-dev linux-libc-dev make util-linux procps iproute2 strace python3 openssl curl git tmux chromium vim podman runc crun python3-httpx python3-pytest python3-setuptools python3-wheel debootstrap)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages; run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if ((node_major < 20)); then
  echo "setup: warren needs Node.js 20 or newer (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
